package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/workload"
)

// Failure is a cell the run gave up on for one platform: the workload at
// one instance count on that platform. The run goes on with the other
// platforms and cells unless the runner fails fast.
type Failure struct {
	Cell Cell
	// Label is the cell's workload as users read it (workload.Def.Label:
	// the parameters that differ from their defaults); "" shows every one.
	Label  string
	Target string // the platform's label
	Rep    int    // the repetition that failed (warm-ups are negative)
	Class  string // ClassOOM, ClassTimeout, ClassHung, ClassUnsupported or ClassError
	Err    error
}

// Failure classes.
const (
	ClassOOM         = "oom"
	ClassTimeout     = "timeout"
	ClassHung        = "hung"
	ClassUnsupported = "unsupported"
	ClassError       = "error"
)

func (f Failure) String() string {
	name := f.Label
	if name == "" {
		name = cellName(f.Cell)
	}
	return fmt.Sprintf("%s ×%d on %s (%s): %v", name, f.Cell.Instances, f.Target, repName(f.Rep), f.Err)
}

func cellName(c Cell) string {
	if c.Params == "" {
		return c.Workload
	}
	return c.Workload + ":" + c.Params
}

func repName(rep int) string {
	if rep < 0 {
		return "warm-up"
	}
	return "rep " + strconv.Itoa(rep+1)
}

// Removal is an instance the run could not remove.
type Removal struct {
	Target   string // the platform's label
	Instance string // the instance's ID
	Err      error
}

func (r Removal) String() string {
	return fmt.Sprintf("%s instance %s: %v", r.Target, r.Instance, r.Err)
}

// CellsFailed is Run's error when cells failed and the run went on past
// them: every other cell's samples are stored.
type CellsFailed struct {
	Failures []Failure
}

func (e *CellsFailed) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d cell(s) failed", len(e.Failures))
	for _, f := range e.Failures {
		b.WriteString("; ")
		b.WriteString(f.String())
	}
	return b.String()
}

// Unwrap gives the failures' errors (errors.Is and As look into them).
func (e *CellsFailed) Unwrap() []error {
	out := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		out[i] = f.Err
	}
	return out
}

// OOMError says instances were killed for want of memory.
type OOMError struct {
	Instances []string // "0 (ID)" for each killed instance
	Limit     int64    // the instances' memory limit in bytes; 0: none
	// Inferred is set when no platform confirmed the OOM kill: the agent
	// was killed (status 137) under a memory limit.
	Inferred bool
	// Runtime is set when the agent's Go runtime could not get memory
	// ("fatal error: runtime: out of memory"): a VM's kernel refusing the
	// allocation before its OOM killer has anything to kill.
	Runtime bool
	Err     error // what the instances reported
}

func (e *OOMError) Error() string {
	limit := "no limit: the host ran out"
	if e.Limit > 0 {
		limit = "limit " + spec.FormatSize(e.Limit)
	}
	if e.Inferred {
		limit += "; the agent was killed with status 137"
	}
	if e.Runtime {
		limit += "; the agent's Go runtime could not allocate: fatal error: runtime: out of memory"
	}
	who := "instance " + e.Instances[0]
	if len(e.Instances) > 1 {
		who = "instances " + strings.Join(e.Instances, ", ")
	}
	return fmt.Sprintf("%s: out of memory (%s)", who, limit)
}

func (e *OOMError) Unwrap() error { return e.Err }

// BoundError is why a repetition was given up on after its bound.
type BoundError struct {
	What     string        // e.g. "the timed part"
	Bound    time.Duration // how long it was allowed
	Expected time.Duration // how long it should take (0: not known)
	Slack    time.Duration // given on top of runBoundFactor × Expected
}

func (e *BoundError) Error() string {
	if e.Expected > 0 {
		return fmt.Sprintf("%s was given up after %v (%d× the workload's duration of %v, plus %v)", e.What, e.Bound, runBoundFactor, e.Expected, e.Slack)
	}
	return fmt.Sprintf("%s was given up after %v", e.What, e.Bound)
}

// How long the timed part of an agent workload may take: runBoundFactor
// times its duration parameter, plus Runner.RunSlack for what follows it
// (removing its files, reporting, the exec's end) on a loaded host.
const (
	runBoundFactor  = 3
	defaultRunSlack = 30 * time.Second
)

// expected is how long the timed part of job should take: its duration
// parameter, when it has one.
func expected(job Job) (time.Duration, bool) {
	for _, p := range job.Def.Params {
		if p.Name == "duration" && p.Kind == workload.Duration {
			if d := job.Params.Duration("duration"); d > 0 {
				return d, true
			}
		}
	}
	return 0, false
}

// classify sorts a failed repetition's error.
func classify(err error) string {
	var oom *OOMError
	var stall *agenthost.StallError
	var bound *BoundError
	switch {
	case errors.As(err, &oom):
		return ClassOOM
	case errors.As(err, &stall):
		return ClassHung
	case errors.As(err, &bound), errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case errors.Is(err, platform.ErrUnsupported):
		return ClassUnsupported
	}
	return ClassError
}

// explainOOM turns err into an OOMError when an instance was killed for
// want of memory: as its platform reports (platform.OOMReporter), or, for
// platforms that cannot tell, when an agent was killed with status 137
// under a memory limit. Otherwise err is returned as it is.
func explainOOM(ctx context.Context, insts []platform.Instance, limit int64, err error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var killed []string
	confirmed := false // a platform answered for at least one instance
	for i, in := range insts {
		rep, ok := in.(platform.OOMReporter)
		if in == nil || !ok {
			continue
		}
		yes, qerr := rep.OOMKilled(ctx)
		if qerr != nil {
			continue
		}
		confirmed = true
		if yes {
			killed = append(killed, fmt.Sprintf("%d (%s)", i, shortID(in.ID())))
		}
	}
	if len(killed) > 0 {
		return &OOMError{Instances: killed, Limit: limit, Err: err}
	}
	// the agent's Go runtime failed to allocate: out of memory, whatever
	// the platform saw (a guest kernel may refuse the memory outright)
	for _, ie := range instanceErrors(err) {
		if strings.Contains(ie.Err.Error(), "fatal error: runtime: out of memory") && ie.Index < len(insts) && insts[ie.Index] != nil {
			killed = append(killed, fmt.Sprintf("%d (%s)", ie.Index, shortID(insts[ie.Index].ID())))
		}
	}
	if len(killed) > 0 {
		return &OOMError{Instances: killed, Limit: limit, Runtime: true, Err: err}
	}
	if confirmed || limit == 0 {
		return err
	}
	// no platform can tell: an agent killed with SIGKILL's status under a
	// memory limit was, as good as certainly, killed by the OOM killer
	for _, ie := range instanceErrors(err) {
		var ee *platform.ExitError
		if errors.As(ie.Err, &ee) && ee.Code == 137 && ie.Index < len(insts) && insts[ie.Index] != nil {
			killed = append(killed, fmt.Sprintf("%d (%s)", ie.Index, shortID(insts[ie.Index].ID())))
		}
	}
	if len(killed) > 0 {
		return &OOMError{Instances: killed, Limit: limit, Inferred: true, Err: err}
	}
	return err
}

// instanceErrors finds the per-instance errors of a group in err.
func instanceErrors(err error) []*agenthost.InstanceError {
	switch e := err.(type) {
	case nil:
		return nil
	case *agenthost.InstanceError:
		return []*agenthost.InstanceError{e}
	case interface{ Unwrap() []error }:
		var out []*agenthost.InstanceError
		for _, x := range e.Unwrap() {
			out = append(out, instanceErrors(x)...)
		}
		return out
	}
	return instanceErrors(errors.Unwrap(err))
}

// shortID shortens engine ids the way their tools print them (Docker's
// 64 hex digits to 12).
func shortID(id string) string {
	if len(id) == 64 && strings.Trim(id, "0123456789abcdef") == "" {
		return id[:12]
	}
	return id
}

// record keeps a failure (in the runner and, when the sink keeps them, in
// the store with the run).
func (r *Runner) record(ctx context.Context, t Target, job Job, n int, f Failure) {
	r.mu.Lock()
	r.failures = append(r.failures, f)
	r.mu.Unlock()
	r.store(ctx, store.Failure{Kind: store.FailedCell, Class: f.Class, Platform: t.Name, Options: t.Options,
		Workload: job.Def.Name, Params: job.Params.String(), Instances: n, Rep: max(f.Rep, 0), Warmup: f.Rep < 0, Error: f.Err.Error()})
}

// removalFailed keeps an instance that could not be removed.
func (r *Runner) removalFailed(ctx context.Context, t Target, job Job, n, rep int, id string, err error) {
	r.mu.Lock()
	r.removals = append(r.removals, Removal{Target: t.Label, Instance: id, Err: err})
	r.mu.Unlock()
	r.store(ctx, store.Failure{Kind: store.FailedRemoval, Class: store.FailedRemoval, Platform: t.Name, Options: t.Options,
		Workload: job.Def.Name, Params: job.Params.String(), Instances: n, Rep: max(rep, 0), Warmup: rep < 0, Object: id, Error: err.Error()})
}

func (r *Runner) store(ctx context.Context, f store.Failure) {
	fs, ok := r.Sink.(FailureSink)
	if !ok {
		return
	}
	f.RunID = r.RunID
	if err := fs.AddFailure(context.WithoutCancel(ctx), f); err != nil {
		r.mu.Lock()
		r.storeErrs = append(r.storeErrs, err)
		r.mu.Unlock()
	}
}

// FailureSink is implemented by sinks that also keep failed cells and
// failed removals with the run (the store does).
type FailureSink interface {
	AddFailure(ctx context.Context, f store.Failure) error
}

// Failures lists the cells that failed so far, in order.
func (r *Runner) Failures() []Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Failure(nil), r.failures...)
}

// Removals lists the instances that could not be removed, in order.
func (r *Runner) Removals() []Removal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Removal(nil), r.removals...)
}

// Summary writes the failed cells and failed removals for the end of a
// run; nothing when there were none.
func (r *Runner) Summary() string {
	var b strings.Builder
	if fs := r.Failures(); len(fs) > 0 {
		fmt.Fprintf(&b, "failed cells (%d; the other cells ran):\n", len(fs))
		for _, f := range fs {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	if rs := r.Removals(); len(rs) > 0 {
		fmt.Fprintf(&b, "instances not removed (%d; remove them by hand or with 'isobench clean'):\n", len(rs))
		for _, x := range rs {
			fmt.Fprintf(&b, "  %s\n", x)
		}
	}
	return b.String()
}
