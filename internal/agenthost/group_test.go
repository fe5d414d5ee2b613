package agenthost_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	fake "github.com/isobench/isobench/internal/testkit/fakeplatform"
	"github.com/isobench/isobench/internal/workload"
)

func registry(t *testing.T) workload.Registry {
	t.Helper()
	r, err := workload.NewRegistry(
		workload.Def{Name: "ok", Params: []workload.Param{{Name: "v", Kind: workload.Float, Default: "1"}},
			Agent: func(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
				if err := ready(); err != nil {
					return nil, err
				}
				return []sample.Metric{{Name: "x", Value: p.Float("v"), Unit: "u", Better: sample.Higher}}, nil
			}},
		workload.Def{Name: "fails", Agent: func(context.Context, workload.Params, workload.Barrier) ([]sample.Metric, error) {
			return nil, errors.New("disk full")
		}},
		workload.Def{Name: "nobarrier", Agent: func(context.Context, workload.Params, workload.Barrier) ([]sample.Metric, error) {
			return nil, nil
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func instances(t *testing.T, reg workload.Registry, n int) []platform.Instance {
	t.Helper()
	p := &fake.Platform{Label: "a", Workloads: reg}
	var out []platform.Instance
	for i := 0; i < n; i++ {
		in, err := p.Create(context.Background(), platform.Spec{Name: "i"})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, in)
	}
	return out
}

func TestGroupBarrierAndResults(t *testing.T) {
	reg := registry(t)
	g := agenthost.StartGroup(context.Background(), instances(t, reg, 3), "ok", "v=2.5")
	skew, err := g.Barrier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if skew < 0 {
		t.Fatalf("negative skew %v", skew)
	}
	ms, _, err := g.Results(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if len(m) != 1 || m[0].Value != 2.5 {
			t.Fatalf("instance %d: %+v", i, m)
		}
	}
}

func TestWorkloadErrorsReachTheHost(t *testing.T) {
	reg := registry(t)
	g := agenthost.StartGroup(context.Background(), instances(t, reg, 2), "fails", "")
	_, err := g.Barrier(context.Background())
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("want the workload's error, got %v", err)
	}
	g = agenthost.StartGroup(context.Background(), instances(t, reg, 1), "nobarrier", "")
	if _, err := g.Barrier(context.Background()); err == nil || !strings.Contains(err.Error(), "never reached its barrier") {
		t.Fatalf("a workload skipping its barrier: %v", err)
	}
}

func TestGroupBarrierKinds(t *testing.T) {
	reg := registry(t)
	for _, kind := range []string{"", agenthost.BarrierDeadline, agenthost.BarrierStdin} {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		before := ts.Nano()
		g := agenthost.StartGroupWith(context.Background(), instances(t, reg, 4), "ok", "", agenthost.Options{Barrier: kind})
		skew, err := g.Barrier(context.Background())
		if err != nil {
			t.Fatalf("%q: %v", kind, err)
		}
		first, last := g[0].StartClock, g[0].StartClock
		for i, s := range g {
			if s.StartClock == 0 {
				t.Fatalf("%q: instance %d reported no start clock", kind, i)
			}
			// the deadline is at least 5 ms after the pings, which follow before
			if kind != agenthost.BarrierStdin && s.StartClock < before+int64(5*time.Millisecond) {
				t.Fatalf("%q: instance %d started %v after the barrier began, before any deadline could pass", kind, i, time.Duration(s.StartClock-before))
			}
			first, last = min(first, s.StartClock), max(last, s.StartClock)
		}
		// the fake instances share the host's clock: the skew is the spread of the start clocks
		if skew != time.Duration(last-first) {
			t.Fatalf("%q: skew %v, start clocks spread %v", kind, skew, time.Duration(last-first))
		}
		if _, _, err := g.Results(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	g := agenthost.StartGroupWith(context.Background(), instances(t, reg, 2), "ok", "", agenthost.Options{Barrier: "telepathy"})
	if _, err := g.Barrier(context.Background()); err == nil || !strings.Contains(err.Error(), "unknown barrier") {
		t.Fatalf("unknown barrier: %v", err)
	}
	g.Abort()
}
