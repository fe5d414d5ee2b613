// Package fakeplatform is an in-process platform for unit-testing the runner,
// statistics and CLI. Exec of "{agent} agent ..." calls the agent's Main
// directly. It proves nothing about real isolation and is never
// registered as a user-visible platform.
package fakeplatform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/agent"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/workload"
)

// Platform records what happened to its instances.
type Platform struct {
	Label     string
	Workloads workload.Registry
	// CreateErr, when set, fails Create.
	CreateErr error
	// CreateDelay delays every Create.
	CreateDelay time.Duration
	// FailCreate, when set, is asked before every Create (nth counts from
	// 1 in the order Create was called) and fails it with its error.
	FailCreate func(nth int) error
	// CloseErr, when set, is returned by every instance's Close (the
	// instance counts as closed all the same).
	CloseErr error
	// OOM, when set, answers OOMKilled for the instance named name; when
	// unset OOMKilled says it cannot tell, as a platform without counters.
	OOM func(name string) bool
	// ExecErr, when set and returning an error for the instance named
	// name, makes Exec fail with it at once (e.g. a *platform.ExitError
	// with status 137, a killed agent).
	ExecErr func(name string) error
	// Freeze, when set to an agent event name, freezes the agent the
	// moment it writes that event, as SIGSTOP would: that line and every
	// later one stay unwritten until the exec's context ends.
	Freeze string

	mu      sync.Mutex
	Log     []string // "create NAME", "exec NAME WORKLOAD", "close NAME", in order
	open    map[string]bool
	created int
	calls   int
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "fake" }

// Available implements platform.Platform.
func (p *Platform) Available(context.Context) error { return nil }

// Facts implements platform.Platform.
func (p *Platform) Facts(context.Context) map[string]string {
	return map[string]string{"fake": p.Label}
}

// Close implements platform.Platform.
func (p *Platform) Close(context.Context) error { return nil }

func (p *Platform) log(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Log = append(p.Log, s)
}

// Open lists instances not yet closed.
func (p *Platform) Open() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for n, ok := range p.open {
		if ok {
			out = append(out, n)
		}
	}
	return out
}

// Created counts instances ever created.
func (p *Platform) Created() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.created
}

// Create implements platform.Platform.
func (p *Platform) Create(ctx context.Context, s platform.Spec) (platform.Instance, error) {
	if p.CreateDelay > 0 {
		select {
		case <-time.After(p.CreateDelay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if p.CreateErr != nil {
		return nil, p.CreateErr
	}
	p.mu.Lock()
	p.calls++
	nth := p.calls
	p.mu.Unlock()
	if p.FailCreate != nil {
		if err := p.FailCreate(nth); err != nil {
			return nil, err
		}
	}
	p.mu.Lock()
	if p.open == nil {
		p.open = map[string]bool{}
	}
	p.open[s.Name] = true
	p.created++
	p.mu.Unlock()
	p.log("create " + p.Label + " " + s.Name)
	in := &Instance{p: p, name: s.Name, done: make(chan struct{})}
	if s.Phase != nil {
		s.Phase("created", time.Now())
		s.Phase("started", time.Now())
	}
	if len(s.Main) > 0 {
		go func() {
			in.code = agent.Main(context.Background(), p.Workloads, s.Main[2:], nil, orDiscard(s.MainStdout), io.Discard)
			in.closeDone()
		}()
	}
	return in, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Instance is a fake instance.
type Instance struct {
	p    *Platform
	name string
	once sync.Once
	done chan struct{}
	code int
}

func (in *Instance) closeDone() { in.once.Do(func() { close(in.done) }) }

// ID implements platform.Instance.
func (in *Instance) ID() string { return in.name }

// Exec runs "{agent} agent ..." in-process; anything else fails.
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if len(argv) < 2 || argv[0] != platform.AgentPlaceholder || argv[1] != "agent" {
		return fmt.Errorf("fake: can only run the agent, not %q", argv)
	}
	if len(argv) > 3 {
		in.p.log("exec " + in.p.Label + " " + in.name + " " + argv[3])
	}
	if in.p.ExecErr != nil {
		if err := in.p.ExecErr(in.name); err != nil {
			return err
		}
	}
	stdin := stdio.Stdin
	if stdin == nil {
		stdin = eofReader{}
	}
	stdout := orDiscard(stdio.Stdout)
	if in.p.Freeze != "" {
		stdout = &freezer{ctx: ctx, w: stdout, at: []byte(`"event":"` + in.p.Freeze + `"`)}
	}
	code := agent.Main(ctx, in.p.Workloads, argv[2:], stdin, stdout, orDiscard(stdio.Stderr))
	if code != 0 {
		return &platform.ExitError{Code: code, Argv: argv}
	}
	return nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// CopyIn is not supported.
func (in *Instance) CopyIn(context.Context, string, string, uint32) error {
	return errors.New("fake: copy in is not supported")
}

// Address implements platform.Instance.
func (in *Instance) Address(context.Context) (string, error) { return "127.0.0.1", nil }

// Facts implements platform.Instance.
func (in *Instance) Facts(context.Context) map[string]string {
	return map[string]string{"network": "fake"}
}

// Wait implements platform.Instance.
func (in *Instance) Wait(ctx context.Context) (int, error) {
	select {
	case <-in.done:
		return in.code, nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// Close implements platform.Instance.
func (in *Instance) Close(context.Context) error {
	in.p.mu.Lock()
	wasOpen := in.p.open[in.name]
	in.p.open[in.name] = false
	in.p.mu.Unlock()
	if wasOpen {
		in.p.log("close " + in.p.Label + " " + in.name)
	}
	in.closeDone()
	if wasOpen {
		return in.p.CloseErr
	}
	return nil
}

// OOMKilled implements platform.OOMReporter through Platform.OOM.
func (in *Instance) OOMKilled(context.Context) (bool, error) {
	if in.p.OOM == nil {
		return false, errors.New("fake: cannot tell")
	}
	return in.p.OOM(in.name), nil
}

// freezer passes writes through until one contains at; from then on every
// write blocks until ctx ends.
type freezer struct {
	ctx    context.Context
	w      io.Writer
	at     []byte
	frozen bool
}

func (f *freezer) Write(p []byte) (int, error) {
	if !f.frozen && bytes.Contains(p, f.at) {
		f.frozen = true
	}
	if f.frozen {
		<-f.ctx.Done()
		return 0, f.ctx.Err()
	}
	return f.w.Write(p)
}
