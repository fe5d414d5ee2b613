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
	"github.com/isobench/isobench/internal/confine"
	"github.com/isobench/isobench/internal/workload"
)

// Main is "isobench agent ARGS". It returns the process exit code.
func Main(ctx context.Context, reg workload.Registry, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "isobench agent: internal command; usage: agent run [--secrets-stdin] WORKLOAD PARAMS | hello | idle | cgexec FILE... -- ARGV | confine [--seccomp=default|unconfined] -- ARGV | probe")
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
	case "confine":
		// a workload run as a Docker container's process would be
		return confine.Main(args[1:], stderr)
	case "probe":
		// the confinement and limits of this process, as JSON facts
		return confine.ProbeMain(stdout, stderr)
	case "vm-init":
		// PID 1 of a QEMU guest: mounts, network, then the exec server.
		return vmInit(ctx, args[1:], stdout, stderr)
	case "run":
		rest := args[1:]
		secrets := len(rest) > 0 && rest[0] == agentproto.SecretsArg
		if secrets {
			rest = rest[1:]
		}
		var cpus string
		if len(rest) > 0 && strings.HasPrefix(rest[0], agentproto.CPUsArg) {
			cpus = strings.TrimPrefix(rest[0], agentproto.CPUsArg)
			rest = rest[1:]
		}
		if len(rest) != 2 {
			fmt.Fprintln(stderr, "isobench agent run: want [--secrets-stdin] [--cpus=LIST] WORKLOAD PARAMS")
			return 2
		}
		if cpus != "" {
			if err := bindAll(cpus); err != nil {
				w.emit(agentproto.Event{Event: agentproto.EvError, Error: err.Error()})
				return 1
			}
		}
		stop := startHeartbeat(w, agentproto.HeartbeatInterval)
		err := run(ctx, reg, rest[0], rest[1], secrets, stdin, w, cpus)
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

// run runs workload name in this process. The agent is the one entry point
// that knows the internal workloads (the hidden halves host-driven
// workloads start in their instances): LookupAgent. With secrets, the
// first line of stdin holds the workload's secret parameters.
func run(ctx context.Context, reg workload.Registry, name, params string, secrets bool, stdin io.Reader, w *eventWriter, cpus string) error {
	def, err := reg.LookupAgent(name)
	if err != nil {
		return err
	}
	if def.Agent == nil {
		return fmt.Errorf("workload %s is driven from the host, not the agent", name)
	}
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	in := bufio.NewReader(stdin)
	var sec map[string]string
	if secrets {
		if sec, err = readSecrets(in); err != nil {
			return err
		}
	}
	p, err := def.FromArgs(params, sec)
	if err != nil {
		return err
	}
	released := false
	tr := &tracker{}
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
				now := agentproto.Monotonic()
				tr.released(now)
				w.emit(agentproto.Event{Event: agentproto.EvStarted, Clock: now})
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
				tr.released(min(deadline, clock))
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
	ms, err := def.Agent(workload.WithTracker(ctx, tr), p, barrier)
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
	var tags map[string]string
	if cpus != "" {
		tags = map[string]string{agentproto.CPUsTag: cpus}
	}
	w.emit(agentproto.Event{Event: agentproto.EvResult, Metrics: ms, Tags: tags, Timelines: tr.timelines()})
	return nil
}

// readSecrets reads the secrets line (agentproto.SecretsArg): one JSON
// object of strings. Its content is never quoted in an error.
func readSecrets(in *bufio.Reader) (map[string]string, error) {
	var line []byte
	for {
		chunk, isPrefix, err := in.ReadLine()
		if err != nil {
			return nil, fmt.Errorf("reading the secrets line on standard input: %w", err)
		}
		line = append(line, chunk...)
		if len(line) > agentproto.MaxSecretsLine {
			return nil, fmt.Errorf("the secrets line on standard input is longer than %d bytes", agentproto.MaxSecretsLine)
		}
		if !isPrefix {
			break
		}
	}
	var m map[string]string
	if err := json.Unmarshal(line, &m); err != nil || m == nil {
		return nil, errors.New("the secrets line on standard input is not a JSON object of strings")
	}
	return m, nil
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
