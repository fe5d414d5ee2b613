package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/stats"
	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/study"
)

func cmdReport(ctx context.Context, st *State, args []string) error {
	fs := newFlags(st, "report", "report [--db FILE] [--format table|markdown|csv|json|jsonl|html] [-o FILE] [--run ID] [--baseline P] [--study ID|FILE]")
	db := fs.String("db", "isobench.db", "`FILE`: result store")
	format := fs.String("format", "table", "`table|markdown|csv|json|jsonl|html`: the output format; json is one document (the run, its fingerprint and its \"cells\"), jsonl one cell per line")
	out := fs.String("o", "", "`FILE`: write to this file instead of stdout (html: default report.html)")
	run := fs.Int64("run", 0, "`ID`: the run to report (default: the latest run)")
	baseline := fs.String("baseline", "", "`LABEL`: baseline platform label (default: the run's baseline, else native)")
	studyArg := fs.String("study", "", "`ID|FILE`: draw the run in a study's shapes (a built-in study or a study file): each table and figure of the paper first, with its findings and this run's verdicts (html; with --format table, the findings after the table)")
	familywise := fs.Bool("familywise", false, "widen every ratio interval (Bonferroni) so that, over all the cells compared with the baseline together, a difference where there is none is called in about 5% of runs (a little more with under 10 repetitions), where per-cell 95% intervals call about one cell in twenty; for A/A checks and runs of many cells")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *studyArg != "" {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "format" })
		switch {
		case !set:
			*format = "html"
		case *format != "html" && *format != "table":
			return usage("--study draws the study's tables and figures in the html report (or its findings after --format table), not in %s", *format)
		}
	}
	if *format == "" {
		*format = "table"
	}
	render, ok := renderers[*format]
	if !ok {
		return usage("--format %q: want table, markdown, csv, json, jsonl or html", *format)
	}
	if *format == "html" && *out == "" {
		*out = "report.html" // a page is for a browser, not a terminal
	}
	if *out != "" && samePath(*out, *db) {
		return usage("-o %s is the result store itself (--db %s): write the report to another file", *out, *db)
	}
	s, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer s.Close()
	runs, err := s.Runs(ctx)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		return usage("%v", store.ErrNoRuns)
	}
	chosen := runs[len(runs)-1]
	if *run != 0 {
		found := false
		for _, r := range runs {
			if r.ID == *run {
				chosen, found = r, true
			}
		}
		if !found {
			return usage("no run %d in %s", *run, *db)
		}
	}
	samples, err := s.Samples(ctx, store.Filter{RunID: chosen.ID, NoWarmup: true})
	if err != nil {
		return err
	}
	var rec Study
	recOK := json.Unmarshal(chosen.Study, &rec) == nil
	var sf study.File
	if *studyArg != "" {
		if sf, err = studyForReport(*studyArg, rec, recOK); err != nil {
			return err
		}
	}
	bl := *baseline
	if bl == "" && recOK {
		bl = rec.Baseline
	}
	if bl == "" {
		bl = sf.Baseline
	}
	sf.Baseline = bl
	if *baseline != "" && len(samples) > 0 {
		if err := baselineInRun(*baseline, samples, chosen.ID); err != nil {
			return err
		}
	}
	warmups := 0
	if recOK {
		warmups = rec.Warmup
	}
	opts := report.Options{Baseline: bl, Stats: stats.Options{Seed: chosen.ID}, Warmups: warmups, WorkloadLabel: st.Workloads.Label, IsHost: st.Platforms.IsHost}
	if *familywise {
		var k int
		opts, k = report.Familywise(samples, opts)
		if k > 1 {
			fmt.Fprintf(st.Stderr, "report: family-wise intervals over the %d cells compared with %s: each ratio's interval at %.3g%% (95%% for the family)\n", k, bl, 100*opts.Stats.Confidence)
		}
	}
	cells := report.Cells(samples, opts)
	if *familywise {
		if need, few := familywiseShort(cells); few > 0 {
			fmt.Fprintf(st.Stderr, "warning: %d of the compared cells have fewer than the %d repetitions family-wise intervals need here: when all of a cell's repetitions fall on one side, its interval cannot reach 1 however wide it is asked to be (a chance of 2^(1-n) for a cell that did not change); raise --reps to %d\n", few, need, need)
		}
	}
	report.MarkEmulated(cells, chosen.Fingerprint) // a VM platform under TCG: the table, the findings and the page say so
	doc := report.Doc{Run: chosen.ID, Status: chosen.Status, Fingerprint: chosen.Fingerprint, Cells: cells}
	if *studyArg != "" && *format == "html" {
		doc.Study, doc.Sections = study.Sections(sf, cells, nil)
	}
	write := func(w io.Writer) error {
		if err := render(w, doc); err != nil {
			return err
		}
		if *studyArg != "" && *format == "table" {
			fmt.Fprintln(w)
			study.CompareFindings(w, sf, cells)
		}
		if recOK && rec.Spread && *format == "table" {
			if err := spreadHosts(w, samples); err != nil { // remote.go
				return err
			}
		}
		return nil
	}
	if *out == "" {
		if err := write(st.Stdout); err != nil {
			return err
		}
	} else if err := writeOutput("-o", *out, *db, write); err != nil {
		return err
	}
	if *format == "html" {
		fmt.Fprintf(st.Stderr, "report written to %s\n", *out)
	}
	return nil
}

// baselineInRun refuses a --baseline (LABEL or LABEL@N) that the run
// did not measure: every ratio would be missing.
func baselineInRun(bl string, samples []sample.Sample, run int64) error {
	labels, counts := map[string]bool{}, map[int]bool{}
	for _, x := range samples {
		labels[report.Label(x.Platform, x.Options)] = true
		counts[x.Instances] = true
	}
	if labels[bl] {
		return nil
	}
	label, at := report.SplitBaseline(bl)
	if !labels[label] {
		return usage("--baseline %s: run %d has no platform %s (its platforms: %s)", bl, run, label, strings.Join(sortedKeys(labels), ", "))
	}
	if at > 0 && !counts[at] {
		var ns []int
		for n := range counts {
			ns = append(ns, n)
		}
		slices.Sort(ns)
		return usage("--baseline %s: run %d has no cell of %d instances (its instance counts: %s)", bl, run, at, joinInts(ns))
	}
	return nil
}

// studyForReport reads --study: a built-in study's id or a study file.
// When the run was that study (its record names it), the study is taken
// at the run's scale with the run's platforms, instance counts and
// baseline, so the experiments select the cells that ran.
func studyForReport(arg string, rec Study, recOK bool) (study.File, error) {
	var f study.File
	var err error
	if _, rerr := study.Raw(arg); rerr == nil {
		f, err = study.Load(arg)
	} else {
		b, ferr := os.ReadFile(arg)
		if ferr != nil {
			return study.File{}, usage("--study %s: neither a built-in study (%s) nor a readable file: %v", arg, strings.Join(study.IDs(), ", "), ferr)
		}
		f, err = study.Decode(b)
	}
	if err != nil {
		return study.File{}, usage("--study %s: %v", arg, err)
	}
	if f.Study == nil {
		return study.File{}, usage("--study %s: the file has no study: block (the paper's experiments and findings)", arg)
	}
	if recOK && rec.About != nil && rec.About.ID == f.Study.ID {
		if sc := rec.About.Scale; sc != "" && sc != f.Study.Scale {
			if g, err := f.AtScale(sc); err == nil {
				f = g
			}
		}
		// the paper's tools the run ran in place of isobench's workloads
		if g, err := f.WithToolsOf(rec.Workloads); err == nil {
			f = g
		}
		if len(rec.Platforms) > 0 {
			f.Platforms = rec.Platforms
		}
		if len(rec.Instances) > 0 {
			f.Instances = rec.Instances
		}
		f.Baseline = rec.Baseline
	}
	return f, nil
}

var renderers = map[string]func(io.Writer, report.Doc) error{
	"table":    func(w io.Writer, d report.Doc) error { return report.Table(w, d.Cells) },
	"markdown": report.Markdown,
	"csv":      report.CSV,
	"json":     report.JSON,
	"jsonl":    report.JSONL,
	"html":     report.HTML,
}

func cmdCompare(ctx context.Context, st *State, args []string) error {
	fs := newFlags(st, "compare", "compare A.db B.db [--fail-if-slower PCT]\n\nPer cell (platform, workload, params, instances, metric) the change from A's latest run\nto B's, flagged only when it is outside the noise (family-wise 95% intervals).\nWith --fail-if-slower 5%, a CI gate: exit 3 when some cell of B is slower than A by more\nthan 5% and its family-wise interval excludes 1 (outside the noise); exit 0 otherwise.")
	failIf := fs.String("fail-if-slower", "", "`PCT`: exit 3 when a cell is slower by more than PCT (e.g. 5%) and outside the noise")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	threshold := -1.0
	if *failIf != "" {
		v, err := parsePercent(*failIf)
		if err != nil {
			return usage("--fail-if-slower: %v", err)
		}
		threshold = v
	}
	if fs.NArg() != 2 {
		return usage("compare takes two stores: isobench compare A.db B.db")
	}
	var sides [2][]report.Cell
	for i, path := range fs.Args() {
		s, err := openExisting(ctx, path)
		if err != nil {
			return err
		}
		samples, err := s.Samples(ctx, store.Filter{LatestRunOnly: true, NoWarmup: true})
		s.Close()
		if err != nil {
			return err
		}
		if len(samples) == 0 {
			return usage("%s holds no samples", path)
		}
		sides[i] = report.Cells(samples, report.Options{WorkloadLabel: st.Workloads.Label})
	}
	// Family-wise (Bonferroni) intervals: with many cells, plain 95%
	// intervals flag about one unchanged cell in twenty as changed.
	changes := report.CompareCellsFamilywise(sides[0], sides[1], stats.Options{Seed: 1})
	if len(changes) == 0 {
		return fmt.Errorf("the two stores share no cell (same platform, workload, params, instances and metric)")
	}
	if err := report.ChangeTable(st.Stdout, changes); err != nil {
		return err
	}
	if threshold < 0 {
		return nil
	}
	var worse []string
	for _, ch := range changes {
		if d := slowdown(ch); d > threshold {
			c := ch.Cell
			worse = append(worse, fmt.Sprintf("%s %s ×%d on %s %.1f%% slower", c.Workload, c.Metric, c.Instances, c.Label(), 100*d))
		}
	}
	if len(worse) == 0 {
		fmt.Fprintf(st.Stdout, "\ngate passed: no cell is slower by more than %g%% outside the noise (%d cells compared)\n", 100*threshold, len(changes))
		return nil
	}
	return fmt.Errorf("%w: %d of %d cells slower by more than %g%% outside the noise: %s", errRegression, len(worse), len(changes), 100*threshold, strings.Join(worse, "; "))
}

// errRegression is a failed --fail-if-slower gate (exit ExitRegression).
var errRegression = errors.New("regression")

// familywiseShort is how many repetitions family-wise intervals over the
// compared cells need (report.FamilywiseMinReps), and how many compared
// cells have fewer.
func familywiseShort(cells []report.Cell) (need, few int) {
	var compared []report.Cell
	for _, c := range cells {
		if c.Compared() {
			compared = append(compared, c)
		}
	}
	need = report.FamilywiseMinReps(len(compared), 0)
	for _, c := range compared {
		if c.N < need {
			few++
		}
	}
	return need, few
}
