package cli

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/cpuidle"
	"github.com/isobench/isobench/internal/hostinfo"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/progress"
	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/runner"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/stats"
	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/study"
	"github.com/isobench/isobench/internal/workload"
)

const runSynopsis = `run [study.yaml] [--platform P]... [--workload W]... [flags]

Platforms are given as name[:options], e.g. native, docker:cpus=1,memory=2g,network=host,storage=volume.
Workloads as name[:params], e.g. cpu:threads=2,max-prime=10000,duration=10s (see 'isobench workloads').`

func cmdRun(ctx context.Context, st *State, args []string) error {
	return runCmd(ctx, st, args, nil)
}

// runCmd is 'isobench run'; when made is not nil it is set to the id of
// the run this command began or resumed (0 while none), so a caller such
// as 'study run' reports this run, not the store's newest one.
func runCmd(ctx context.Context, st *State, args []string, made *int64) error {
	fs, f := newRunFlags(st)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *f.db == "" {
		return usage("--db: %v", store.ErrEmptyPath)
	}
	if *f.htmlOut != "" && *f.htmlOut != "none" && samePath(*f.htmlOut, *f.db) {
		return usage("--html %s is the result store itself (--db %s): write the report to another file", *f.htmlOut, *f.db)
	}
	study, resumed, err := f.study(ctx, st, fs)
	if err != nil {
		return err
	}
	plan, targets, err := st.plan(&study)
	if err != nil {
		return err
	}
	cannot, err := runner.Preflight(plan)
	if err != nil {
		return refusal(err)
	}
	for _, c := range cannot {
		fmt.Fprintf(st.Stderr, "plan: %s\n", c)
	}
	if *f.dry {
		return st.dryRun(ctx, study, *f.stateDir)
	}
	if err := checkStore(ctx, *f.db); err != nil {
		return err
	}
	env := platform.Env{AgentBinary: st.Executable, StateDir: st.stateDir(*f.stateDir), Log: st.Stderr}
	rec := st.runRecord(ctx, env.StateDir, *f.db) // removes what dead runs left; records this one (clean.go)
	defer rec.End()
	// Construct platforms and check engines before anything starts.
	var opened []platform.Platform
	defer closePlatforms(ctx, &opened)
	fingerprint := hostinfo.Fingerprint()
	var spreader *spreadRun
	if study.Spread { // each cell on one of the hosts (remote.go)
		if spreader, err = openSpread(ctx, st, &study, targets, plan, env, fingerprint, &opened, resumed != nil); err != nil {
			return err
		}
	} else if err := openTargets(ctx, targets, plan, env, fingerprint, &opened); err != nil {
		return err
	}
	hostinfo.AddStorage(fingerprint, "state_dir", env.StateDir)
	release, err := holdCPUIdle(study, plan, targets, fingerprint)
	if err != nil {
		return err
	}
	defer release()
	for _, w := range hostinfo.Warnings(fingerprint) {
		fmt.Fprintln(st.Stderr, "warning:", w)
	}
	if err := prepareImages(ctx, plan); err != nil {
		return err
	}
	s, err := store.Open(ctx, *f.db)
	if err != nil {
		return err
	}
	defer s.Close()
	runID, finished, err := st.beginRun(ctx, s, resumed, study, fingerprint, args)
	if err != nil {
		return err
	}
	if made != nil {
		*made = runID
	}
	st.runStarted(ctx, rec, s, runID)
	for _, c := range cannot {
		runner.RecordCannot(ctx, s, runID, c)
	}
	if plan.Duet {
		fmt.Fprintf(st.Stderr, "duet: %s and %s run each repetition at the same time, on cpus %s and %s, swapped every repetition\n", plan.Targets[0].Label, plan.Targets[1].Label, plan.DuetCPUs[0], plan.DuetCPUs[1])
	}
	if plan.Auto != nil {
		fmt.Fprintf(st.Stderr, "stopping rule: each cell repeats until every platform's median has a 95%% bootstrap interval within ±%g%% of itself (at least 5 repetitions), at most %d repetitions\n", study.Target, plan.Reps)
	}
	r := &runner.Runner{Sink: s, RunID: runID, Token: rec.Token, FailFast: *f.failFast}
	// ISOBENCH_BARRIER=stdin selects the older barrier, for bench/scale.sh's comparison
	r.Barrier = st.Getenv("ISOBENCH_BARRIER")
	disp := progress.New(st.Stderr, st.StderrTTY)
	skipped := 0
	r.Skip = runner.Skipper(plan, cannot, finished, &skipped)
	r.Progress = progressFunc(disp, *f.quiet, &skipped, st.Workloads.Label)
	var runErr error
	if spreader != nil {
		spreader.runID = runID
		runErr = spreader.run(ctx, r, plan)
	} else {
		runErr = r.Run(ctx, plan)
	}
	disp.Done()
	return st.endRun(ctx, s, r, runEnd{
		runID: runID, err: runErr, db: *f.db, htmlOut: *f.htmlOut, details: *f.details,
		study: study, fingerprint: fingerprint, resumed: resumed, cannot: cannot, spread: spreader != nil,
	})
}

type target struct {
	factory platform.Factory
	opts    platform.Options
}

// plan validates the study into a runner plan without contacting anything.
func (st *State) plan(study *Study) (runner.Plan, []target, error) {
	if len(study.Platforms) == 0 {
		return runner.Plan{}, nil, usage("no platform: give --platform native (and e.g. --platform docker) or a study file")
	}
	if err := expandHosts(study); err != nil {
		return runner.Plan{}, nil, usage("%v", err)
	}
	if len(study.Workloads) == 0 {
		return runner.Plan{}, nil, usage("no workload: give --workload cpu (see 'isobench workloads') or a study file")
	}
	if len(study.Instances) == 0 {
		study.Instances = []int{1}
	}
	explicitImage := study.Image != "" // given by --image or the study file
	if study.Image == "" {
		study.Image = "minimal"
	}
	if err := image.CheckProfile(study.Image); err != nil {
		return runner.Plan{}, nil, usage("--image: %v", err)
	}
	if study.Warmup < 0 {
		return runner.Plan{}, nil, usage("--warmup must be ≥ 0")
	}
	if _, err := cpuidle.ParseMode(study.CPUIdle); err != nil {
		return runner.Plan{}, nil, usage("--cpu-idle: %v", err)
	}
	if study.Target != 0 && !validTarget(study.Target) { // NaN, negative, ≥ 100
		return runner.Plan{}, nil, usage("target %v: want a percentage above 0 and below 100, e.g. 2", study.Target)
	}
	plan := runner.Plan{Instances: study.Instances, Warmup: study.Warmup, Image: study.Image}
	switch {
	case study.Reps == "":
		study.Reps = "5"
		plan.Reps = 5
	case study.Reps == "auto":
		capN := cmp.Or(study.RepsCap, defaultRepsCap)
		if study.Target == 0 {
			study.Target = 2
		}
		tgt := study.Target
		if capN < 3 || !validTarget(tgt) {
			return runner.Plan{}, nil, usage("--reps auto needs --reps-cap ≥ 3 and 0 < --target < 100")
		}
		plan.Reps = capN
		plan.Auto = stopRule(tgt / 100)
	default:
		n, err := strconv.Atoi(study.Reps)
		if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(study.Reps, "-") {
			return runner.Plan{}, nil, usage("--reps %q is too large", study.Reps)
		}
		if err != nil || n < 1 {
			return runner.Plan{}, nil, usage(`--reps %q: want a whole number ≥ 1 or "auto"`, study.Reps)
		}
		plan.Reps = n
	}
	var targets []target
	labels := map[string]bool{}
	hostLabel := ""
	for _, p := range study.Platforms {
		f, o, err := st.parsePlatform(p)
		if err != nil {
			return runner.Plan{}, nil, usage("%v", err)
		}
		label := report.Label(o.Name, o.Canonical())
		if labels[label] {
			return runner.Plan{}, nil, usage("platform %s given twice", label)
		}
		labels[label] = true
		targets = append(targets, target{f, o})
		img, requires := "", ""
		if f.Image != nil {
			if img = f.Image(o); img == study.Image {
				img = ""
			}
			requires = f.Image(o)
		}
		if requires != "" && o.Extra["image"] == requires {
			if err := image.CheckProfile(requires); err != nil {
				return runner.Plan{}, nil, usage("%s: image=%s: %v", label, requires, err)
			}
			if img != "" && explicitImage {
				return runner.Plan{}, nil, usage("%s asks for the %s image and --image for %s: give one of them", label, requires, study.Image)
			}
		}
		if img != "" && explicitImage {
			return runner.Plan{}, nil, usage("%s boots an init system, which the %s image has not: it needs --image %s (leave --image out and it gets that image by itself)", label, study.Image, img)
		}
		plan.Targets = append(plan.Targets, runner.Target{Label: label, Name: o.Name, Options: o.Canonical(), Base: o.Base, Host: f.IsHost, Image: img, Requires: requires, Reps: study.PlatformReps[label]})
		if hostLabel == "" && f.IsHost && o.Canonical() == "" {
			hostLabel = label // the host itself, as it is: the natural baseline
		}
	}
	for l, n := range study.PlatformReps {
		if !labels[l] {
			return runner.Plan{}, nil, usage("platform_reps: %s is not one of the platforms (%s)", l, strings.Join(sortedKeys(labels), ", "))
		}
		if n < 1 {
			return runner.Plan{}, nil, usage("platform_reps: %s: %d repetitions; want at least 1", l, n)
		}
	}
	switch {
	case study.Baseline == "" && hostLabel != "":
		study.Baseline = hostLabel
	case study.Baseline == "" && len(plan.Targets) > 1:
		// as hyperfine's reference: the first platform given
		study.Baseline = plan.Targets[0].Label
	case study.Baseline != "":
		bl, at := report.SplitBaseline(study.Baseline) // native@1: against one instance of native
		if labels[study.Baseline] {
			bl, at = study.Baseline, 0
		}
		if pre, n, ok := strings.Cut(study.Baseline, "@"); ok && at == 0 && !labels[bl] && labels[pre] && !strings.Contains(n, "@") {
			return runner.Plan{}, nil, usage("baseline %s: what follows @ is an instance count of %s (one of %s), e.g. %s@%d; %q is not", study.Baseline, pre, joinInts(study.Instances), pre, study.Instances[0], n)
		}
		if !labels[bl] {
			return runner.Plan{}, nil, usage("baseline %q is not one of the platforms (%s)", bl, strings.Join(sortedKeys(labels), ", "))
		}
		if at > 0 && !slices.Contains(study.Instances, at) {
			return runner.Plan{}, nil, usage("baseline %s: %d is not one of the instance counts %v", study.Baseline, at, study.Instances)
		}
	}
	for _, w := range study.Workloads {
		sp, err := spec.Parse(w)
		if err != nil {
			return runner.Plan{}, nil, usage("workload: %v", err)
		}
		def, err := st.lookupWorkload(sp.Name)
		if err != nil {
			return runner.Plan{}, nil, usage("%v", err)
		}
		variants, err := workload.Expand(sp.Params) // threads=1|2|4: one job per value
		if err != nil {
			return runner.Plan{}, nil, usage("workload %s: %v", sp.Name, err)
		}
		for _, v := range variants {
			params, err := def.Resolve(v.Raw)
			if err != nil {
				return runner.Plan{}, nil, usage("%v", err)
			}
			plan.Jobs = append(plan.Jobs, runner.Job{Def: def, Params: params, Tags: v.Tags()})
		}
	}
	if study.Duet {
		if err := duetPlan(&plan, targets); err != nil {
			return runner.Plan{}, nil, usage("--duet: %v", err)
		}
	}
	if err := plan.Validate(); err != nil {
		return runner.Plan{}, nil, usage("%v", err)
	}
	if err := checkRemote(plan, targets, study.Hosts); err != nil {
		return runner.Plan{}, nil, usage("%v", err)
	}
	return plan, targets, nil
}

// validTarget is --target: a percentage strictly between 0 and 100 (NaN is not).
func validTarget(t float64) bool { return t > 0 && t < 100 }

// joinInts writes counts as 1, 2, 4.
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

func sortedKeys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}

// stopRule is --reps auto: stop a cell once every platform's median has a
// bootstrap 95% CI within ±rel of itself (and at least 5 repetitions).
func stopRule(rel float64) runner.StopRule {
	return func(cell runner.Cell, per map[string][]float64) (bool, string) {
		worst := 0.0
		for _, vs := range per {
			if len(vs) < 5 {
				return false, ""
			}
			ok, hw := stats.CIWithin(vs, rel, stats.Options{Seed: int64(len(vs))})
			if !ok {
				return false, ""
			}
			worst = max(worst, hw)
		}
		return true, fmt.Sprintf("%s ×%d: every median's 95%% CI within ±%.1f%% (widest ±%.1f%%): stopping early", cell.Workload, cell.Instances, 100*rel, 100*worst)
	}
}

// token is a short random string naming this run's instances.
func token() string {
	var b [3]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// duetPlan makes plan a duet on this host's CPUs, or says why it cannot
// be one: a platform whose instances schedule their own CPUs (a VM,
// gVisor) or run on another host cannot be bound to this host's CPUs.
func duetPlan(plan *runner.Plan, targets []target) error {
	if len(targets) != 2 {
		return fmt.Errorf("a duet runs exactly two platforms at once (the baseline and one other), got %d", len(targets))
	}
	for _, t := range targets {
		switch {
		case t.factory.OwnCPUs:
			return fmt.Errorf("%s instances schedule their own CPUs: binding inside does not place them on this host's CPUs, so a duet cannot be fair; run without --duet", t.opts.Name)
		case t.opts.Extra["host"] != "":
			return fmt.Errorf("%s runs on another host: a duet shares this host's CPUs", t.opts.Name)
		}
	}
	halves, err := runner.DuetHalves()
	if err != nil {
		return err
	}
	plan.Duet, plan.DuetCPUs = true, halves
	return nil
}

// defaultRepsCap is --reps auto's cap when neither --reps-cap nor the study
// file's reps_cap gives one (run -h's --reps-cap default).
const defaultRepsCap = 30

// printPlan is run --dry-run: the matrix as the study planner sees it
// (cells, runs, estimated time), after every check that needs nothing
// started.
func printPlan(st *State, s Study) error {
	f := study.File{Platforms: s.Platforms, Workloads: s.Workloads, Instances: s.Instances, Reps: s.Reps, Warmup: s.Warmup,
		Baseline: s.Baseline, Image: s.Image, Study: s.About}
	if s.Reps == "auto" {
		f.Reps = strconv.Itoa(max(cmp.Or(s.RepsCap, defaultRepsCap), 3))
	}
	p, err := study.NewPlan(f, st.Workloads, st.Platforms)
	if err != nil {
		return usage("%v", err)
	}
	p.Print(st.Stdout)
	if s.Reps == "auto" {
		fmt.Fprintf(st.Stdout, "reps auto: %s is the cap; cells stop sooner once every median is precise enough\n", f.Reps)
	}
	return nil
}

// withTools applies --tools to a study file's matrix: the paper's tools in
// place of isobench's workloads, or isobench's own (study.File.WithTools),
// saying on stderr what runs.
func withTools(st *State, s *Study, mode string) error {
	if s.About == nil {
		return usage("--tools %s: the file has no study: block (a built-in study's, from 'isobench study show'): there is no paper whose tools to choose", mode)
	}
	f := study.File{Platforms: s.Platforms, Workloads: s.Workloads, Instances: s.Instances, Reps: s.Reps, Warmup: s.Warmup,
		Baseline: s.Baseline, Image: s.Image, Study: s.About}
	g, notes, err := f.WithTools(mode, study.HostHas)
	if err != nil {
		return usage("%v", err)
	}
	if err := g.Check(); err != nil {
		return usage("--tools %s: %v", mode, err)
	}
	s.Workloads, s.Image, s.About = g.Workloads, g.Image, g.Study
	for _, n := range notes {
		fmt.Fprintf(st.Stderr, "tools: %s\n", n)
	}
	return nil
}

// holdCPUIdle records in fingerprint the run's idle mode (cpu_idle) and
// which platforms give their instances a fraction of a CPU (cpu_limited;
// with the fingerprint's cpuidle_halts, for hostinfo.Warnings), and, for
// --cpu-idle poll, holds the CPUs polling until release is called. Only
// this host's: remote hosts' CPUs idle as they do.
func holdCPUIdle(study Study, plan runner.Plan, targets []target, fingerprint map[string]string) (release func(), err error) {
	// a fraction of a CPU (cpus=0.5, or a VM's per-vCPU quota=) throttles
	// even one thread; whole CPUs only a workload with more threads
	var limited []string
	for i, t := range targets {
		if t.factory.FractionalCPU(t.opts) {
			limited = append(limited, plan.Targets[i].Label)
		}
	}
	if len(limited) > 0 {
		fingerprint["cpu_limited"] = strings.Join(limited, ",")
	}
	mode, _ := cpuidle.ParseMode(study.CPUIdle) // checked by plan
	fingerprint["cpu_idle"] = mode
	if mode != cpuidle.Poll {
		return func() {}, nil
	}
	h, err := cpuidle.Hold(cpuidle.QoSPath)
	if err == nil {
		if err = cpuidle.Check(cpuidle.QoSPath); err != nil {
			h.Release()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("--cpu-idle poll: %w (it needs root; or run with --cpu-idle host)", err)
	}
	return func() { h.Release() }, nil
}
