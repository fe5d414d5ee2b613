package agenthost

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/agentproto"
	"github.com/isobench/isobench/internal/par"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/window"
)

// Group is one agent workload running in several instances, released
// together through one barrier.
type Group []*Session

// StartGroup starts "agent run WORKLOAD PARAMS" in every instance.
func StartGroup(ctx context.Context, insts []platform.Instance, workloadName, params string) Group {
	return StartGroupWith(ctx, insts, workloadName, params, Options{})
}

// StartGroupWith is StartGroup with explicit bounds for every session.
func StartGroupWith(ctx context.Context, insts []platform.Instance, workloadName, params string, o Options) Group {
	g := make(Group, len(insts))
	for i, in := range insts {
		g[i] = StartWith(ctx, in, workloadName, params, o)
	}
	return g
}

// InstanceError is the error of one instance of a group.
type InstanceError struct {
	Index int // the instance's position in the group
	Err   error
}

func (e *InstanceError) Error() string { return fmt.Sprintf("instance %d: %v", e.Index, e.Err) }

func (e *InstanceError) Unwrap() error { return e.Err }

// Barrier kinds (Options.Barrier).
const (
	// BarrierDeadline, the default: the host estimates each agent's clock
	// offset with pings over the session's stdio, then sends every agent
	// the same deadline on its own clock, early; each agent sleeps until
	// it (an absolute clock_nanosleep), so instances start together
	// however late each one reads its line.
	BarrierDeadline = "deadline"
	// BarrierStdin: the host writes "go" to every agent at once and each
	// starts when it reads it, so the skew includes the spread of the
	// engines' stdin delivery (kept for comparison: bench/scale.sh).
	BarrierStdin = "stdin"
)

// pings per instance for the clock offset; the one with the shortest
// round trip is kept.
const pings = 8

// Barrier waits until every session finished its untimed setup, then
// releases them all together (Options.Barrier says how), and returns the
// skew: the spread of the instants the instances started their workloads,
// from the start clocks the agents report, put on the host's clock with
// the estimated offsets (exact when the instances share the host's
// CLOCK_MONOTONIC, as containers do; within half the best ping round trip
// otherwise). Agents that report no clock fall back to the spread of their
// acknowledgements as the host read them.
func (g Group) Barrier(ctx context.Context) (skew time.Duration, err error) {
	if err := par.Each(len(g), func(i int) error {
		if err := g[i].WaitReady(ctx); err != nil {
			return &InstanceError{Index: i, Err: err}
		}
		return nil
	}); err != nil {
		return 0, err
	}
	if len(g) == 0 {
		return 0, nil
	}
	offsets, rtt, err := g.clockOffsets(ctx)
	if err != nil {
		return 0, err
	}
	for i := range g {
		g[i].ClockOffset = offsets[i]
	}
	var release func(i int) error
	switch g[0].opts.Barrier {
	case BarrierStdin:
		release = func(i int) error { return g[i].Release() }
	case "", BarrierDeadline:
		// Far enough ahead that every agent reads its line first: eight
		// of the slowest round trips seen, at least 20 ms, at most 2 s
		// (a line that arrives late starts its agent late: skew).
		margin := min(max(20*time.Millisecond, 8*rtt), 2*time.Second)
		deadline := agentproto.Monotonic() + int64(margin)
		release = func(i int) error { return g[i].ReleaseAt(deadline + offsets[i]) }
	default:
		return 0, fmt.Errorf("unknown barrier %q (want %s or %s)", g[0].opts.Barrier, BarrierDeadline, BarrierStdin)
	}
	gate := make(chan struct{})
	errs := make([]error, len(g))
	var wg sync.WaitGroup
	for i := range g {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-gate
			if err := release(i); err != nil {
				errs[i] = err
				return
			}
			errs[i] = g[i].WaitStarted(ctx)
		}(i)
	}
	close(gate)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return g.spread(offsets), nil
}

// clockOffsets estimates, for every session, the agent's clock minus the
// host's (ns), from the ping with the shortest round trip (Cristian's
// method), and returns the longest round trip of any ping. When every
// offset is smaller than its round trip, the clocks cannot be told apart
// from one shared clock (containers share the host's CLOCK_MONOTONIC) and
// the offsets are taken as 0, which is exact there.
func (g Group) clockOffsets(ctx context.Context) ([]int64, time.Duration, error) {
	offsets := make([]int64, len(g))
	rtts := make([]int64, len(g))   // best round trip per session
	worsts := make([]int64, len(g)) // slowest round trip per session
	if err := par.Each(len(g), func(i int) error {
		best := int64(-1)
		for range pings {
			sent, agent, recv, err := g[i].Ping(ctx)
			if err != nil {
				return &InstanceError{Index: i, Err: fmt.Errorf("barrier clock ping: %w", err)}
			}
			rtt := recv - sent
			if best < 0 || rtt < best {
				best = rtt
				offsets[i] = agent - (sent+recv)/2
			}
			worsts[i] = max(worsts[i], rtt)
		}
		rtts[i] = best
		return nil
	}); err != nil {
		return nil, 0, err
	}
	shared := true
	var worst int64
	for i := range g {
		if abs(offsets[i]) > rtts[i] {
			shared = false
		}
		worst = max(worst, worsts[i])
	}
	if shared {
		clear(offsets)
	}
	return offsets, time.Duration(worst), nil
}

// Wake says how the agents woke at the last release: agentproto.WakeRT
// when every one woke at a realtime priority, WakeNormal when none did,
// "mixed" otherwise, "" for a stdin release.
func (g Group) Wake() string {
	kinds := map[string]bool{}
	for _, s := range g {
		kinds[s.Wake] = true
	}
	switch {
	case len(kinds) == 1:
		for k := range kinds {
			return k
		}
	case len(kinds) == 0:
		return ""
	}
	return "mixed"
}

// spread is the skew of the sessions' starts on the host's clock.
func (g Group) spread(offsets []int64) time.Duration {
	clocks := true
	for _, s := range g {
		clocks = clocks && s.StartClock != 0
	}
	if !clocks {
		first, last := g[0].Started, g[0].Started
		for _, s := range g[1:] {
			if s.Started.Before(first) {
				first = s.Started
			}
			if s.Started.After(last) {
				last = s.Started
			}
		}
		return last.Sub(first)
	}
	first, last := g[0].StartClock-offsets[0], g[0].StartClock-offsets[0]
	for i, s := range g[1:] {
		t := s.StartClock - offsets[i+1]
		first, last = min(first, t), max(last, t)
	}
	return time.Duration(last - first)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// Results waits for every session's metrics and tags.
func (g Group) Results(ctx context.Context) ([][]sample.Metric, []map[string]string, error) {
	ms := make([][]sample.Metric, len(g))
	tags := make([]map[string]string, len(g))
	err := par.Each(len(g), func(i int) error {
		m, t, err := g[i].Result(ctx)
		if err != nil {
			return &InstanceError{Index: i, Err: err}
		}
		ms[i], tags[i] = m, t
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return ms, tags, nil
}

// Abort unblocks every session (cancel their context too).
func (g Group) Abort() {
	for _, s := range g {
		s.Abort()
	}
}

// Window is the common measurement window of the group's last results
// for metric (window.Common), with every instance's timeline put on the
// host's clock. ok is false when an instance tracked no such timeline (a
// workload or agent without tracking) or the timelines are malformed.
func (g Group) Window(metric string) (r window.Result, ok bool, err error) {
	series := make([]window.Series, len(g))
	for i, s := range g {
		var tl *agentproto.Timeline
		for j := range s.Timelines {
			if s.Timelines[j].Metric == metric {
				tl = &s.Timelines[j]
			}
		}
		if tl == nil {
			return window.Result{}, false, nil
		}
		clock := make([]int64, len(tl.Clock))
		for k, c := range tl.Clock {
			clock[k] = c - s.ClockOffset
		}
		series[i] = window.Series{Clock: clock, Count: tl.Count}
	}
	r, err = window.Common(series)
	if err != nil {
		return window.Result{}, false, err
	}
	return r, true, nil
}

// ApplyWindow replaces, in every instance's metrics, each tracked rate
// (workload.Track) by the instance's rate over the window in which every
// instance of the repetition was running, and returns the narrowest such
// window (nil when nothing was tracked). The rate over the instance's own
// interval stays in its tags as METRIC_own. A window that cannot be
// computed (the runs did not overlap at all) is an error: the instances
// did not run concurrently. ms and tags are Results' (tags[i] is made
// when nil).
func (g Group) ApplyWindow(ms [][]sample.Metric, tags []map[string]string) (*window.Result, error) {
	if len(g) < 2 {
		return nil, nil
	}
	var narrowest *window.Result
	seen := map[string]bool{}
	for _, tl := range g[0].Timelines {
		if seen[tl.Metric] {
			continue
		}
		seen[tl.Metric] = true
		w, ok, err := g.Window(tl.Metric)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		for i := range ms {
			for j := range ms[i] {
				if ms[i][j].Name != tl.Metric {
					continue
				}
				if tags[i] == nil {
					tags[i] = map[string]string{}
				}
				tags[i][tl.Metric+"_own"] = strconv.FormatFloat(ms[i][j].Value, 'g', 6, 64)
				ms[i][j].Value = w.Rates[i]
			}
		}
		if narrowest == nil || w.Frac < narrowest.Frac {
			narrowest = &w
		}
	}
	return narrowest, nil
}
