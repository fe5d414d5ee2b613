package runner_test

import (
	"context"
	"errors"
	"github.com/isobench/isobench/internal/workload"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/isobench/isobench/internal/hoststate"
	"github.com/isobench/isobench/internal/runner"
	"github.com/isobench/isobench/internal/sample"
)

// fakeSettler numbers the states it hands out: the n-th Settle says the
// host had n TIME_WAIT sockets.
type fakeSettler struct {
	mu        sync.Mutex
	events    []string
	n         int
	undrained bool
	err       error
	cancel    context.CancelFunc // called by Settle when set
	sockets   []bool             // what each Settle was told of the repetition
}

func (f *fakeSettler) Settle(ctx context.Context, sockets bool) (hoststate.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, "settle")
	f.sockets = append(f.sockets, sockets)
	f.n++
	if f.cancel != nil {
		f.cancel()
		return hoststate.State{}, ctx.Err()
	}
	if f.err != nil {
		return hoststate.State{}, f.err
	}
	st := hoststate.State{Snapshot: hoststate.Snapshot{TCP: map[string]int{"TIME_WAIT": f.n}, TimeWait: f.n,
		Orphans: -1, TCPMemPages: -1, EphemeralPorts: -1, EphemeralRange: -1, DirtyKB: -1, WritebackKB: -1, CachedKB: -1, MemTotalKB: -1, Load1: -1}}
	if f.undrained {
		st.Undrained = []string{"planted: 5 TIME_WAIT sockets are left"}
	}
	return st, nil
}

func (f *fakeSettler) Done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, "done")
}

// TestEveryRepetitionStartsSettledAndSaysFromWhat: the runner asks the
// host to settle before every repetition (warm-ups too) and tells it when
// the repetition ended; every sample of a repetition carries the state it
// started from, and what did not drain is told as a note.
func TestEveryRepetitionStartsSettledAndSaysFromWhat(t *testing.T) {
	probe := &barrierProbe{}
	reg, a, b := setup(t, probe.def())
	sink := &memSink{}
	hs := &fakeSettler{undrained: true}
	var notes []string
	r := &runner.Runner{Sink: sink, RunID: 1, HostState: hs, Progress: func(p runner.Progress) {
		if p.Note != "" {
			notes = append(notes, p.Note)
		}
	}}
	plan := runner.Plan{
		Targets:   []runner.Target{{Label: "a", Name: "a", Platform: a}, {Label: "b", Name: "b", Platform: b}},
		Jobs:      []runner.Job{job(t, reg, "probe", nil)},
		Instances: []int{1, 2},
		Reps:      2,
		Warmup:    1,
	}
	if err := r.Run(t.Context(), plan); err != nil {
		t.Fatal(err)
	}
	reps := 2 * 2 * 3 // instance counts × targets × (warm-up + reps)
	if want := strings.Repeat("settle done ", reps); strings.Join(hs.events, " ")+" " != want {
		t.Errorf("settler calls %q, want %d alternating settle/done", hs.events, reps)
	}
	if len(sink.batches) != reps {
		t.Fatalf("%d batches, want %d", len(sink.batches), reps)
	}
	for i, batch := range sink.batches {
		want := strconv.Itoa(i + 1) // the batch of the (i+1)-th repetition run
		for _, s := range batch {
			if got := s.Tags[hoststate.TagPrefix+"tcp_time_wait"]; got != want {
				t.Fatalf("repetition %d: sample %s/%d carries tcp_time_wait %q, want %q (tags %v)", i+1, s.Metric, s.Instance, got, want, s.Tags)
			}
		}
	}
	if len(notes) != reps || !strings.Contains(notes[0], "host state before probe on a, 1 instance(s)") || !strings.Contains(notes[0], "planted") {
		t.Errorf("notes %q", notes)
	}
}

// TestUnreadableHostStateRunsOn: a host whose state cannot be read runs
// its repetitions unrecorded; a run stopped while the host settles ends as
// interrupted.
func TestUnreadableHostStateRunsOn(t *testing.T) {
	probe := &barrierProbe{}
	reg, a, _ := setup(t, probe.def())
	sink := &memSink{}
	hs := &fakeSettler{err: errors.New("no /proc here")}
	r := &runner.Runner{Sink: sink, RunID: 1, HostState: hs}
	plan := runner.Plan{
		Targets:   []runner.Target{{Label: "a", Name: "a", Platform: a}},
		Jobs:      []runner.Job{job(t, reg, "probe", nil)},
		Instances: []int{1},
		Reps:      2,
	}
	if err := r.Run(t.Context(), plan); err != nil {
		t.Fatal(err)
	}
	if len(sink.batches) != 2 {
		t.Fatalf("%d batches, want 2", len(sink.batches))
	}
	for _, s := range sink.all() {
		for k := range s.Tags {
			if strings.HasPrefix(k, hoststate.TagPrefix) {
				t.Fatalf("unread state tagged: %v", s.Tags)
			}
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r = &runner.Runner{Sink: &memSink{}, RunID: 2, HostState: &fakeSettler{cancel: cancel}}
	if err := r.Run(ctx, plan); !errors.Is(err, context.Canceled) {
		t.Errorf("stopped while settling: %v, want context.Canceled", err)
	}
}

// TestDuetSettlesOnceForBoth: the two repetitions of a duet start from
// one settled state and carry it both.
func TestDuetSettlesOnceForBoth(t *testing.T) {
	halves, err := runner.DuetHalves()
	if err != nil {
		t.Skip(err)
	}
	var all unix.CPUSet
	unix.SchedGetaffinity(0, &all)
	t.Cleanup(func() { restoreAffinity(&all) })
	probe := &barrierProbe{}
	reg, a, b := setup(t, probe.def())
	sink := &memSink{}
	hs := &fakeSettler{}
	r := &runner.Runner{Sink: sink, RunID: 1, HostState: hs}
	plan := runner.Plan{
		Targets:   []runner.Target{{Label: "a", Name: "a", Platform: a}, {Label: "b", Name: "b", Platform: b}},
		Jobs:      []runner.Job{job(t, reg, "probe", nil)},
		Instances: []int{1},
		Reps:      2,
		Duet:      true,
		DuetCPUs:  halves,
	}
	if err := r.Run(t.Context(), plan); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(hs.events, " "); got != "settle done settle done" {
		t.Errorf("settler calls %q, want one settle per duet", got)
	}
	for _, s := range sink.all() {
		if s.Instance != sample.AggregateInstance {
			continue
		}
		if got, want := s.Tags[hoststate.TagPrefix+"tcp_time_wait"], strconv.Itoa(s.Rep+1); got != want {
			t.Errorf("%s rep %d carries tcp_time_wait %q, want %q", s.Platform, s.Rep, got, want)
		}
	}
}

// TestSettleIsToldWhetherTheRepetitionUsesTheNetwork: the settler waits
// for sockets only before repetitions of workloads that use the network
// (workload.Def.Needs.Network).
func TestSettleIsToldWhetherTheRepetitionUsesTheNetwork(t *testing.T) {
	probe := &barrierProbe{}
	net := probe.def()
	net.Name, net.Needs = "netprobe", workload.Needs{Network: true}
	reg, a, _ := setup(t, probe.def(), net)
	for name, want := range map[string]bool{"probe": false, "netprobe": true} {
		hs := &fakeSettler{}
		r := &runner.Runner{Sink: &memSink{}, RunID: 1, HostState: hs}
		plan := runner.Plan{Targets: []runner.Target{{Label: "a", Name: "a", Platform: a}}, Jobs: []runner.Job{job(t, reg, name, nil)}, Instances: []int{1}, Reps: 2}
		if err := r.Run(t.Context(), plan); err != nil {
			t.Fatal(err)
		}
		if len(hs.sockets) != 2 || hs.sockets[0] != want || hs.sockets[1] != want {
			t.Errorf("%s: settler told sockets=%v, want %v each time", name, hs.sockets, want)
		}
	}
}
