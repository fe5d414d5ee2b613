package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// The channel.k8s.io protocols of the pods/exec subresource over a
// websocket: every binary message starts with a channel byte.
const (
	protoV5 = "v5.channel.k8s.io" // v4 plus closing a channel (stdin EOF)
	protoV4 = "v4.channel.k8s.io" // the error channel carries a JSON Status

	chanStdin  = 0
	chanStdout = 1
	chanStderr = 2
	chanError  = 3
	chanResize = 4
	chanClose  = 255 // v5: payload is the channel to close
)

// stdinChunk is the most stdin one message carries.
const stdinChunk = 32 << 10

// frame makes a message for channel ch.
func frame(ch byte, data []byte) []byte {
	return append([]byte{ch}, data...)
}

// closeFrame makes the v5 message that closes channel ch (stdin EOF).
func closeFrame(ch byte) []byte { return []byte{chanClose, ch} }

// execStatus is the metav1.Status the server sends on the error channel.
type execStatus struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Details struct {
		Causes []struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"causes"`
	} `json:"details"`
}

// exitCode reads the error channel's status: 0 for Success, the exit code
// for NonZeroExitCode, and an error for anything else (the command could
// not be started).
func exitCode(b []byte) (int, error) {
	var st execStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return -1, fmt.Errorf("exec status %q: %w", b, err)
	}
	if st.Status == "Success" {
		return 0, nil
	}
	if st.Reason == "NonZeroExitCode" {
		for _, c := range st.Details.Causes {
			if c.Reason == "ExitCode" {
				n, err := strconv.Atoi(c.Message)
				if err != nil {
					return -1, fmt.Errorf("exec status: exit code %q: %w", c.Message, err)
				}
				return n, nil
			}
		}
	}
	if st.Message == "" {
		st.Message = string(b)
	}
	return -1, errors.New(st.Message)
}

// execURL is the websocket URL of the exec subresource.
func (c *client) execURL(ns, pod, container string, argv []string, stdin bool) (string, error) {
	u, err := url.Parse(c.ep.Server)
	if err != nil {
		return "", fmt.Errorf("k8s: server %q: %w", c.ep.Server, err)
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	case "http":
		u.Scheme = "ws"
	default:
		return "", fmt.Errorf("k8s: server %q is not http(s)", c.ep.Server)
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(pod) + "/exec"
	q := url.Values{}
	q.Set("container", container)
	q.Set("stdout", "true")
	q.Set("stderr", "true")
	if stdin {
		q.Set("stdin", "true")
	}
	for _, a := range argv {
		q.Add("command", a)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// exec runs argv in a container of a pod and returns its exit code; err is
// set when it could not run or the stream broke.
func (c *client) exec(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	u, err := c.execURL(ns, pod, container, argv, stdin != nil)
	if err != nil {
		return -1, err
	}
	d := websocket.Dialer{
		TLSClientConfig:  c.ep.TLS,
		Subprotocols:     []string{protoV5, protoV4},
		HandshakeTimeout: 2 * time.Minute,
		// every message must go out as one frame: the apiserver's
		// golang.org/x/net/websocket side reads a continuation frame as
		// a new message, takes its first data byte for the channel and
		// drops it (with gorilla's 4 KiB default buffer, 3 of every 4 KiB
		// of stdin were lost)
		WriteBufferSize: stdinChunk + 64,
	}
	h := http.Header{}
	if c.ep.Token != "" {
		h.Set("Authorization", "Bearer "+c.ep.Token)
	}
	conn, resp, err := d.DialContext(ctx, u, h)
	if err != nil {
		if resp != nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			var st execStatus
			if json.Unmarshal(b, &st) == nil && st.Message != "" {
				return -1, &apiError{Code: resp.StatusCode, Message: st.Message}
			}
			return -1, fmt.Errorf("%w (HTTP %d: %s)", err, resp.StatusCode, strings.TrimSpace(string(b)))
		}
		return -1, err
	}
	defer conn.Close()
	proto := conn.Subprotocol()
	if proto != protoV5 && proto != protoV4 {
		return -1, fmt.Errorf("the apiserver speaks %q, not %s or %s", proto, protoV5, protoV4)
	}
	// a pong that cannot be written (the server closed) must not end the
	// read before data still buffered
	conn.SetPingHandler(func(data string) error {
		conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(10*time.Second))
		return nil
	})
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	var wmu sync.Mutex // gorilla allows one writer at a time
	write := func(b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return conn.WriteMessage(websocket.BinaryMessage, b)
	}
	done := make(chan struct{})
	defer close(done)
	if stdin != nil {
		if proto != protoV5 {
			return -1, fmt.Errorf("k8s exec: the apiserver speaks %s, which cannot close stdin (Kubernetes 1.30 or later speaks %s)", proto, protoV5)
		}
		go func() {
			buf := make([]byte, stdinChunk)
			for {
				n, err := stdin.Read(buf)
				if n > 0 {
					if werr := write(frame(chanStdin, buf[:n])); werr != nil {
						return
					}
				}
				if err != nil {
					break
				}
				select {
				case <-done:
					return
				default:
				}
			}
			write(closeFrame(chanStdin))
		}()
	}
	code := -1
	var statusErr error
	gotStatus := false
	for {
		typ, msg, err := conn.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return -1, ctx.Err()
			}
			if gotStatus {
				return code, statusErr
			}
			var ce *websocket.CloseError
			if errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure {
				// a server that closes without a status: the command ended
				return 0, nil
			}
			return -1, fmt.Errorf("exec stream: %w", err)
		}
		if typ != websocket.BinaryMessage || len(msg) == 0 {
			continue
		}
		data := msg[1:]
		switch msg[0] {
		case chanStdout:
			if stdout != nil && len(data) > 0 {
				stdout.Write(data)
			}
		case chanStderr:
			if stderr != nil && len(data) > 0 {
				stderr.Write(data)
			}
		case chanError:
			if len(data) == 0 {
				continue
			}
			gotStatus = true
			code, statusErr = exitCode(data)
		}
	}
}
