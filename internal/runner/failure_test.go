package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/runner"
	"github.com/isobench/isobench/internal/store"
)

// failSink is a sink that also keeps failures, as the store does.
type failSink struct {
	memSink
	fmu      sync.Mutex
	failures []store.Failure
}

func (f *failSink) AddFailure(_ context.Context, x store.Failure) error {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	f.failures = append(f.failures, x)
	return nil
}

func (f *failSink) kept() []store.Failure {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	return append([]store.Failure(nil), f.failures...)
}

func TestFailedCellIsRecordedAndTheRunGoesOn(t *testing.T) {
	probe := &barrierProbe{}
	reg, a, b := setup(t, probe.def())
	b.CreateErr = fmt.Errorf("fake: network=nat is %w", platform.ErrUnsupported)
	sink := &failSink{}
	r := &runner.Runner{Sink: sink, RunID: 3}
	plan := runner.Plan{
		Targets:   []runner.Target{{Label: "a", Name: "a", Platform: a}, {Label: "b:network=nat", Name: "b", Options: "network=nat", Platform: b}},
		Jobs:      []runner.Job{job(t, reg, "probe", nil), job(t, reg, "probe", map[string]string{"fail": "true"})},
		Instances: []int{1, 2},
		Reps:      3,
	}
	err := r.Run(context.Background(), plan)
	var cf *runner.CellsFailed
	if !errors.As(err, &cf) {
		t.Fatalf("want *CellsFailed, got %v", err)
	}
	// b fails each of the 4 cells at its first repetition, a fails the 2
	// cells of the failing job; a's 2 good cells ran all their reps
	if len(cf.Failures) != 6 {
		t.Fatalf("%d failures, want 6: %v", len(cf.Failures), err)
	}
	classes := map[string]int{}
	for _, f := range cf.Failures {
		classes[f.Target+" "+f.Class]++
		if f.Rep != 0 {
			t.Errorf("%s: failed at rep %d; a failed cell must not be retried", f, f.Rep)
		}
	}
	if classes["b:network=nat unsupported"] != 4 || classes["a error"] != 2 {
		t.Fatalf("failure classes %v", classes)
	}
	good := 0
	for _, s := range sink.all() {
		if s.Platform == "a" && s.Metric == "ops" && s.Instance == -1 {
			good++
		}
	}
	if good != 2*3 {
		t.Fatalf("%d repetitions of a's good cells stored, want 6", good)
	}
	kept := sink.kept()
	if len(kept) != 6 {
		t.Fatalf("sink kept %d failures, want 6", len(kept))
	}
	for _, k := range kept {
		if k.RunID != 3 || k.Kind != store.FailedCell || k.Error == "" || k.Workload != "probe" {
			t.Fatalf("stored failure without provenance: %+v", k)
		}
		if k.Platform == "b" && (k.Options != "network=nat" || k.Class != runner.ClassUnsupported || !strings.Contains(k.Error, "not supported")) {
			t.Fatalf("stored failure: %+v", k)
		}
	}
	sum := r.Summary()
	if !strings.Contains(sum, "failed cells (6") || !strings.Contains(sum, "probe:") || !strings.Contains(sum, "planted failure") {
		t.Fatalf("summary:\n%s", sum)
	}
	if len(a.Open())+len(b.Open()) != 0 {
		t.Fatalf("instances left open: %v %v", a.Open(), b.Open())
	}
}

func TestFailFastStopsAtTheFirstFailure(t *testing.T) {
	probe := &barrierProbe{}
	reg, a, _ := setup(t, probe.def())
	r := &runner.Runner{Sink: &memSink{}, RunID: 1, FailFast: true}
	plan := runner.Plan{
		Targets:   []runner.Target{{Label: "a", Name: "a", Platform: a}},
		Jobs:      []runner.Job{job(t, reg, "probe", map[string]string{"fail": "true"}), job(t, reg, "probe", nil)},
		Instances: []int{1, 2},
		Reps:      2,
	}
	err := r.Run(context.Background(), plan)
	var cf *runner.CellsFailed
	if err == nil || errors.As(err, &cf) || !strings.Contains(err.Error(), "planted failure") {
		t.Fatalf("want the planted failure alone, got %v", err)
	}
	if a.Created() != 1 {
		t.Fatalf("%d instances created after the first failure, want only the failing one", a.Created())
	}
}

func TestOOMKillIsReportedAsOutOfMemory(t *testing.T) {
	probe := &barrierProbe{}
	reg, a, _ := setup(t, probe.def())
	a.OOM = func(name string) bool { return true }
	sink := &failSink{}
	r := &runner.Runner{Sink: sink, RunID: 1}
	plan := runner.Plan{
		Targets:   []runner.Target{{Label: "a:memory=64m", Name: "a", Options: "memory=64m", Platform: a, Base: platform.Spec{Memory: 64 << 20}}},
		Jobs:      []runner.Job{job(t, reg, "probe", map[string]string{"fail": "true"}), job(t, reg, "probe", nil)},
		Instances: []int{1},
		Reps:      2,
	}
	err := r.Run(context.Background(), plan)
	var oom *runner.OOMError
	if !errors.As(err, &oom) || !strings.Contains(err.Error(), "out of memory (limit 64m)") {
		t.Fatalf("want out of memory (limit 64m), got %v", err)
	}
	fs := r.Failures()
	if len(fs) != 1 || fs[0].Class != runner.ClassOOM {
		t.Fatalf("failures %v", fs)
	}
	if k := sink.kept(); len(k) != 1 || k[0].Class != "oom" || !strings.Contains(k[0].Error, "out of memory (limit 64m)") {
		t.Fatalf("stored %+v", k)
	}
	// the run went on: the second job's two repetitions are stored
	if len(sink.batches) != 2 {
		t.Fatalf("%d repetitions stored after the OOM, want 2", len(sink.batches))
	}
}

func TestFailedRemovalsAreReportedAndStored(t *testing.T) {
	probe := &barrierProbe{}
	reg, a, _ := setup(t, probe.def())
	a.CloseErr = errors.New("dockerd is gone")
	sink := &failSink{}
	r := &runner.Runner{Sink: sink, RunID: 1}
	plan := runner.Plan{Targets: []runner.Target{{Label: "a", Name: "a", Platform: a}}, Jobs: []runner.Job{job(t, reg, "probe", nil)}, Instances: []int{2}, Reps: 1}
	if err := r.Run(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	rs := r.Removals()
	if len(rs) != 2 {
		t.Fatalf("removals %v, want both instances", rs)
	}
	for _, x := range rs {
		if x.Target != "a" || x.Instance == "" || !strings.Contains(x.Err.Error(), "dockerd is gone") {
			t.Fatalf("removal %+v", x)
		}
	}
	k := sink.kept()
	if len(k) != 2 || k[0].Kind != store.FailedRemoval || k[0].Object == "" || k[0].Error != "dockerd is gone" {
		t.Fatalf("stored %+v", k)
	}
	if s := r.Summary(); !strings.Contains(s, "instances not removed (2") || !strings.Contains(s, rs[0].Instance) {
		t.Fatalf("summary:\n%s", s)
	}
}

// An agent that freezes (as under SIGSTOP) stops beating: the repetition is
// given up on after the silence bound, named with the instance and what it
// was doing, and the run goes on.
func TestFrozenAgentIsGivenUpOn(t *testing.T) {
	for _, c := range []struct {
		freeze, phase string
	}{
		{"ready", agenthost.PhaseSetup},
		{"started", agenthost.PhaseBarrier},
		{"result", agenthost.PhaseRunning},
	} {
		t.Run(c.freeze, func(t *testing.T) {
			probe := &barrierProbe{}
			reg, a, b := setup(t, probe.def())
			a.Freeze = c.freeze
			r := &runner.Runner{Sink: &memSink{}, RunID: 1, Silence: 300 * time.Millisecond}
			plan := runner.Plan{
				Targets:   []runner.Target{{Label: "a", Name: "a", Platform: a}, {Label: "b", Name: "b", Platform: b}},
				Jobs:      []runner.Job{job(t, reg, "probe", nil)},
				Instances: []int{2},
				Reps:      2,
			}
			err := r.Run(context.Background(), plan)
			var stall *agenthost.StallError
			if !errors.As(err, &stall) {
				t.Fatalf("want a StallError, got %v", err)
			}
			if stall.Phase != c.phase || !strings.Contains(err.Error(), "hung while "+c.phase) || !strings.Contains(err.Error(), "no heartbeat") {
				t.Fatalf("frozen at %q: %v, want it named as %q", c.freeze, err, c.phase)
			}
			if fs := r.Failures(); len(fs) != 1 || fs[0].Class != runner.ClassHung || fs[0].Target != "a" {
				t.Fatalf("failures %v", fs)
			}
			if b.Created() != 4 {
				t.Fatalf("b ran %d instances, want its 2 repetitions of 2", b.Created())
			}
			if len(a.Open())+len(b.Open()) != 0 {
				t.Fatalf("instances left open: %v %v", a.Open(), b.Open())
			}
		})
	}
}

// A workload that hangs while its agent still beats is given up on after
// the bound of its timed part, proportional to its duration.
func TestHungWorkloadIsGivenUpOnAfterItsBound(t *testing.T) {
	probe := &barrierProbe{}
	reg, a, _ := setup(t, probe.def())
	r := &runner.Runner{Sink: &memSink{}, RunID: 1, RunSlack: 200 * time.Millisecond}
	plan := runner.Plan{
		Targets:   []runner.Target{{Label: "a", Name: "a", Platform: a}},
		Jobs:      []runner.Job{job(t, reg, "probe", map[string]string{"hang": "true", "duration": "100ms"}), job(t, reg, "probe", nil)},
		Instances: []int{2},
		Reps:      1,
	}
	err := r.Run(context.Background(), plan)
	var bound *runner.BoundError
	if !errors.As(err, &bound) {
		t.Fatalf("want a BoundError, got %v", err)
	}
	if bound.Bound != 500*time.Millisecond || bound.Expected != 100*time.Millisecond {
		t.Fatalf("bound %v for a 100ms workload, want 3× + 200ms = 500ms", bound.Bound)
	}
	if !strings.Contains(err.Error(), "while running") || !strings.Contains(err.Error(), "instance 0") {
		t.Fatalf("error does not name the instance and what it was doing: %v", err)
	}
	if fs := r.Failures(); len(fs) != 1 || fs[0].Class != runner.ClassTimeout {
		t.Fatalf("failures %v", fs)
	}
	if a.Created() != 4 {
		t.Fatalf("%d instances created, want 2 for the hung cell and 2 for the next", a.Created())
	}
	if open := a.Open(); len(open) != 0 {
		t.Fatalf("instances left open: %v", open)
	}
}

// Whatever an instance reports while the run's context is done (here an
// engine helper's "context canceled" that came back as a plain string) is
// an interruption, not a failed cell.
func TestFailureAfterCancelIsAnInterruption(t *testing.T) {
	probe := &barrierProbe{}
	reg, a, _ := setup(t, probe.def())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.FailCreate = func(nth int) error {
		if nth == 3 {
			cancel() // Ctrl-C reached the helper and isobench at once
			return errors.New("lxc-attach: context canceled")
		}
		return nil
	}
	sink := &failSink{}
	r := &runner.Runner{Sink: sink, RunID: 1}
	plan := runner.Plan{Targets: []runner.Target{{Label: "a", Name: "a", Platform: a}}, Jobs: []runner.Job{job(t, reg, "probe", nil)}, Instances: []int{1}, Reps: 5}
	err := r.Run(ctx, plan)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want an error wrapping context.Canceled, got %v", err)
	}
	if !strings.Contains(err.Error(), "lxc-attach: context canceled") {
		t.Errorf("the instance's own report is lost: %v", err)
	}
	if len(r.Failures()) != 0 || len(sink.kept()) != 0 {
		t.Fatalf("an interruption was recorded as a failed cell: %v", r.Failures())
	}
	if len(sink.batches) != 2 {
		t.Fatalf("%d repetitions kept, want the 2 finished", len(sink.batches))
	}
}

// On a platform that cannot tell, an agent killed with status 137 under a
// memory limit is reported as out of memory all the same, naming the
// instance and saying the kill was inferred.
func TestStatus137UnderALimitIsOutOfMemory(t *testing.T) {
	probe := &barrierProbe{}
	reg, a, _ := setup(t, probe.def())
	var mu sync.Mutex
	execs := 0
	a.ExecErr = func(name string) error {
		mu.Lock()
		defer mu.Unlock()
		if execs++; execs == 2 { // the second instance's agent is killed
			return &platform.ExitError{Code: 137, Argv: []string{"{agent}", "agent", "run"}}
		}
		return nil
	}
	limited := runner.Target{Label: "a:memory=64m", Name: "a", Options: "memory=64m", Platform: a, Base: platform.Spec{Memory: 64 << 20}}
	r := &runner.Runner{Sink: &memSink{}, RunID: 1}
	plan := runner.Plan{Targets: []runner.Target{limited}, Jobs: []runner.Job{job(t, reg, "probe", nil)}, Instances: []int{2}, Reps: 1}
	err := r.Run(context.Background(), plan)
	var oom *runner.OOMError
	if !errors.As(err, &oom) || !oom.Inferred || len(oom.Instances) != 1 {
		t.Fatalf("want an inferred OOM of one instance, got %v", err)
	}
	if !strings.Contains(err.Error(), "out of memory (limit 64m; the agent was killed with status 137)") || strings.Contains(err.Error(), "instance ?") {
		t.Fatalf("message: %v", err)
	}
	// without a limit, status 137 is just a failure
	execs = 0
	unlimited := limited
	unlimited.Base = platform.Spec{}
	plan.Targets = []runner.Target{unlimited}
	r = &runner.Runner{Sink: &memSink{}, RunID: 2}
	if err := r.Run(context.Background(), plan); errors.As(err, &oom) || !strings.Contains(err.Error(), "status 137") {
		t.Fatalf("no limit: %v", err)
	}
}

// An agent whose Go runtime could not allocate (a VM's kernel refusing
// the memory before its OOM killer acts) is out of memory too, not an
// error: the failure is recorded with class oom, no number.
func TestRuntimeOutOfMemoryIsOutOfMemory(t *testing.T) {
	probe := &barrierProbe{}
	reg, a, _ := setup(t, probe.def())
	a.ExecErr = func(name string) error {
		return fmt.Errorf("%w: fatal error: runtime: out of memory", &platform.ExitError{Code: 2, Argv: []string{"{agent}", "agent", "run"}})
	}
	limited := runner.Target{Label: "a:memory=192m", Name: "a", Options: "memory=192m", Platform: a, Base: platform.Spec{Memory: 192 << 20}}
	r := &runner.Runner{Sink: &memSink{}, RunID: 1}
	plan := runner.Plan{Targets: []runner.Target{limited}, Jobs: []runner.Job{job(t, reg, "probe", nil)}, Instances: []int{1}, Reps: 1}
	err := r.Run(context.Background(), plan)
	var oom *runner.OOMError
	if !errors.As(err, &oom) || !oom.Runtime {
		t.Fatalf("want an OOM from the agent's runtime, got %v", err)
	}
	if !strings.Contains(err.Error(), "out of memory (limit 192m; the agent's Go runtime could not allocate") {
		t.Fatalf("message: %v", err)
	}
}
