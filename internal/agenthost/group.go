package agenthost

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/par"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
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

// Barrier waits until every session finished its untimed setup, then
// releases them all at the same moment: each session is released by its
// own goroutine when a shared channel closes. The skew is the spread of
// their acknowledgements on the host clock (no shared clock is assumed).
func (g Group) Barrier(ctx context.Context) (skew time.Duration, err error) {
	if err := par.Each(len(g), func(i int) error {
		if err := g[i].WaitReady(ctx); err != nil {
			return &InstanceError{Index: i, Err: err}
		}
		return nil
	}); err != nil {
		return 0, err
	}
	gate := make(chan struct{})
	errs := make([]error, len(g))
	var wg sync.WaitGroup
	for i := range g {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-gate
			if err := g[i].Release(); err != nil {
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
	first, last := g[0].Started, g[0].Started
	for _, s := range g[1:] {
		if s.Started.Before(first) {
			first = s.Started
		}
		if s.Started.After(last) {
			last = s.Started
		}
	}
	return last.Sub(first), nil
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
