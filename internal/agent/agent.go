// Package agent is the in-guest side of isobench ("isobench agent ..."): it
// runs a registered workload, emits agentproto events on stdout and waits on
// stdin for the host's barrier release.
package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/isobench/isobench/internal/agentproto"
	"github.com/isobench/isobench/internal/workload"
)

// Main is "isobench agent ARGS". It returns the process exit code.
func Main(ctx context.Context, reg workload.Registry, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "isobench agent: internal command; usage: agent run WORKLOAD PARAMS | hello | idle | cgexec FILE... -- ARGV")
		return 2
	}
	w := &eventWriter{w: stdout}
	switch args[0] {
	case "hello":
		// The first thing the agent does: startup measures until this line.
		w.emit(agentproto.Event{Event: agentproto.EvHello})
		return 0
	case "idle":
		return idle(ctx)
	case "cgexec":
		return cgexec(args[1:], stderr)
	case "vm-init":
		// PID 1 of a QEMU guest: mounts, network, then the exec server.
		return vmInit(ctx, args[1:], stdout, stderr)
	case "run":
		if len(args) != 3 {
			fmt.Fprintln(stderr, "isobench agent run: want WORKLOAD PARAMS")
			return 2
		}
		stop := startHeartbeat(w, agentproto.HeartbeatInterval)
		err := run(ctx, reg, args[1], args[2], stdin, w)
		stop()
		if err != nil {
			w.emit(agentproto.Event{Event: agentproto.EvError, Error: err.Error()})
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "isobench agent: unknown command %q\n", args[0])
	return 2
}

func run(ctx context.Context, reg workload.Registry, name, params string, stdin io.Reader, w *eventWriter) error {
	def, err := reg.Lookup(name)
	if err != nil {
		return err
	}
	if def.Agent == nil {
		return fmt.Errorf("workload %s is driven from the host, not the agent", name)
	}
	p, err := def.FromString(params)
	if err != nil {
		return err
	}
	released := false
	in := bufio.NewReader(stdin)
	barrier := func() error {
		if released {
			return errors.New("workload called the barrier twice")
		}
		released = true
		w.emit(agentproto.Event{Event: agentproto.EvReady})
		for {
			line, err := in.ReadString('\n')
			cmd := strings.TrimSpace(line)
			switch {
			case cmd == agentproto.PingLine:
				w.emit(agentproto.Event{Event: agentproto.EvPong, Clock: agentproto.Monotonic()})
				continue
			case cmd == agentproto.GoLine:
				w.emit(agentproto.Event{Event: agentproto.EvStarted, Clock: agentproto.Monotonic()})
				return nil
			case strings.HasPrefix(cmd, agentproto.GoAtPrefix):
				deadline, perr := strconv.ParseInt(strings.TrimPrefix(cmd, agentproto.GoAtPrefix), 10, 64)
				if perr != nil {
					return fmt.Errorf("barrier: bad deadline %q: %w", cmd, perr)
				}
				clock, rt, serr := sleepUntil(deadline)
				if serr != nil {
					return serr
				}
				ev := agentproto.Event{Event: agentproto.EvStarted, Clock: clock, Tags: map[string]string{agentproto.WakeTag: agentproto.WakeNormal}}
				if rt {
					ev.Tags[agentproto.WakeTag] = agentproto.WakeRT
				}
				w.emit(ev)
				return nil
			}
			if err == nil {
				err = fmt.Errorf("unexpected %q", cmd)
			}
			return fmt.Errorf("barrier: host did not release: %w", err)
		}
	}
	ms, err := def.Agent(ctx, p, barrier)
	if err != nil {
		return err
	}
	if !released {
		return fmt.Errorf("workload %s never reached its barrier", name)
	}
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			return err
		}
	}
	w.emit(agentproto.Event{Event: agentproto.EvResult, Metrics: ms})
	return nil
}

// idle keeps an instance alive until it is told to stop. As PID 1 in a
// container, signals without a handler are ignored, so handle them.
func idle(ctx context.Context) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if os.Getpid() == 1 {
		go reap()
	}
	<-ctx.Done()
	return 0
}

// reap collects orphans when the agent is an instance's init.
func reap() {
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &ws, 0, nil); err == syscall.ECHILD {
			// nothing to reap now; block until a child may exist again
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGCHLD)
			<-sig
			signal.Stop(sig)
		}
	}
}

// cgexec writes its own pid into each cgroup.procs file, then becomes argv,
// so the workload starts inside its cgroup from its first instruction.
func cgexec(args []string, stderr io.Writer) int {
	var files []string
	i := 0
	for ; i < len(args) && args[i] != "--"; i++ {
		files = append(files, args[i])
	}
	if i >= len(args)-1 {
		fmt.Fprintln(stderr, "isobench agent cgexec: want FILE... -- ARGV")
		return 2
	}
	argv := args[i+1:]
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, f := range files {
		if err := os.WriteFile(f, pid, 0); err != nil {
			fmt.Fprintf(stderr, "isobench agent cgexec: joining cgroup: %v\n", err)
			return 1
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "isobench agent cgexec: %v\n", err)
		return 127
	}
	err = syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(stderr, "isobench agent cgexec: exec %s: %v\n", path, err)
	return 126
}

type eventWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (e *eventWriter) emit(ev agentproto.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b, _ := json.Marshal(ev)
	e.w.Write(append(b, '\n'))
}
