// Package startup measures how long an instance takes to start: N instances
// are created at the same moment, each with the isobench agent as its main
// process, and the host clock marks each phase: created, started, the
// agent's first output ("hello", its first instruction), exited, removed.
// The slowest instance is what the studies report; every instance is kept.
package startup

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// Def is the startup workload.
var Def = workload.Def{
	Name:     "startup",
	Estimate: func(workload.Params) time.Duration { return time.Second },
	Help:     "create+start N instances at once; time to the agent's first instruction, to exit, and each phase (ms)",
	Params: []workload.Param{
		{Name: "timeout", Kind: workload.Duration, Default: "120s", Min: 1, Max: 3600, Help: "give up on an instance after this long"},
	},
	Host: run,
	Timeout: func(p workload.Params) time.Duration {
		return p.Duration("timeout") + 30*time.Second
	},
}

// helloWatcher records when the agent's hello line first arrives.
type helloWatcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	at   time.Time
	seen chan struct{}
}

func (h *helloWatcher) Write(p []byte) (int, error) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.at.IsZero() {
		return len(p), nil
	}
	h.buf.Write(p)
	if bytes.Contains(h.buf.Bytes(), []byte(`"hello"`)) {
		h.at = now
		close(h.seen)
	}
	if h.buf.Len() > 64<<10 {
		h.buf.Reset()
	}
	return len(p), nil
}

type phases struct {
	mu      sync.Mutex
	created time.Time
	started time.Time
}

func (p *phases) mark(name string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch name {
	case "created":
		p.created = at
	case "started":
		p.started = at
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func run(ctx context.Context, p workload.Params, env workload.HostEnv) ([]workload.InstanceResult, error) {
	timeout := p.Duration("timeout")
	return workload.Together(env.Instances, func(i int) (workload.InstanceResult, error) {
		return one(ctx, env, i, timeout)
	})
}

func one(ctx context.Context, env workload.HostEnv, i int, timeout time.Duration) (workload.InstanceResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hw := &helloWatcher{seen: make(chan struct{})}
	ph := &phases{}
	s := env.Base
	s.Name = env.NewName()
	s.Main = []string{platform.AgentPlaceholder, "agent", "hello"}
	s.MainStdout = hw
	s.Phase = ph.mark
	t0 := time.Now()
	inst, err := env.Platform.Create(ctx, s)
	if err != nil {
		return workload.InstanceResult{}, fmt.Errorf("startup: instance %d: %w", i, err)
	}
	closed := false
	defer func() {
		if !closed {
			inst.Close(context.WithoutCancel(ctx))
		}
	}()
	select {
	case <-hw.seen:
	case <-ctx.Done():
		return workload.InstanceResult{}, fmt.Errorf("startup: instance %d never printed hello: %w", i, ctx.Err())
	}
	code, err := inst.Wait(ctx)
	if err != nil {
		return workload.InstanceResult{}, fmt.Errorf("startup: instance %d: wait: %w", i, err)
	}
	tExit := time.Now()
	if code != 0 {
		return workload.InstanceResult{}, fmt.Errorf("startup: instance %d: agent exited with status %d", i, code)
	}
	closed = true
	if err := inst.Close(ctx); err != nil {
		return workload.InstanceResult{}, fmt.Errorf("startup: instance %d: remove: %w", i, err)
	}
	tRemoved := time.Now()
	hw.mu.Lock()
	tHello := hw.at
	hw.mu.Unlock()
	m := []sample.Metric{
		{Name: "startup_ms", Value: ms(tHello.Sub(t0)), Unit: "ms", Better: sample.Lower, Agg: sample.Max},
		{Name: "exit_ms", Value: ms(tExit.Sub(t0)), Unit: "ms", Better: sample.Lower, Agg: sample.Max},
		{Name: "remove_ms", Value: ms(tRemoved.Sub(tExit)), Unit: "ms", Better: sample.Lower, Agg: sample.Max},
	}
	ph.mu.Lock()
	if !ph.created.IsZero() {
		// A phase is stamped when the host hears of it, which can be after
		// the agent has already printed: Docker's start call returns late
		// now and then, and LXC's created hook is read from a FIFO. No
		// phase can end after the first instruction, so the stamps are
		// clamped to be in order and end by it; the phases then still add
		// up to startup_ms.
		created := minTime(ph.created, tHello)
		m = append(m, sample.Metric{Name: "create_ms", Value: ms(created.Sub(t0)), Unit: "ms", Better: sample.Lower, Agg: sample.Max})
		if !ph.started.IsZero() {
			started := minTime(maxTime(ph.started, created), tHello)
			m = append(m, sample.Metric{Name: "start_ms", Value: ms(started.Sub(created)), Unit: "ms", Better: sample.Lower, Agg: sample.Max})
			m = append(m, sample.Metric{Name: "first_instruction_ms", Value: ms(tHello.Sub(started)), Unit: "ms", Better: sample.Lower, Agg: sample.Max})
		}
	}
	ph.mu.Unlock()
	return workload.InstanceResult{Instance: i, Metrics: m}, nil
}
