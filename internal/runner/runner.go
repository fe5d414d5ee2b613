// Package runner executes a study: every workload × instance count ×
// repetition on every platform, interleaving platforms (A B, B A, A B ...)
// so drift on a noisy host hits all of them alike and none always runs
// first, releasing concurrent
// instances through a barrier, and handing each repetition's samples to the
// sink as soon as it is done.
package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/cpulist"
	"github.com/isobench/isobench/internal/hoststate"
	"github.com/isobench/isobench/internal/par"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/platformd"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/window"
	"github.com/isobench/isobench/internal/workload"
)

// Target is one platform with its options, as it appears in a study.
type Target struct {
	Label    string // the full spec, e.g. "docker:network=host"; unique in a plan
	Name     string // platform name, e.g. "docker"
	Options  string // canonical options, e.g. "network=host"
	Platform platform.Platform
	Base     platform.Spec
	// Image is the image profile this target's instances need
	// (platform.Factory.Image), "" for the plan's.
	Image string
	// Requires is the image profile the platform itself requires
	// (platform.Factory.Image: a system container boots the debian
	// image's init; docker:image=tools asks for the tools image) whether
	// or not it is the plan's; "" when any will do.
	// Image is cleared when it is the plan's; Requires is not, so that
	// Preflight still sees a workload with an image of its own cannot
	// run there.
	Requires string
	// Host: the platform's instances are the host itself
	// (platform.Factory.IsHost), with its network and servers.
	Host bool
	// Tags are added to every sample of the target (e.g. host= when a
	// spread run runs the target on one of several hosts).
	Tags map[string]string
	// Reps, when above 0, caps this target's measured repetitions per
	// cell below the plan's (an emulated VM at a scale meant for
	// verdicts: no verdict can come from it, and each repetition boots
	// VMs); the stopping rule then leaves it out once it is done.
	Reps int
}

// repsOf is how many measured repetitions t runs per cell in p.
func repsOf(p Plan, t Target) int {
	if t.Reps > 0 && t.Reps < p.Reps {
		return t.Reps
	}
	return p.Reps
}

// Job is one workload with resolved parameters.
type Job struct {
	Def    workload.Def
	Params workload.Params
	// Tags are added to every sample of the job (e.g. sweep=threads when
	// the job is one value of a parameter sweep).
	Tags map[string]string
}

// Plan is the matrix to run.
type Plan struct {
	Targets   []Target
	Jobs      []Job
	Instances []int
	Reps      int // measured repetitions per cell and platform (the cap with Auto)
	Warmup    int // unrecorded-by-default warm-up repetitions (stored, flagged warmup)
	// Auto, when set, is asked after each round of repetitions whether a
	// cell may stop early (the stopping rule); nil means fixed Reps.
	Auto StopRule
	// Image is the image profile instances are created from.
	Image string
	// Duet runs the two targets of each repetition at the same time, each
	// bound to its own half of the host's CPUs, the halves swapped every
	// repetition (Bulej et al., "Duet Benchmarking", ICPE 2020): noise
	// from a neighbour then hits both alike, and the paired ratio per
	// repetition cancels it. It needs exactly two targets and in-guest
	// workloads (the agent binds itself; agentproto.CPUsArg).
	Duet bool
	// DuetCPUs are the two CPU lists of a duet ("0" and "1"), given to
	// the first and second target in even repetitions, swapped in odd
	// ones. Empty: the host's online CPUs split in halves.
	DuetCPUs [2]string
}

// StopRule decides, from the values measured so far for one cell (per
// target label, in repetition order), whether more repetitions are needed.
type StopRule func(cell Cell, perTarget map[string][]float64) (stop bool, why string)

// Cell identifies a workload at one instance count.
type Cell struct {
	Workload  string
	Params    string
	Instances int
}

// Sink receives samples; the store implements it.
type Sink interface {
	Add(ctx context.Context, s []sample.Sample) error
}

// RepMarker is a Sink that also records which repetitions finished
// without error (the store, for 'run --resume': a repetition whose
// samples are only partly there, interrupted or failed, runs again).
type RepMarker interface {
	MarkRep(ctx context.Context, runID int64, k sample.RepKey) error
}

// Progress is reported before each repetition and at each cell's end.
type Progress struct {
	Cell        Cell
	CellIndex   int // 0-based
	Cells       int
	Target      string
	Rep         int // 0-based among measured reps; warm-ups count from -Warmup
	Reps        int
	Done, Total int // repetitions (of all targets) done and planned
	Elapsed     time.Duration
	Note        string // e.g. why a cell stopped early
}

// Runner runs plans.
type Runner struct {
	Sink     Sink
	RunID    int64
	Progress func(Progress)
	// InstanceTimeout bounds creating and closing instances.
	InstanceTimeout time.Duration
	// Token makes instance names unique across stores and processes; it is
	// also put on every instance as the label RunLabel.
	Token string
	// FailFast ends the run at the first failed repetition. Otherwise a
	// failed repetition fails its cell on that platform only: the failure
	// is recorded with its reason (Failures, and the sink when it is a
	// FailureSink) and the run goes on with the other cells.
	FailFast bool
	// Silence is how long an agent may go without a heartbeat before its
	// repetition is given up on as hung (0: agenthost.DefaultSilence).
	Silence time.Duration
	// Barrier is how instances are released together
	// (agenthost.BarrierDeadline when empty, or agenthost.BarrierStdin).
	Barrier string
	// RunSlack bounds the timed part of an agent workload with a duration
	// parameter: it is given up on after 3× its duration plus RunSlack
	// (for its cleanup and reporting on a loaded host), so a 1 s workload
	// that hangs is not waited on for minutes. 0 means 30 s.
	RunSlack time.Duration
	// Skip, when set, is asked before each repetition (rep as in
	// Progress: warm-ups are negative); a repetition it skips counts as
	// done and is not run (resuming a run whose store has it already).
	Skip func(target string, cell Cell, rep int) bool
	// HostState is asked before every repetition of a target on this
	// machine (not one reached through a remote platform) to let what
	// the repetitions before left on the host drain and to say what
	// state the repetition starts from; that state goes on every sample
	// of the repetition as tags (hoststate.TagPrefix), for the report to
	// flag repetitions that started from a different state than their
	// peers. Nil means a hoststate.Settler with its defaults, made at Run.
	HostState HostSettler

	seq       atomic.Int64
	mu        sync.Mutex
	failures  []Failure
	removals  []Removal
	storeErrs []error
}

// HostSettler settles the host between repetitions (hoststate.Settler).
type HostSettler interface {
	// Settle is called before a repetition; it may wait, bounded, for
	// the host to drain and fails only when ctx ends or nothing can be
	// read.
	Settle(ctx context.Context, sockets bool) (hoststate.State, error)
	// Done is called when that repetition has ended (also when it
	// failed).
	Done()
}

// RunLabel is the label carrying the runner's Token on every instance.
const RunLabel = "isobench.run"

// name is unique per instance; platforms add their own "isobench-" prefix.
func (r *Runner) name() string {
	return fmt.Sprintf("r%d%s-%d", r.RunID, r.Token, r.seq.Add(1))
}

// Validate checks a plan before anything starts.
func (p Plan) Validate() error {
	if len(p.Targets) == 0 {
		return errors.New("no platform given: add --platform native (or more)")
	}
	if len(p.Jobs) == 0 {
		return errors.New("no workload given: add --workload cpu (or more)")
	}
	if len(p.Instances) == 0 {
		return errors.New("no instance count given: add --instances 1")
	}
	if p.Reps < 1 {
		return fmt.Errorf("reps must be at least 1, got %d", p.Reps)
	}
	if p.Duet {
		if len(p.Targets) != 2 {
			return fmt.Errorf("a duet runs exactly two platforms at once (the baseline and one other), got %d", len(p.Targets))
		}
		for _, j := range p.Jobs {
			if j.Def.Agent == nil {
				return fmt.Errorf("workload %s manages its own instances from the host: a duet binds in-guest workloads only (leave it out, or run without --duet)", j.Def.Name)
			}
		}
		for _, c := range p.DuetCPUs {
			if _, err := cpulist.Parse(c); err != nil {
				return fmt.Errorf("duet CPUs: %w", err)
			}
		}
	}
	if p.Warmup < 0 {
		return fmt.Errorf("warmup must not be negative, got %d", p.Warmup)
	}
	seen := map[string]bool{}
	for _, t := range p.Targets {
		if seen[t.Label] {
			return fmt.Errorf("platform %q given twice", t.Label)
		}
		seen[t.Label] = true
	}
	return nil
}

// Run executes the plan; samples of finished repetitions are in the sink
// as soon as each one ends. A failed repetition fails its cell on that
// platform: the rest of the plan still runs and Run returns *CellsFailed at
// the end (with FailFast, the first failure at once). A cancelled ctx ends
// the run with an error wrapping ctx's error, whatever the instances
// reported while they were being stopped. Every instance created is
// closed before Run returns; those that could not be are in Removals.
func (r *Runner) Run(ctx context.Context, p Plan) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if r.InstanceTimeout == 0 {
		r.InstanceTimeout = 5 * time.Minute
	}
	settler := r.HostState
	if settler == nil {
		settler = hoststate.NewSettler(hoststate.Options{})
	}
	start := time.Now()
	cells := len(p.Jobs) * len(p.Instances)
	total := 0
	for _, t := range p.Targets {
		total += cells * (p.Warmup + repsOf(p, t))
	}
	done := 0
	ci := 0
	for _, job := range p.Jobs {
		for _, n := range p.Instances {
			cell := Cell{Workload: job.Def.Name, Params: job.Params.String(), Instances: n}
			values := map[string][]float64{}
			failed := map[string]bool{} // targets this cell gave up on
			stopped := false
			for rep := -p.Warmup; rep < p.Reps && len(failed) < len(p.Targets); rep++ {
				prog := func(target, note string) {
					if r.Progress != nil {
						r.Progress(Progress{Cell: cell, CellIndex: ci, Cells: cells, Target: target, Rep: rep, Reps: p.Reps, Done: done, Total: total, Elapsed: time.Since(start), Note: note})
					}
				}
				var ran map[string]repOutcome // a duet's two repetitions, run at once
				if p.Duet {
					var err error
					if ran, err = r.duetRep(ctx, p, settler, job, cell, rep, failed, prog); err != nil {
						return err
					}
				}
				for _, t := range rotate(p.Targets, rep+p.Warmup) {
					if failed[t.Label] || rep >= repsOf(p, t) {
						continue
					}
					if r.Skip != nil && r.Skip(t.Label, cell, rep) {
						done++
						continue
					}
					where := fmt.Sprintf("%s on %s, %d instance(s), %s", job.Def.Name, t.Label, n, repName(rep))
					var samples []sample.Sample
					var err error
					if p.Duet {
						samples, err = ran[t.Label].samples, ran[t.Label].err
					} else {
						prog(t.Label, "")
						var stateTags map[string]string
						_, _, onRemote := platformd.Machine(t.Platform)
						if !onRemote {
							if stateTags, err = r.settle(ctx, settler, job.Def.Needs.Network, where, func(note string) { prog(t.Label, note) }); err != nil {
								return err
							}
						}
						samples, err = r.rep(ctx, p, t, job, n, rep, stateTags)
						if !onRemote {
							settler.Done()
						}
					}
					if len(samples) > 0 {
						// keep what finished even when the context is gone
						if serr := r.Sink.Add(context.WithoutCancel(ctx), samples); serr != nil {
							return errors.Join(err, serr)
						}
					}
					if err != nil {
						if stoppedSoon(ctx) {
							// stopped by the user: what the instances said
							// while being stopped is a consequence
							return interrupted(ctx, where, err)
						}
						f := Failure{Cell: cell, Label: job.Def.Label(cell.Params), Target: t.Label, Rep: rep, Class: classify(err), Err: err}
						r.record(ctx, t, job, n, f)
						if r.FailFast {
							return fmt.Errorf("%s: %w", where, err)
						}
						failed[t.Label] = true
						delete(values, t.Label)
						total -= repsOf(p, t) - rep - 1 // this target's repetitions left in the cell
						prog(t.Label, fmt.Sprintf("failed: %s: %v (going on with the rest)", where, err))
						continue
					}
					if m, ok := r.Sink.(RepMarker); ok {
						k := sample.RepKey{Platform: t.Name, Options: t.Options, Workload: job.Def.Name, Params: job.Params.String(),
							Instances: n, Rep: rep, Warmup: rep < 0}
						if rep < 0 {
							k.Rep = rep + p.Warmup
						}
						if err := m.MarkRep(context.WithoutCancel(ctx), r.RunID, k); err != nil {
							return err
						}
					}
					done++
					if rep >= 0 {
						if v, ok := primary(samples); ok {
							values[t.Label] = append(values[t.Label], v)
						}
					}
				}
				if rep >= 0 && p.Auto != nil && rep+1 < p.Reps {
					// the targets that are done (capped) have no say
					live := maps.Clone(values)
					for _, t := range p.Targets {
						if repsOf(p, t) <= rep+1 {
							delete(live, t.Label)
						}
					}
					if stop, why := p.Auto(cell, live); stop && len(live) > 0 {
						stopped = true
						for _, t := range p.Targets {
							if !failed[t.Label] {
								total -= max(0, repsOf(p, t)-rep-1)
							}
						}
						prog("", why)
						break
					}
				}
			}
			if p.Auto != nil && !stopped && len(failed) < len(p.Targets) && r.Progress != nil {
				r.Progress(Progress{Cell: cell, CellIndex: ci, Cells: cells, Rep: p.Reps - 1, Reps: p.Reps, Done: done, Total: total, Elapsed: time.Since(start),
					Note: fmt.Sprintf("%s ×%d: the cap of %d repetitions was reached before the target precision", cell.Workload, cell.Instances, p.Reps)})
			}
			ci++
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	if len(r.failures) > 0 {
		err = &CellsFailed{Failures: append([]Failure(nil), r.failures...)}
	}
	if len(r.storeErrs) > 0 {
		err = errors.Join(err, fmt.Errorf("failures could not be stored: %w", errors.Join(r.storeErrs...)))
	}
	return err
}

// repOutcome is one platform's repetition in a duet.
type repOutcome struct {
	samples []sample.Sample
	err     error
}

// duetRep runs one repetition of the cell on both platforms of a duet at
// once, each on its half of the CPUs (swapped every repetition), after
// settling the host once for both. Targets that failed the cell or that
// r.Skip skips are left out. Only a stopped run is an error; each
// platform's own failure is in its outcome.
func (r *Runner) duetRep(ctx context.Context, p Plan, settler HostSettler, job Job, cell Cell, rep int, failed map[string]bool, prog func(target, note string)) (map[string]repOutcome, error) {
	ran := map[string]repOutcome{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var stateTags map[string]string
	settled := false
	for i, t := range p.Targets {
		if failed[t.Label] || (r.Skip != nil && r.Skip(t.Label, cell, rep)) {
			continue
		}
		prog(t.Label, "")
		if !settled {
			// both start from the same state (a duet runs on this
			// machine only)
			where := fmt.Sprintf("%s, %d instance(s), %s", job.Def.Name, cell.Instances, repName(rep))
			var err error
			if stateTags, err = r.settle(ctx, settler, job.Def.Needs.Network, where, func(note string) { prog("", note) }); err != nil {
				wg.Wait()
				return nil, err
			}
			settled = true
		}
		cpus := p.DuetCPUs[(i+rep+p.Warmup)%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			samples, err := r.repOn(ctx, p, t, job, cell.Instances, rep, cpus, stateTags)
			mu.Lock()
			ran[t.Label] = repOutcome{samples, err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if settled {
		settler.Done()
	}
	return ran, nil
}

// settle lets the host drain before a repetition (where names it) and
// returns the state it starts from as sample tags; what did not drain is
// told to note. Only a stopped run is an error: a host whose state cannot
// be read runs on, unrecorded.
func (r *Runner) settle(ctx context.Context, s HostSettler, sockets bool, where string, note func(string)) (map[string]string, error) {
	st, err := s.Settle(ctx, sockets)
	if err != nil {
		if stoppedSoon(ctx) {
			return nil, interrupted(ctx, where, err)
		}
		return nil, nil
	}
	if len(st.Undrained) > 0 {
		note(fmt.Sprintf("host state before %s (recorded; the report flags repetitions that started differently): %s", where, strings.Join(st.Undrained, "; ")))
	}
	return st.Tags(), nil
}

// interruptGrace is how long a failed repetition waits for the run's
// context to end before it counts as a failure. A terminal's Ctrl-C goes
// to the whole process group: an instance process caught between fork and
// setpgid dies of it a moment before isobench's own handler cancels the
// run, and its death is then the interruption, not a failed cell.
const interruptGrace = 250 * time.Millisecond

// stoppedSoon reports whether ctx is done now or within interruptGrace.
func stoppedSoon(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	t := time.NewTimer(interruptGrace)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
	}
}

// interrupted is the error of a run stopped through ctx: it wraps ctx's
// error (context.Canceled for Ctrl-C), so the run counts as interrupted
// even when an instance reported its own end first, as a string.
func interrupted(ctx context.Context, where string, err error) error {
	if errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%s: %w", where, err)
	}
	return fmt.Errorf("%s: %w (while stopping: %v)", where, ctx.Err(), err)
}

// rotate returns the targets in the order of round k: every round runs
// every platform once (interleaved, never all of A then all of B), and the
// starting platform moves on each round (A B, B A, A B... for two), so no
// platform always runs first, right after the previous round's teardown.
func rotate(ts []Target, k int) []Target {
	n := len(ts)
	out := make([]Target, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, ts[(i+k)%n])
	}
	return out
}

// primary is the value the stopping rule watches: the first metric's
// aggregate over the instances of one repetition.
func primary(samples []sample.Sample) (float64, bool) {
	var first string
	for _, s := range samples {
		if s.Instance == sample.AggregateInstance && !sample.Bookkeeping(s.Metric) {
			if first == "" {
				first = s.Metric
			}
			if s.Metric == first {
				return s.Value, true
			}
		}
	}
	return 0, false
}

// rep runs one repetition of one job on one target with n instances;
// stateTags (the host's state it started from) go on every sample.
func (r *Runner) rep(ctx context.Context, p Plan, t Target, job Job, n, rep int, stateTags map[string]string) ([]sample.Sample, error) {
	return r.repOn(ctx, p, t, job, n, rep, "", stateTags)
}

// repOn is rep with the agents bound to cpus (a CPU list; "" for none).
func (r *Runner) repOn(ctx context.Context, p Plan, t Target, job Job, n, rep int, cpus string, stateTags map[string]string) ([]sample.Sample, error) {
	timeout := 10 * time.Minute
	if job.Def.Timeout != nil {
		timeout = job.Def.Timeout(job.Params)
	}
	// A workload that runs its instances from an image of its own
	// (workload.Needs.Image: spark's) gets it whatever the run's --image,
	// prepared here, outside the repetition's bound (a cold image is built
	// first; later repetitions find it ready); the host itself (native,
	// here or over SSH) has no image to prepare.
	img := cmp.Or(job.Def.Needs.Image, t.Image, p.Image)
	if job.Def.Needs.Image != "" && !t.Host {
		if pr, ok := t.Platform.(platform.Preparer); ok {
			if err := pr.Prepare(ctx, img); err != nil {
				return nil, fmt.Errorf("preparing the %s image %s runs in: %w", img, job.Def.Name, err)
			}
		}
	}
	bound := timeout + r.InstanceTimeout
	ctx, cancel := context.WithTimeoutCause(ctx, bound, &BoundError{What: fmt.Sprintf("the repetition (the workload's timeout of %v and %v to create and remove instances)", timeout, r.InstanceTimeout), Bound: bound})
	defer cancel()
	base := t.Base
	base.Image = img
	base.Labels = map[string]string{platform.Label: "1"}
	if r.Token != "" {
		base.Labels[RunLabel] = r.Token
	}
	repIndex := rep // warm-ups are numbered 0..Warmup-1 with the warmup flag
	if rep < 0 {
		repIndex = rep + p.Warmup
	}
	mk := func(m sample.Metric, instance int, tags map[string]string, start time.Time, dur time.Duration) sample.Sample {
		if len(job.Tags) > 0 || len(t.Tags) > 0 || len(stateTags) > 0 {
			tags = maps.Clone(tags)
			if tags == nil {
				tags = map[string]string{}
			}
			maps.Copy(tags, stateTags)
			maps.Copy(tags, t.Tags)
			maps.Copy(tags, job.Tags)
		}
		return sample.Sample{
			RunID: r.RunID, Platform: t.Name, Options: t.Options, Workload: job.Def.Name, Params: job.Params.String(),
			Instances: n, Instance: instance, Rep: repIndex, Warmup: rep < 0,
			Metric: m.Name, Unit: m.Unit, Better: m.Better, Value: m.Value, Start: start, Duration: dur, Tags: tags,
		}
	}
	start := time.Now()
	var results []workload.InstanceResult
	var ar agentRun
	var err error
	if job.Def.Host != nil {
		// a workload whose ends talk over the network (Needs.Network: a
		// server and its clients on the host or in other instances) has
		// them compete for the CPU: every instance's processes are one
		// group, on every platform alike (platform.Spec.CPUGroup), so that
		// the client's share does not depend on whether the platform
		// groups them. Others (startup, footprint) keep native as it is.
		base := base
		base.CPUGroup = job.Def.Needs.Network
		env := workload.HostEnv{Platform: t.Platform, Base: base, Instances: n, NewName: r.name,
			Window: func(w window.Result) { ar.window = &w }}
		results, err = job.Def.Host(ctx, job.Params, env)
	} else {
		results, ar, err = r.agentRep(ctx, t, base, job, n, rep, cpus)
	}
	dur := time.Since(start)
	if err != nil {
		return nil, err
	}
	var out []sample.Sample
	byMetric := map[string][]float64{}
	proto := map[string]sample.Metric{}
	var order []string
	for _, res := range results {
		for _, m := range res.Metrics {
			if err := m.Validate(); err != nil {
				return nil, err
			}
			out = append(out, mk(m, res.Instance, res.Tags, start, dur))
			if _, ok := proto[m.Name]; !ok {
				proto[m.Name] = m
				order = append(order, m.Name)
			}
			byMetric[m.Name] = append(byMetric[m.Name], m.Value)
		}
	}
	var aggTags map[string]string
	if len(results) > 0 {
		aggTags = results[0].Tags
	}
	for _, name := range order {
		m := proto[name]
		if v, ok := sample.Aggregate(m.Agg, byMetric[name]); ok {
			m.Value = v
			out = append(out, mk(m, sample.AggregateInstance, aggTags, start, dur))
		}
	}
	if job.Def.Agent != nil && n > 1 {
		skewTags := aggTags
		if ar.wake != "" {
			// how the agents woke at the release (agentproto.WakeTag)
			skewTags = maps.Clone(aggTags)
			if skewTags == nil {
				skewTags = map[string]string{}
			}
			skewTags["wake"] = ar.wake
		}
		out = append(out, mk(sample.Metric{Name: sample.SkewMetric, Value: float64(ar.skew) / float64(time.Millisecond), Unit: "ms", Better: sample.Lower}, sample.AggregateInstance, skewTags, start, dur))
		// a timed workload that tracked nothing: its rates are each
		// instance's own, and the skew says how much of the run the
		// instances can have shared
		if d, ok := expected(job); ok && ar.window == nil {
			share := 100 * max(0, 1-float64(ar.skew)/float64(d))
			out = append(out, mk(sample.Metric{Name: sample.UnwindowedMetric, Value: share, Unit: "%", Better: sample.Higher}, sample.AggregateInstance, aggTags, start, dur))
		}
	}
	if ar.window != nil { // several instances' common window (ApplyWindow: none for one)
		wtags := maps.Clone(aggTags)
		if wtags == nil {
			wtags = map[string]string{}
		}
		wtags["window_ms"] = strconv.FormatFloat(float64(ar.window.Overlap)/float64(time.Millisecond), 'f', 1, 64)
		out = append(out, mk(sample.Metric{Name: sample.WindowMetric, Value: 100 * ar.window.Frac, Unit: "%", Better: sample.Higher}, sample.AggregateInstance, wtags, start, dur))
	}
	return out, nil
}

// agentRun is what an agent repetition tells beside its results: the
// barrier's skew, how the agents woke (agenthost.Group.Wake) and, for
// several instances whose workload tracked its work, their common window.
type agentRun struct {
	skew   time.Duration
	wake   string
	window *window.Result
}

// agentRep creates n instances, runs the agent workload in each, releases
// them together and collects their metrics. Instances are always closed;
// those that cannot be are recorded as failed removals.
// agentRep runs one repetition of an in-guest workload on n instances; it
// returns their results, the barrier's skew and how the agents woke
// (agenthost.Group.Wake).
func (r *Runner) agentRep(ctx context.Context, t Target, base platform.Spec, job Job, n, rep int, cpus string) ([]workload.InstanceResult, agentRun, error) {
	insts := make([]platform.Instance, n)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.InstanceTimeout)
		defer cancel()
		par.Each(n, func(i int) error {
			if in := insts[i]; in != nil {
				if err := in.Close(cctx); err != nil {
					r.removalFailed(ctx, t, job, n, rep, in.ID(), err)
				}
			}
			return nil
		})
	}()
	if err := par.Each(n, func(i int) error {
		s := base
		s.Name = r.name()
		in, err := t.Platform.Create(ctx, s)
		if err != nil {
			return fmt.Errorf("create instance %d: %w", i, err)
		}
		insts[i] = in
		return nil
	}); err != nil {
		return nil, agentRun{}, err
	}
	// Every exec ends with this context: cancelling it unblocks them all.
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := agenthost.StartGroupWith(ectx, insts, job.Def.Name, job.Params.String(), agenthost.Options{Silence: r.Silence, Barrier: r.Barrier, CPUs: cpus})
	skew, err := g.Barrier(ectx)
	if err != nil {
		g.Abort()
		return nil, agentRun{}, explainOOM(ctx, insts, base.Memory, err)
	}
	// the timed part is bounded by the workload's duration, so a
	// workload that hangs while its agent still beats is given up on too
	rctx := ectx
	if d, ok := expected(job); ok {
		slack := r.RunSlack
		if slack <= 0 {
			slack = defaultRunSlack
		}
		bound := runBoundFactor*d + slack
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeoutCause(ectx, bound, &BoundError{What: "the timed part", Bound: bound, Expected: d, Slack: slack})
		defer cancel()
	}
	ms, tags, err := g.Results(rctx)
	if err != nil {
		g.Abort()
		return nil, agentRun{}, explainOOM(ctx, insts, base.Memory, err)
	}
	win, err := g.ApplyWindow(ms, tags)
	if err != nil {
		return nil, agentRun{}, err
	}
	results := make([]workload.InstanceResult, n)
	for i := range insts {
		all := maps.Clone(insts[i].Facts(ectx))
		if all == nil {
			all = map[string]string{}
		}
		maps.Copy(all, tags[i])
		results[i] = workload.InstanceResult{Instance: i, Metrics: ms[i], Tags: all}
	}
	return results, agentRun{skew: skew, wake: g.Wake(), window: win}, nil
}

// DuetHalves splits the CPUs this process may run on into two halves for
// a duet ("0" and "1" on two CPUs). It fails with fewer than two CPUs.
func DuetHalves() ([2]string, error) {
	cpus, err := onlineCPUs()
	if err != nil {
		return [2]string{}, err
	}
	if len(cpus) < 2 {
		return [2]string{}, fmt.Errorf("a duet needs two CPUs, one per platform; this host has %d", len(cpus))
	}
	h := len(cpus) / 2
	return [2]string{cpulist.Format(cpus[:h]), cpulist.Format(cpus[h : 2*h])}, nil
}
