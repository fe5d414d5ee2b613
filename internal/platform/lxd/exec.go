package lxd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
)

// execPost is the body of POST /1.0/instances/<name>/exec.
type execPost struct {
	Command      []string          `json:"command"`
	Environment  map[string]string `json:"environment"`
	WaitForWS    bool              `json:"wait-for-websocket"`
	Interactive  bool              `json:"interactive"`
	RecordOutput bool              `json:"record-output"`
	Cwd          string            `json:"cwd"`
}

// Exec runs argv in the container through LXD's exec API, under
// "isobench agent confine" (Docker's filter and capabilities; see the
// package doc).
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if len(argv) == 0 {
		return errors.New("lxd: empty command")
	}
	return in.exec(ctx, local.ConfinedArgv(argv), stdio)
}

// exec runs argv in the container through LXD's exec API, as LXD gives
// it (for isobench's own commands: the network setup, systemctl): one
// websocket each for stdin, stdout and stderr, and a control websocket
// that is used to kill the command (SIGKILL) when ctx is cancelled.
func (in *Instance) exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if in.isClosed() {
		return fmt.Errorf("lxd: instance %s is closed", in.id)
	}
	c := in.p.c
	r, err := c.raw(ctx, http.MethodPost, "/1.0/instances/"+in.id+"/exec", execPost{
		Command: argv, Environment: execEnv(), WaitForWS: true, Cwd: "/",
	}, nil)
	if err != nil {
		return fmt.Errorf("lxd exec: %w", err)
	}
	if r.Type != "async" || r.Operation == "" {
		return fmt.Errorf("lxd exec: expected an operation, got a %s answer", r.Type)
	}
	op := opPath(r.Operation)
	var md struct {
		Metadata struct {
			FDs map[string]string `json:"fds"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(r.Metadata, &md); err != nil {
		return fmt.Errorf("lxd exec: %w", err)
	}
	fds := md.Metadata.FDs
	conns := map[string]*wsConn{}
	closeAll := func() {
		for _, ws := range conns {
			ws.Close()
		}
	}
	for _, fd := range []string{"control", "0", "1", "2"} {
		secret, ok := fds[fd]
		if !ok {
			closeAll()
			return fmt.Errorf("lxd exec: the operation has no websocket %q", fd)
		}
		ws, err := c.websocket(ctx, op, secret)
		if err != nil {
			closeAll()
			return fmt.Errorf("lxd exec: %w", err)
		}
		conns[fd] = ws
	}
	defer closeAll()

	// stdin: binary messages, then an empty text message for EOF
	go func() {
		ws := conns["0"]
		if stdio.Stdin != nil {
			buf := make([]byte, 32<<10)
			for {
				n, err := stdio.Stdin.Read(buf)
				if n > 0 {
					if werr := ws.write(false, buf[:n]); werr != nil {
						return // the command ended and the stream was closed
					}
				}
				if err != nil {
					break
				}
			}
		}
		ws.write(true, nil)
	}()
	// stdout and stderr: binary messages until a text message or close
	var outputs sync.WaitGroup
	recv := func(ws *wsConn, w io.Writer) {
		defer outputs.Done()
		for {
			text, data, err := ws.readMessage()
			if err != nil || text {
				return
			}
			if w != nil {
				w.Write(data)
			}
		}
	}
	outputs.Add(2)
	go recv(conns["1"], stdio.Stdout)
	go recv(conns["2"], stdio.Stderr)
	// the control stream: read (and discard) so pings are answered
	go func() {
		for {
			if _, _, err := conns["control"].readMessage(); err != nil {
				return
			}
		}
	}()

	type result struct {
		op  *operation
		err error
	}
	waited := make(chan result, 1)
	go func() {
		o, err := c.wait(context.WithoutCancel(ctx), op)
		waited <- result{o, err}
	}()
	var res result
	select {
	case res = <-waited:
	case <-ctx.Done():
		sig, _ := json.Marshal(map[string]any{"command": "signal", "signal": 9})
		conns["control"].write(true, sig)
		closeAll()
		return fmt.Errorf("lxd exec %q: %w", argv[0], ctx.Err())
	}
	outputs.Wait()
	if res.err != nil {
		return fmt.Errorf("lxd exec %q: %w", argv[0], res.err)
	}
	var ret struct {
		Return *int `json:"return"`
	}
	if err := json.Unmarshal(res.op.Metadata, &ret); err != nil || ret.Return == nil {
		return fmt.Errorf("lxd exec %q: no exit status in %s", argv[0], res.op.Metadata)
	}
	if *ret.Return != 0 {
		return &platform.ExitError{Code: *ret.Return, Argv: argv}
	}
	return nil
}
