package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/runner"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/stats"
	"github.com/isobench/isobench/internal/store"
)

// The steps of 'isobench run' (runCmd) from its flags to its report.

// runFlags are the flags of 'isobench run'.
type runFlags struct {
	platforms, workloads, hosts multi
	duet, spread                *bool
	instances, reps             *string
	repsCap                     *int
	target                      *float64
	warmup                      *int
	baseline, image             *string
	db, stateDir                *string
	quiet, failFast, details    *bool
	resume                      *int64
	trustHosts, dry             *bool
	tools, htmlOut, cpuIdle     *string
}

// newRunFlags defines the flags of 'isobench run'.
func newRunFlags(st *State) (*flag.FlagSet, *runFlags) {
	fs := newFlags(st, "run", runSynopsis)
	f := &runFlags{}
	// The defaults shown are the real ones; a flag overrides the study
	// file only when it is given (fs.Visit in override).
	fs.Var(&f.platforms, "platform", "`P[:OPTIONS]`: a platform to run on (repeatable)")
	fs.Var(&f.workloads, "workload", "`W[:PARAMS]`: a workload to run (repeatable)")
	fs.Var(&f.hosts, "host", "`ssh://USER@ADDR[:PORT]|local`: run every platform on this host (repeatable; key from ssh-agent, host key from ~/.ssh/known_hosts)")
	f.duet = fs.Bool("duet", false, "run the two platforms at the same time, each on its own half of the CPUs, swapped every repetition, so a noisy neighbour hits both alike (duet benchmarking); ratios are paired per repetition")
	f.cpuIdle = fs.String("cpu-idle", "host", "`host|poll`: poll holds every CPU of this host polling while the run lasts (the kernel's /dev/cpu_dma_latency at 0; needs root, costs power), so an idle CPU never halts: on a VM a halted vCPU comes back slower, which a CPU-limited instance pays in every period it is throttled")
	f.spread = fs.Bool("spread", false, "with --host: run each cell (a workload at one instance count, all its platforms) on one of the hosts, to finish sooner, instead of the whole matrix on every host")
	f.instances = fs.String("instances", "1", "`N,N,...`: instance counts, e.g. 1,2,4")
	f.reps = fs.String("reps", "5", "`N|auto`: measured repetitions per cell and platform (fewer than 5 give no verdict)")
	f.repsCap = fs.Int("reps-cap", defaultRepsCap, "`N`: with --reps auto, the most repetitions")
	f.target = fs.Float64("target", 2, "`PERCENT`: with --reps auto, stop when the median's 95% CI is within ±PERCENT")
	f.warmup = fs.Int("warmup", 0, "`N`: warm-up repetitions before the measured ones (stored, flagged warmup) (default 0, or the study file's warmup:)")
	f.baseline = fs.String("baseline", "", "`LABEL[@N]`: the platform the others are compared with (default native when present); @N pairs every cell with N instances of it, e.g. native@1")
	f.image = fs.String("image", "minimal", "`PROFILE`: image profile for instances ("+strings.Join(image.Profiles(), ", ")+"; the service and transfer workloads choose theirs when it is left out, and spark, spark-cluster and mapreduce always run in their own)")
	f.db = fs.String("db", "isobench.db", "`FILE`: result store (SQLite)")
	f.stateDir = fs.String("state-dir", "", "`DIR`: where images and rootfs trees are kept (default /var/lib/isobench as root, else ~/.cache/isobench; ISOBENCH_STATE)")
	f.quiet = fs.Bool("quiet", false, "no progress display")
	f.failFast = fs.Bool("fail-fast", false, "stop at the first failed cell (by default a failed cell is recorded with its reason and the run goes on)")
	f.details = fs.Bool("details", false, "after the summary, the full tables: every metric, startup phase and instance count")
	f.resume = fs.Int64("resume", 0, "`ID`: continue run ID of --db (interrupted, failed or crashed) from its first unfinished repetition, with its plan")
	f.trustHosts = fs.Bool("trust-hosts", false, "let the study file (or the resumed run's stored plan) name the hosts isobench connects to over SSH with your keys (hosts:, host=, key=, binary=); without it such a file is refused: give the hosts with --host")
	f.dry = fs.Bool("dry-run", false, "print the plan (cells, runs, time estimate, what cannot run) and, as warnings, which platforms are available here and the host tools the workloads need that are missing; then exit: nothing is started")
	f.tools = fs.String("tools", "", "`auto|paper|builtin`: for a built-in study's file (study: block), run the paper's own tools where this host has them (auto: at the paper's and the standard scale) or isobench's own workloads only (builtin); default: the file as written")
	f.htmlOut = fs.String("html", "", "`FILE`: where to write the run's HTML report (default: next to --db, DB-runN.html; 'none' for no page)")
	fs.StringVar(f.htmlOut, "o", "", "`FILE`: the same as --html (as in 'report -o' and 'study run -o')")
	return fs, f
}

// study is what the run carries out: the stored plan of the run resumed
// (--resume; resumed is that run, nil for a new one), or the study file
// given (or none), with the flags given over it.
func (f *runFlags) study(ctx context.Context, st *State, fs *flag.FlagSet) (study Study, resumed *store.Run, err error) {
	if *f.resume != 0 {
		if study, resumed, err = resumeStudy(ctx, fs, *f.db, *f.resume); err != nil {
			return study, resumed, err
		}
	}
	switch n := fs.NArg(); {
	case n == 0 || resumed != nil:
	case n == 1:
		if study, err = loadStudy(fs.Arg(0)); err != nil {
			return study, resumed, err
		}
	default:
		return study, resumed, usage("run takes at most one study file, got %d arguments", fs.NArg())
	}
	return study, resumed, f.override(st, fs, &study, resumed != nil)
}

// override sets what the flags given say over study (flags win over the
// study file), refusing a study file or resumed plan that names SSH hosts
// without --trust-hosts.
func (f *runFlags) override(st *State, fs *flag.FlagSet, study *Study, resuming bool) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if len(f.platforms) > 0 {
		study.Platforms = f.platforms
	}
	if len(f.workloads) > 0 {
		study.Workloads = f.workloads
	}
	if len(f.hosts) > 0 {
		study.Hosts = f.hosts
	}
	if set["spread"] {
		study.Spread = *f.spread
	}
	if set["duet"] {
		study.Duet = *f.duet
	}
	if set["cpu-idle"] {
		study.CPUIdle = *f.cpuIdle
	}
	if fromFile := fs.NArg() == 1 || resuming; fromFile && !*f.trustHosts {
		if named := namedRemotes(*study, len(f.hosts) > 0, len(f.platforms) > 0); len(named) > 0 {
			what := "the study file"
			if resuming {
				what = "the stored plan of the run"
			}
			return usage("%s names hosts to reach over SSH with your credentials (%s): give hosts with --host instead, or pass --trust-hosts once you have read it", what, sanitize(strings.Join(named, ", ")))
		}
	}
	if set["instances"] {
		for _, s := range strings.Split(*f.instances, ",") {
			if strings.TrimSpace(s) == "" {
				return usage("--instances %q: an empty count (want whole numbers from 1 to %d, comma-separated, e.g. 1,2,4)", *f.instances, maxInstances)
			}
		}
		n, err := spec.ParseInts(*f.instances, 1, maxInstances)
		if err != nil {
			return usage("--instances: %v", err)
		}
		study.Instances = n
	}
	if set["reps"] {
		study.Reps = *f.reps
	}
	if set["reps-cap"] {
		study.RepsCap = *f.repsCap
	}
	if set["target"] {
		if !validTarget(*f.target) {
			return usage("--target %v: want a percentage above 0 and below 100, e.g. 2", *f.target)
		}
		study.Target = *f.target
	}
	if set["warmup"] {
		study.Warmup = *f.warmup
	}
	if set["baseline"] {
		study.Baseline = *f.baseline
	}
	if set["image"] {
		study.Image = *f.image
	}
	if set["tools"] {
		if err := withTools(st, study, *f.tools); err != nil {
			return err
		}
	}
	return nil
}

// dryRun is 'run --dry-run': the plan, then what this host lacks for it.
func (st *State) dryRun(ctx context.Context, study Study, stateDir string) error {
	if err := printPlan(st, study); err != nil {
		return err
	}
	st.dryChecks(ctx, st.Stdout, study.Platforms, study.Workloads, study.Image, st.stateDir(stateDir))
	if remote := slices.DeleteFunc(slices.Clone(study.Hosts), func(h string) bool { return h == "local" }); len(remote) > 0 {
		fmt.Fprintf(st.Stdout, "(this host only: %s not asked)\n", strings.Join(remote, ", "))
	}
	return nil
}

// closePlatforms closes the platforms opened, within a minute, even when
// ctx is cancelled.
func closePlatforms(ctx context.Context, opened *[]platform.Platform) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	for _, p := range *opened {
		p.Close(cctx)
	}
}

// openTargets constructs the plan's platforms (adding them to opened, to
// be closed), checks that each one's engine is here and records its facts
// in fingerprint.
func openTargets(ctx context.Context, targets []target, plan runner.Plan, env platform.Env, fingerprint map[string]string, opened *[]platform.Platform) error {
	for i, t := range targets {
		p, err := t.factory.New(ctx, t.opts, env)
		if err != nil {
			return usage("%v", err)
		}
		*opened = append(*opened, p)
		if err := p.Available(ctx); err != nil {
			// The usage was right: this host lacks the engine (exit 1).
			return unavailable(t.opts.Name, err)
		}
		plan.Targets[i].Platform = p
		for k, v := range p.Facts(ctx) {
			fingerprint[plan.Targets[i].Label+"."+k] = v
		}
	}
	return nil
}

// prepareImages prepares each opened platform's image before anything
// starts.
func prepareImages(ctx context.Context, plan runner.Plan) error {
	for _, t := range plan.Targets {
		if pr, ok := t.Platform.(platform.Preparer); ok {
			if err := pr.Prepare(ctx, cmp.Or(t.Image, plan.Image)); err != nil {
				return fmt.Errorf("%s: preparing image %s: %w", t.Label, cmp.Or(t.Image, plan.Image), err)
			}
		}
	}
	return nil
}

// beginRun begins the run in s, or reopens the run resumed, dropping the
// samples of its unfinished repetitions; finished are the repetitions it
// holds already (none for a new run).
func (st *State) beginRun(ctx context.Context, s *store.Store, resumed *store.Run, study Study, fingerprint map[string]string, args []string) (runID int64, finished map[store.RepKey]bool, err error) {
	finished = map[store.RepKey]bool{}
	if resumed == nil {
		if runID, err = s.BeginRun(ctx, study, fingerprint); err != nil {
			return runID, finished, err
		}
		if err := s.SetCommand(ctx, runID, commandLine("run", args)); err != nil {
			return runID, finished, err
		}
		return runID, finished, nil
	}
	runID = resumed.ID
	finished, dropped, err := runner.Resume(ctx, s, runID)
	if err != nil {
		return runID, finished, refusal(err)
	}
	fmt.Fprintf(st.Stderr, "resuming run %d: %d repetitions are in the store already\n", runID, len(finished))
	if dropped > 0 {
		fmt.Fprintf(st.Stderr, "resuming run %d: %d samples of repetitions that did not finish were removed; those repetitions run again\n", runID, dropped)
	}
	return runID, finished, nil
}

// runEnd is what the report of a run that ended needs.
type runEnd struct {
	runID       int64
	err         error // the runner's
	db, htmlOut string
	details     bool
	study       Study
	fingerprint map[string]string
	resumed     *store.Run // nil for a new run
	cannot      []runner.CannotRun
	spread      bool
}

// endRun records how the run ended (done, interrupted, failed) and reports
// it: the summary, what was not run, the spread run's hosts, the details,
// the HTML page and the runner's failures. Its error is the run's.
func (st *State) endRun(ctx context.Context, s *store.Store, r *runner.Runner, e runEnd) error {
	runID, runErr := e.runID, e.err
	status := "done"
	switch {
	case errors.Is(runErr, context.Canceled):
		status = "interrupted"
	case runErr != nil:
		status = "failed"
	}
	if err := s.EndRun(context.WithoutCancel(ctx), runID, status, runErr); err != nil {
		return errors.Join(runErr, err)
	}
	samples, err := s.Samples(context.WithoutCancel(ctx), store.Filter{RunID: runID, NoWarmup: true})
	if err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Fprintf(st.Stdout, "run %d (%s): %d samples in %s\n\n", runID, status, len(samples), e.db)
	if len(samples) > 0 {
		if err := st.runReport(e, status, samples); err != nil {
			return errors.Join(runErr, err)
		}
	}
	if sum := r.Summary(); sum != "" {
		// failed cells and instances not removed, also in the store
		fmt.Fprint(st.Stdout, "\n"+sum)
	}
	if runErr != nil {
		return fmt.Errorf("run %d %s (finished samples are kept in %s): %w", runID, status, e.db, runErr)
	}
	return nil
}

// runReport writes the report of a run's samples: the summary, what was
// not run, the spread run's hosts, the details and the HTML page (a page
// not written is a warning).
func (st *State) runReport(e runEnd, status string, samples []sample.Sample) error {
	runID := e.runID
	cells := report.Cells(samples, report.Options{Baseline: e.study.Baseline, Stats: stats.Options{Seed: runID}, Warmups: e.study.Warmup, WorkloadLabel: st.Workloads.Label, IsHost: st.Platforms.IsHost})
	report.MarkEmulated(cells, e.fingerprint) // a VM platform under TCG: every output says so
	hint := fmt.Sprintf("isobench report --db %s --run %d (or run --details)", e.db, runID)
	if e.details {
		hint = ""
	}
	if err := report.Summary(st.Stdout, cells, report.SummaryOptions{DetailsHint: hint, Warmups: e.study.Warmup}); err != nil {
		return err
	}
	for _, c := range e.cannot {
		fmt.Fprintf(st.Stdout, "not run: %s\n", c)
	}
	if e.spread {
		if err := spreadHosts(st.Stdout, samples); err != nil {
			return err
		}
	}
	if e.details {
		fmt.Fprintln(st.Stdout)
		if err := report.Table(st.Stdout, cells); err != nil {
			return err
		}
	}
	if e.htmlOut != "none" {
		page := e.htmlOut
		if page == "" {
			page = reportPath(e.db, runID)
		}
		fp := e.fingerprint
		if e.resumed != nil {
			fp = e.resumed.Fingerprint
		}
		if err := writeHTML(page, e.db, report.Doc{Run: runID, Status: status, Fingerprint: fp, Cells: cells}); err != nil {
			fmt.Fprintf(st.Stderr, "warning: the HTML report was not written: %v\n", err)
		} else {
			fmt.Fprintf(st.Stdout, "\nHTML report: %s\n", page)
		}
	}
	return nil
}
