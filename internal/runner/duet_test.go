package runner_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/isobench/isobench/internal/agentproto"
	"github.com/isobench/isobench/internal/runner"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// TestDuetRunsBothAtOnceOnSwappedCPUs: in a duet the two platforms'
// repetitions run at the same time, each agent bound to its own half of
// the CPUs, the halves swapped every repetition, and every sample says
// which CPUs it ran on.
func TestDuetRunsBothAtOnceOnSwappedCPUs(t *testing.T) {
	halves, err := runner.DuetHalves()
	if err != nil {
		t.Skip(err)
	}
	// the fake platform runs agents in this process: give its threads
	// back every CPU afterwards
	var all unix.CPUSet
	unix.SchedGetaffinity(0, &all)
	t.Cleanup(func() { restoreAffinity(&all) })

	var running, most atomic.Int32
	def := workload.Def{
		Name: "together",
		Agent: func(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
			if err := ready(); err != nil {
				return nil, err
			}
			now := running.Add(1)
			for {
				m := most.Load()
				if now <= m || most.CompareAndSwap(m, now) {
					break
				}
			}
			time.Sleep(200 * time.Millisecond)
			running.Add(-1)
			return []sample.Metric{{Name: "ops", Value: 1, Unit: "ops/s", Better: sample.Higher, Agg: sample.Sum}}, nil
		},
	}
	reg, a, b := setup(t, def)
	sink := &memSink{}
	r := &runner.Runner{Sink: sink, RunID: 1}
	plan := runner.Plan{
		Targets:   []runner.Target{{Label: "a", Name: "a", Platform: a}, {Label: "b", Name: "b", Platform: b}},
		Jobs:      []runner.Job{job(t, reg, "together", nil)},
		Instances: []int{1},
		Reps:      2,
		Duet:      true,
		DuetCPUs:  halves,
	}
	if err := r.Run(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	if most.Load() != 2 {
		t.Errorf("at most %d repetitions ran at once, want 2 (a duet)", most.Load())
	}
	want := map[[2]any]string{{"a", 0}: halves[0], {"b", 0}: halves[1], {"a", 1}: halves[1], {"b", 1}: halves[0]}
	seen := 0
	for _, s := range sink.all() {
		if s.Metric != "ops" || s.Instance == sample.AggregateInstance {
			continue
		}
		seen++
		if got := s.Tags[agentproto.CPUsTag]; got != want[[2]any{s.Platform, s.Rep}] {
			t.Errorf("%s rep %d ran on cpus %q, want %q", s.Platform, s.Rep, got, want[[2]any{s.Platform, s.Rep}])
		}
	}
	if seen != 4 {
		t.Errorf("%d samples, want 4", seen)
	}
	// without a duet, one at a time
	most.Store(0)
	plan.Duet = false
	if err := r.Run(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	if most.Load() != 1 {
		t.Errorf("interleaved: %d at once, want 1", most.Load())
	}
}

func TestDuetPlanValidation(t *testing.T) {
	reg, a, _ := setup(t, (&barrierProbe{}).def())
	host := workload.Def{Name: "hosty", Host: func(context.Context, workload.Params, workload.HostEnv) ([]workload.InstanceResult, error) {
		return nil, nil
	}}
	hreg, _, _ := setup(t, host)
	one := []runner.Target{{Label: "a", Name: "a", Platform: a}}
	two := []runner.Target{{Label: "a", Name: "a", Platform: a}, {Label: "b", Name: "b", Platform: a}}
	for what, p := range map[string]runner.Plan{
		"exactly two": {Targets: one, Jobs: []runner.Job{job(t, reg, "probe", nil)}, Instances: []int{1}, Reps: 1, Duet: true, DuetCPUs: [2]string{"0", "1"}},
		"in-guest":    {Targets: two, Jobs: []runner.Job{job(t, hreg, "hosty", nil)}, Instances: []int{1}, Reps: 1, Duet: true, DuetCPUs: [2]string{"0", "1"}},
		"duet CPUs":   {Targets: two, Jobs: []runner.Job{job(t, reg, "probe", nil)}, Instances: []int{1}, Reps: 1, Duet: true, DuetCPUs: [2]string{"0", "x"}},
	} {
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), what) {
			t.Errorf("%s: %v", what, err)
		}
	}
}
