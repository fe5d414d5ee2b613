package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/stats"
	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/study"
)

const studySynopsis = `study list | show ID [--scale standard|quick|paper] | fidelity [ID] [--scale S] | run ID [--scale standard|quick|paper] [--tools auto|paper|builtin] [--db FILE] [-o FILE] [--platform P]... [--reps N|auto] [--dry-run]

The studies isobench reproduces, built in as study files ('isobench study show ID > s.yaml'
gives one to edit and run with 'isobench run s.yaml'). 'study fidelity' prints each experiment's
ledger against its paper: tool, parameters, platforms, layout, statistic and repetitions, each the
same or why not.`

func cmdStudy(ctx context.Context, st *State, args []string) error {
	if len(args) == 0 {
		return usage("study needs a subcommand: list, show ID, fidelity [ID] or run ID (usage: isobench %s)", strings.SplitN(studySynopsis, "\n", 2)[0])
	}
	switch args[0] {
	case "list":
		return studyList(st, args[1:])
	case "show":
		return studyShow(st, args[1:])
	case "fidelity":
		return studyFidelity(st, args[1:])
	case "run":
		return studyRun(ctx, st, args[1:])
	case "-h", "-help", "--help", "help":
		fs := newFlags(st, "study", studySynopsis)
		fs.Usage()
		return nil
	}
	return usage("study: unknown subcommand %q (list, show, fidelity, run)", args[0])
}

// studyFidelity prints the fidelity ledger of one study, or of every
// study and then the count over all of them.
func studyFidelity(st *State, args []string) error {
	fs := newFlags(st, "study fidelity", "study fidelity [ID] [--scale paper|standard|quick] [--tools auto|paper|builtin]")
	scale := fs.String("scale", study.ScalePaper, "`paper|standard|quick`: the scale whose ledger to print (a scale's shorter runs and fewer repetitions are choices that differ)")
	tools := toolsFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ids := study.IDs()
	switch fs.NArg() {
	case 0:
	case 1:
		ids = []string{fs.Arg(0)}
	default:
		return usage("study fidelity takes at most one study id (%s)", strings.Join(study.IDs(), ", "))
	}
	faithful, total := 0, 0
	for i, id := range ids {
		f, _, err := studyFile(id, *scale, *tools)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(st.Stdout)
		}
		n, m := study.PrintFidelity(st.Stdout, f)
		faithful, total = faithful+n, total+m
	}
	if len(ids) > 1 {
		fmt.Fprintf(st.Stdout, "\nevery study: faithful here: %d of %d\n", faithful, total)
	}
	return nil
}

func studyList(st *State, args []string) error {
	fs := newFlags(st, "study list", "study list\n\nThe built-in studies: what each runs here, on which platforms, and what it cannot run.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usage("study list takes no arguments")
	}
	for _, id := range study.IDs() {
		f, err := study.Load(id)
		if err != nil {
			return err
		}
		m := f.Study
		var cannot []string
		for _, p := range m.NotRun() {
			cannot = append(cannot, p.Paper)
		}
		for _, e := range m.PendingExperiments() {
			cannot = append(cannot, e.ID+" (not yet runnable)")
		}
		fmt.Fprintf(st.Stdout, "%s  %s — runs here: %s on %s; cannot: %s\n", id, m.Title,
			strings.Join(workloadNames(f.Workloads), ", "), strings.Join(f.Platforms, ", "), orNone(strings.Join(cannot, "; ")))
	}
	return nil
}

func workloadNames(ws []string) []string {
	var out []string
	for _, w := range ws {
		name, _, _ := strings.Cut(w, ":")
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// studyFile loads a built-in study at a scale, with the paper's tools in
// place of isobench's workloads as tools says (study.ToolModes) where
// this host has them; notes say which run and why not.
func studyFile(id, scale, tools string) (study.File, []string, error) {
	f, err := study.Load(id)
	if err != nil {
		return study.File{}, nil, usage("%v", err)
	}
	g, err := f.AtScale(scale)
	if err != nil {
		return study.File{}, nil, usage("%v", err)
	}
	h, notes, err := g.WithTools(tools, hostHas)
	if err != nil {
		return study.File{}, nil, usage("%v", err)
	}
	return h, notes, nil
}

// toolsFlag declares --tools on a study command.
func toolsFlag(fs *flag.FlagSet) *string {
	return fs.String("tools", study.ToolsAuto, "`auto|paper|builtin`: the paper's own tools (sysbench, iperf 2, fio, JMeter, postal, Hadoop) where this host has them - auto at the paper's and the standard scale, paper at every scale - or builtin, isobench's own workloads only")
}

func studyShow(st *State, args []string) error {
	fs := newFlags(st, "study show", "study show ID [--scale standard|quick|paper] [--tools auto|paper|builtin]")
	scale := fs.String("scale", study.DefaultScale, "`standard|quick|paper`: standard (every cell, enough repetitions for verdicts, under an hour), quick (every cell, ~10 min, trends only) or paper (the paper's parameters)")
	tools := toolsFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usage("study show takes one study id (%s)", strings.Join(study.IDs(), ", "))
	}
	f, notes, err := studyFile(fs.Arg(0), *scale, *tools)
	if err != nil {
		return err
	}
	b, err := f.Encode()
	if err != nil {
		return err
	}
	fmt.Fprintf(st.Stdout, "# isobench study %s at %s scale: %s\n# Run it as it is with 'isobench run FILE', or edit it first.\n", f.Study.ID, f.Study.Scale, f.Study.Title)
	for _, n := range notes {
		fmt.Fprintf(st.Stdout, "# tools: %s\n", n)
	}
	if f.Study.HasLedger() {
		fmt.Fprintf(st.Stdout, "# Against the paper (the fidelity: entries below; 'isobench study fidelity %s' says why):\n", f.Study.ID)
		for _, e := range f.Study.Experiments {
			fmt.Fprintf(st.Stdout, "#   %s %s\n", e.ID, f.Study.Ledger(e, f.Reps).Line())
		}
	}
	_, err = st.Stdout.Write(b)
	return err
}

func studyRun(ctx context.Context, st *State, args []string) error {
	fs := newFlags(st, "study run", "study run ID [--scale standard|quick|paper] [--tools auto|paper|builtin] [--db FILE] [-o FILE] [--platform P]... [--reps N|auto] [--dry-run]")
	scale := fs.String("scale", study.DefaultScale, "`standard|quick|paper`: standard (every cell, enough repetitions for verdicts, under an hour on 2 cores), quick (every cell, ~10 min, trends only) or paper (the paper's parameters)")
	db := fs.String("db", "", "`FILE`: result store (default study-ID.db)")
	out := fs.String("o", "", "`FILE`: also write the HTML report to this file")
	var only multi
	fs.Var(&only, "platform", "`P[:OPTIONS]`: run only these of the study's platforms (repeatable)")
	reps := fs.String("reps", "", "`N|auto`: override the scale's repetitions")
	dry := fs.Bool("dry-run", false, "print the plan, which platforms are available here and the host tools the workloads need that are missing (warnings), and stop")
	stateDir := fs.String("state-dir", "", "`DIR`: where images and rootfs trees are kept (default /var/lib/isobench as root, else ~/.cache/isobench; ISOBENCH_STATE)")
	quiet := fs.Bool("quiet", false, "no progress display")
	tools := toolsFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usage("study run takes one study id (%s)", strings.Join(study.IDs(), ", "))
	}
	f, toolNotes, err := studyFile(fs.Arg(0), *scale, *tools)
	if err != nil {
		return err
	}
	if *db == "" {
		*db = "study-" + f.Study.ID + ".db"
	}
	var skipped []string
	if len(only) > 0 {
		for _, p := range only {
			if !slices.Contains(f.Platforms, p) {
				return usage("--platform %s is not one of study %s's platforms (%s)", p, f.Study.ID, strings.Join(f.Platforms, ", "))
			}
		}
		for _, p := range f.Platforms {
			if !slices.Contains(only, p) {
				skipped = append(skipped, p+": left out (--platform)")
			}
		}
		f.Platforms = slices.Clone([]string(only))
	}
	if *reps != "" {
		f.Reps = *reps
	}
	accel := map[string]string{}
	if *dry {
		for _, l := range f.Platforms {
			if study.VMPlatform(l) {
				accel[l] = dryAccel()
			}
		}
	} else {
		var down []string
		f.Platforms, down = st.availablePlatforms(ctx, f.Platforms, st.stateDir(*stateDir), accel)
		skipped = append(skipped, down...)
		if len(f.Platforms) == 0 {
			return usage("study %s: none of its platforms is available here: %s", f.Study.ID, strings.Join(skipped, "; "))
		}
	}
	if bl, _ := study.SplitAt(f.Baseline); f.Baseline != "" && !slices.Contains(f.Platforms, bl) {
		skipped = append(skipped, "baseline "+f.Baseline+" is not run: no ratios")
		f.Baseline = ""
	}
	f.CapEmulated(accel) // a VM under TCG at the standard scale: EmulatedReps
	plan, err := study.NewPlan(f, st.Workloads, st.Platforms)
	if err != nil {
		return usage("study %s: %v", f.Study.ID, err)
	}
	plan.Accel = accel
	plan.Print(st.Stdout)
	for _, s := range skipped {
		fmt.Fprintf(st.Stdout, "not run here: %s\n", s)
	}
	for _, n := range toolNotes {
		fmt.Fprintf(st.Stdout, "tools: %s\n", n)
	}
	groups := f.RunGroups()
	for _, g := range groups {
		if g.Image != f.Image {
			fmt.Fprintf(st.Stdout, "a run of its own from image %s (it cannot run the study's image %s): %s\n", g.Image, orNone(f.Image), strings.Join(g.Platforms, ", "))
		}
	}
	if *dry {
		st.dryChecks(ctx, st.Stdout, f.Platforms, f.Workloads, f.Image, st.stateDir(*stateDir))
		fmt.Fprintln(st.Stdout)
		return nil
	}
	fmt.Fprintln(st.Stdout)
	f.Study.SeparateRuns(groups)
	started := time.Now()
	var ids []int64
	var runErr error
	for _, g := range groups {
		id, err := studyRunGroup(ctx, st, f, g, *db, *stateDir, *quiet)
		if id != 0 {
			ids = append(ids, id)
		}
		if err != nil {
			var ue usageError
			if errors.As(err, &ue) && len(ids) == 0 {
				return err // nothing ran
			}
			runErr = errors.Join(runErr, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	fmt.Fprintf(st.Stdout, "\nstudy %s (%s scale) took %s (estimated %s)\n", f.Study.ID, f.Study.Scale, time.Since(started).Round(time.Second), plan.Estimate.Round(time.Second))
	if len(ids) == 0 {
		return runErr // the run never began (e.g. an image could not be prepared)
	}
	cells, err := runCells(context.WithoutCancel(ctx), *db, ids, report.Options{Baseline: f.Baseline, Warmups: f.Warmup, WorkloadLabel: st.Workloads.Label, IsHost: st.Platforms.IsHost})
	if err != nil {
		return errors.Join(runErr, err)
	}
	// What ran emulated, from the runs' own facts (the accelerator each
	// VM platform resolved).
	fp, err := runsFingerprint(context.WithoutCancel(ctx), *db, ids)
	if err != nil {
		return errors.Join(runErr, err)
	}
	f.Study.MarkEmulated(study.EmulatedFrom(fp, f.Platforms))
	if len(cells) > 0 {
		fmt.Fprintln(st.Stdout)
		study.CompareFindings(st.Stdout, f, cells)
	}
	if *out != "" {
		if err := writeStudyReport(context.WithoutCancel(ctx), *db, ids, f, cells, absentLabels(skipped), *out); err != nil {
			return errors.Join(runErr, err)
		}
		fmt.Fprintf(st.Stdout, "report: %s\n", *out)
	}
	return runErr
}

// studyRunGroup runs one group of a study's platforms (those that share
// an image) as 'isobench run FILE' and returns its run id (0 when it
// never began).
func studyRunGroup(ctx context.Context, st *State, f study.File, g study.RunGroup, db, stateDir string, quiet bool) (int64, error) {
	f.Platforms, f.Image = slices.Clone(g.Platforms), g.Image
	f.PlatformReps = maps.Clone(f.PlatformReps)
	maps.DeleteFunc(f.PlatformReps, func(l string, _ int) bool { return !slices.Contains(f.Platforms, l) })
	if bl, _ := study.SplitAt(f.Baseline); !slices.Contains(f.Platforms, bl) {
		f.Baseline = "" // the baseline runs in another group: ratios come from the merged cells
	}
	b, err := f.Encode()
	if err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp("", "isobench-study-"+f.Study.ID+"-*.yaml")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	runArgs := []string{tmp.Name(), "--db", db}
	if stateDir != "" {
		runArgs = append(runArgs, "--state-dir", stateDir)
	}
	if quiet {
		runArgs = append(runArgs, "--quiet")
	}
	var id int64
	err = runCmd(ctx, st, runArgs, &id)
	return id, err
}

// absentLabels reads the "LABEL: why" lines of the platforms a study run
// left out into label -> why.
func absentLabels(skipped []string) map[string]string {
	out := map[string]string{}
	for _, s := range skipped {
		if l, why, ok := strings.Cut(s, ": "); ok && !strings.HasPrefix(s, "baseline ") {
			out[l] = why
		}
	}
	return out
}

// dryAccel is what a dry run can say of a VM platform's accelerator
// without booting the KVM probe: TCG when /dev/kvm does not open, else
// "" (the run's probe decides).
func dryAccel() string {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return "tcg: /dev/kvm: " + err.Error()
	}
	f.Close()
	return ""
}

// runsFingerprint merges the recorded facts of a study's runs (the first
// run's win where they differ; the platforms' keys are their labels').
func runsFingerprint(ctx context.Context, db string, ids []int64) (map[string]string, error) {
	s, err := store.Open(ctx, db)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	runs, err := s.Runs(ctx)
	if err != nil {
		return nil, err
	}
	fp := map[string]string{}
	for _, id := range slices.Backward(ids) {
		for _, r := range runs {
			if r.ID == id {
				maps.Copy(fp, r.Fingerprint)
			}
		}
	}
	return fp, nil
}

// writeStudyReport writes the HTML report of a study's runs (the first
// is the report's run; their facts are merged) with the study's tables
// and figures first (study.Sections), then the generic part.
func writeStudyReport(ctx context.Context, db string, ids []int64, f study.File, cells []report.Cell, absent map[string]string, out string) error {
	if samePath(out, db) {
		return usage("-o %s is the result store itself (--db %s): write the report to another file", out, db)
	}
	s, err := store.Open(ctx, db)
	if err != nil {
		return err
	}
	defer s.Close()
	runs, err := s.Runs(ctx)
	if err != nil {
		return err
	}
	d := report.Doc{Run: ids[0], Cells: cells, Fingerprint: map[string]string{}}
	for _, r := range runs {
		if !slices.Contains(ids, r.ID) {
			continue
		}
		if r.ID == ids[0] || d.Status == "done" && r.Status != "done" {
			d.Status = r.Status
		}
		for k, v := range r.Fingerprint {
			if _, ok := d.Fingerprint[k]; !ok || r.ID == ids[0] {
				d.Fingerprint[k] = v
			}
		}
	}
	d.Study, d.Sections = study.Sections(f, cells, absent)
	return writeOutput("-o", out, db, func(w io.Writer) error { return report.HTML(w, d) })
}

// availablePlatforms keeps the labels whose platform can run here and
// says why the others cannot; for a VM platform it records in accel what
// will run its guests ("kvm" or "tcg: WHY", from its facts, which settle
// the accelerator once per state directory).
func (st *State) availablePlatforms(ctx context.Context, labels []string, stateDir string, accel map[string]string) (ok, down []string) {
	env := platform.Env{AgentBinary: st.Executable, StateDir: stateDir, Log: st.Stderr}
	for _, l := range labels {
		f, o, err := st.Platforms.Parse(l)
		if err != nil {
			down = append(down, fmt.Sprintf("%s: %v", l, err))
			continue
		}
		p, err := f.New(ctx, o, env)
		if err != nil {
			down = append(down, fmt.Sprintf("%s: %v", l, err))
			continue
		}
		err = p.Available(ctx)
		if err == nil && study.VMPlatform(l) {
			facts := p.Facts(ctx)
			switch a := study.Accel(facts); a {
			case "tcg":
				why := facts["accel_reason"]
				if why == "" {
					why = facts["vm.accel_reason"]
				}
				accel[l] = "tcg: " + why
			default:
				accel[l] = a
			}
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		p.Close(cctx)
		cancel()
		if err != nil {
			down = append(down, fmt.Sprintf("%s: not available (%v; see 'isobench doctor')", l, err))
			continue
		}
		ok = append(ok, l)
	}
	return ok, down
}

// runCells summarises runs of a store as one (a study run as several,
// one per image: their platforms differ) with the report's options o,
// seeded by the first run.
func runCells(ctx context.Context, db string, ids []int64, o report.Options) ([]report.Cell, error) {
	s, err := store.Open(ctx, db)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var samples []sample.Sample
	for _, id := range ids {
		ss, err := s.Samples(ctx, store.Filter{RunID: id, NoWarmup: true})
		if err != nil {
			return nil, err
		}
		samples = append(samples, ss...)
	}
	o.Stats = stats.Options{Seed: ids[0]}
	return report.Cells(samples, o), nil
}
