package study

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/stats"
)

// ParseFigure reads an experiment's figure: "bars", "lines-instances",
// "lines-param: NAME" or "table"; "" is no choice (the data decides).
func ParseFigure(s string) (shape, param string, err error) {
	s = strings.TrimSpace(s)
	name, arg, _ := strings.Cut(s, ":")
	name, arg = strings.TrimSpace(name), strings.TrimSpace(arg)
	switch name {
	case "":
		return "", "", nil
	case report.ShapeBars, report.ShapeLinesInstances, report.ShapeTable:
		if arg != "" {
			return "", "", fmt.Errorf("figure %q: %s takes no parameter", s, name)
		}
		return name, "", nil
	case report.ShapeLinesParam:
		if arg == "" || strings.ContainsAny(arg, ",=| ") {
			return "", "", fmt.Errorf("figure %q: lines-param needs one parameter name (lines-param: users)", s)
		}
		return name, arg, nil
	}
	return "", "", fmt.Errorf("figure %q: want bars, lines-instances, lines-param: NAME or table", s)
}

// PaperNumber names an experiment as the paper numbers it: fig3 is
// "Figure 3", table4-tree "Table 4 (tree)", fig3a "Figure 3a".
func PaperNumber(id string) string {
	base, part, _ := strings.Cut(id, "-")
	word := base
	for _, p := range []struct{ prefix, name string }{{"figure", "Figure "}, {"fig", "Figure "}, {"table", "Table "}, {"tab", "Table "}} {
		if rest, ok := strings.CutPrefix(base, p.prefix); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			word = p.name + rest
			break
		}
	}
	if part != "" {
		word += " (" + part + ")"
	}
	return word
}

// slowestStartup returns the cells with startup_ms at more than one
// instance summarised over the slowest instance of each repetition (the
// aggregate; study 000's definition) instead of the mean over instances.
func slowestStartup(cells []report.Cell) []report.Cell {
	out := slices.Clone(cells)
	for i, c := range out {
		if c.Metric != "startup_ms" || c.Instances < 2 || len(c.Aggregate) == 0 {
			continue
		}
		c.Values = slices.Clone(c.Aggregate)
		sm := stats.Summarize(c.Values, stats.Options{Seed: 1})
		c.N, c.Median, c.Mean, c.Stdev, c.CV = sm.N, sm.Median, sm.Mean, sm.Stdev, sm.CV
		c.Min, c.Max, c.P5, c.P95 = sm.Min, sm.Max, sm.P5, sm.P95
		c.CILow, c.CIHigh, c.CIValid = sm.CILow, sm.CIHigh, sm.CIValid
		out[i] = c
	}
	return out
}

// selectCells are the cells of one metric that an experiment's selector
// matches, in cell order.
func selectCells(cells []report.Cell, sel spec.Spec, metric string) []report.Cell {
	var out []report.Cell
	for _, c := range cells {
		if c.Metric != metric {
			continue
		}
		sp, err := spec.Parse(c.Workload + ":" + c.Params)
		if err != nil || !Selects(sel, sp.Name, sp.Params) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// experimentMetrics are the metrics a section draws: the experiment's
// metrics:, else its metric and then its findings' own.
func experimentMetrics(e Experiment) []string {
	if len(e.Metrics) > 0 {
		return e.Metrics
	}
	var out []string
	for _, m := range append([]string{e.Metric}, findingMetrics(e)...) {
		if m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

func findingMetrics(e Experiment) []string {
	var out []string
	for _, fd := range e.Findings {
		out = append(out, fd.Metric)
	}
	return out
}

// Shape is the figure an experiment is drawn as: its figure: when given;
// else a table for a score, lines over the instance counts when the
// cells ran at several, lines over a parameter when exactly one varies,
// and bars otherwise.
func Shape(e Experiment, cells []report.Cell) (shape, param string) {
	if s, p, err := ParseFigure(e.Figure); err == nil && s != "" {
		return s, p
	}
	if e.Score != nil {
		return report.ShapeTable, ""
	}
	insts := map[int]bool{}
	vals := map[string]map[string]bool{}
	for _, c := range cells {
		insts[c.Instances] = true
		sp, err := spec.Parse(c.Workload + ":" + c.Params)
		if err != nil {
			continue
		}
		for k, v := range sp.Params {
			if vals[k] == nil {
				vals[k] = map[string]bool{}
			}
			vals[k][v] = true
		}
	}
	if len(insts) > 1 {
		return report.ShapeLinesInstances, ""
	}
	var varying []string
	for k, vs := range vals {
		if len(vs) > 1 {
			varying = append(varying, k)
		}
	}
	if len(varying) == 1 {
		return report.ShapeLinesParam, varying[0]
	}
	return report.ShapeBars, ""
}

// Sections turns a study's experiments and a run's cells into the
// report's sections, one per table or figure of the paper, numbered as
// in the paper, each with the paper's findings and this run's verdicts
// (Checks). absent gives, per platform label of the file, why the run
// has none of its cells (left out, not available here); a label with no
// cells and no reason is said to have none in this run.
func Sections(f File, cells []report.Cell, absent map[string]string) (*report.StudyHeading, []report.Section) {
	m := f.Study
	if m == nil {
		return nil, nil
	}
	centralKind := m.Central
	if centralKind != "mean" {
		centralKind = "median"
	}
	drawn := slowestStartup(cells)
	checks := Checks(f, cells)
	head := &report.StudyHeading{ID: m.ID, Title: m.Title, Citation: m.Citation, Scale: m.Scale}
	if m.Scale == "" {
		head.Scale = ScalePaper
	}
	if sc, ok := m.Scales[m.Scale]; ok && sc.Note != "" {
		head.Notes = append(head.Notes, m.Scale+" scale: "+sc.Note)
	}
	head.Notes = append(head.Notes, fmt.Sprintf("Charts and tables show the %s of the repetitions (the paper's central value); Op = |P − P_%s| / P_%s and the coefficient (coef. = platform/%s, > 1 worse: the platform's cost over %s's, as the papers define it; for a higher-is-better metric %s/platform) are taken from it. Verdicts compare medians with a bootstrap interval.", centralKind, orDash(f.Baseline), orDash(f.Baseline), orDash(f.Baseline), orDash(f.Baseline), orDash(f.Baseline)))
	if m.PaperBaseline != "" {
		head.Notes = append(head.Notes, "The paper's baseline: "+m.PaperBaseline)
	}
	head.Notes = append(head.Notes, m.Notes...)
	emulated := m.emulatedIn(cells)
	for _, l := range slices.Sorted(maps.Keys(emulated)) {
		head.Notes = append(head.Notes, fmt.Sprintf("%s: %s (%s); its findings are not comparable", l, EmulatedNote, orDash(emulated[l])))
	}
	for _, c := range checks {
		switch c.Outcome {
		case Agrees:
			head.Agrees++
		case Disagrees:
			head.Disagrees++
		case NotComparable:
			head.NotComparable++
		default:
			head.Undecided++
		}
	}
	var paperOnly []string
	for _, p := range m.NotRun() {
		s := p.Paper + ": not run here: " + p.NotRun
		if p.WouldRun != "" {
			s += " (would run with: " + p.WouldRun + ")"
		}
		paperOnly = append(paperOnly, s)
	}
	pinnedBase := ""
	if _, at := SplitAt(f.Baseline); at > 0 {
		pinnedBase = f.Baseline
	}
	var out []report.Section
	for _, e := range m.Experiments {
		sec := report.Section{ID: e.ID, Number: PaperNumber(e.ID), Title: e.Title, Central: centralKind, Baseline: f.Baseline}
		if m.HasLedger() {
			l := m.Ledger(e, f.Reps)
			sec.Fidelity, sec.FidelityDetails = l.Line(), l.Details()
		}
		sec.Findings = sectionFindings(e, checks)
		if e.Workload == "" {
			sec.Shape = report.ShapeTable
			sec.Notes = append(sec.Notes, "not run: "+e.NotRunnable)
			if pv := e.PaperValues; pv != nil {
				sec.Notes = append(sec.Notes, fmt.Sprintf("the paper's numbers (%s): %s", pv.Source, pv.Note))
			}
			sec.NotRun = paperOnly
			out = append(out, sec)
			continue
		}
		sel, err := spec.Parse(e.Workload)
		if err != nil {
			continue // Check reports it
		}
		sec.Notes = append(sec.Notes, "tool here: "+ProducedBy(m.ID, e))
		var all []report.Cell
		for _, metric := range experimentMetrics(e) {
			cs := selectCells(drawn, sel, metric)
			if len(cs) == 0 {
				sec.Notes = append(sec.Notes, fmt.Sprintf("this run has no %s cells for %s", metric, e.Workload))
				continue
			}
			c0 := cs[0]
			sec.Panels = append(sec.Panels, report.Panel{Metric: metric, Unit: c0.Unit, Better: c0.Better, Cells: cs})
			all = append(all, cs...)
			if metric == "startup_ms" && slices.ContainsFunc(cs, func(c report.Cell) bool { return c.Instances > 1 }) {
				sec.Notes = append(sec.Notes, "startup_ms at N > 1 instances is the slowest instance of each repetition (the paper's measure, and what the verdicts compare); the mean over the instances stays in the per-metric tables below")
			}
		}
		sec.Shape, sec.Param = Shape(e, all)
		for _, c := range all {
			if why, ok := emulated[c.Label()]; ok && sec.Marks[c.Label()] == "" {
				if sec.Marks == nil {
					sec.Marks = map[string]string{}
				}
				sec.Marks[c.Label()] = report.EmulatedMark
				sec.Notes = append(sec.Notes, fmt.Sprintf("%s: %s (%s)", c.Label(), EmulatedNote, orDash(why)))
			}
		}
		if pinnedBase != "" && (sec.Shape == report.ShapeLinesInstances || sec.Shape == report.ShapeBars) {
			sec.Reference = pinnedBase // the host run once, against N instances
		}
		if e.Score != nil {
			sec.Table = scoreSectionTable(e, cells, f.Baseline, centralKind)
		}
		paperSection(&sec, f, e, cells, centralKind)
		if e.NotRunnable != "" {
			sec.Notes = append(sec.Notes, "not yet runnable in full: "+e.NotRunnable)
		}
		sec.NotRun = append(slices.Clone(paperOnly), missingLabels(f, all, absent, e.Score == nil)...)
		out = append(out, sec)
	}
	return head, out
}

// missingLabels says which of the file's platforms have no cells in a
// section, and why.
func missingLabels(f File, cells []report.Cell, absent map[string]string, drawn bool) []string {
	if !drawn {
		return nil
	}
	have := map[string]bool{}
	for _, c := range cells {
		have[c.Label()] = true
	}
	var out []string
	labels := slices.Clone(f.Platforms)
	for l := range absent {
		if !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	if f.Study != nil {
		for _, p := range f.Study.Platforms {
			if p.Label != "" && !slices.Contains(labels, p.Label) {
				labels = append(labels, p.Label)
			}
		}
	}
	for _, l := range labels {
		if have[l] {
			continue
		}
		why, ok := absent[l]
		if !ok {
			why = "no cells in this run (left out, or its cells failed: see the run's log)"
		}
		out = append(out, l+": "+why)
	}
	return out
}

// sectionFindings are an experiment's findings with, under each, the
// checks that decide it, or why it is not checked.
func sectionFindings(e Experiment, checks []Check) []report.SectionFinding {
	var out []report.SectionFinding
	short := shortCells(e, checks)
	for _, fd := range e.Findings {
		sf := report.SectionFinding{Text: fd.Text}
		pairs, _ := findingPairs(fd)
		n := 0
		for _, c := range checks {
			if c.Experiment != e.ID || c.Finding != fd.Text {
				continue
			}
			n++
			c.Cell = short[c.Cell]
			sf.Lines = append(sf.Lines, report.FindingLine{Outcome: c.Outcome, Text: c.Text()})
		}
		switch {
		case e.Workload == "":
		case len(pairs) == 0:
			sf.Lines = append(sf.Lines, report.FindingLine{Text: "a description, not checked"})
		case n == 0:
			sf.Lines = append(sf.Lines, report.FindingLine{Text: fmt.Sprintf("not checked: this run has no cells with %s for %s", strings.Join(pairPlatforms(pairs), " and "), e.Workload)})
		}
		out = append(out, sf)
	}
	return out
}

// scoreSectionTable is study 004's Table 2 as the paper prints it: a row
// per benchmark with 1 − Op per platform, the sum, the overall
// performance, and the paper's own sums.
func scoreSectionTable(e Experiment, cells []report.Cell, baseline, central string) *report.SectionTable {
	bl, _ := SplitAt(baseline)
	t, err := ScoreTable(e.Score, cells, bl, central)
	if err != nil {
		return &report.SectionTable{Caption: "this run: no score (" + err.Error() + ")"}
	}
	platforms := slices.Clone(t.Platforms)
	for _, m := range []map[string]float64{e.Score.Paper, e.Score.PaperCorrected} {
		for p := range m {
			if !slices.Contains(platforms, p) {
				platforms = append(platforms, p)
			}
		}
	}
	slices.Sort(platforms[len(t.Platforms):]) // the paper's alone, in a stable order
	tb := &report.SectionTable{Caption: fmt.Sprintf("1 − Op per row against %s (%ss at one instance; RAM the mean of the STREAM kernels), summed", bl, central)}
	tb.Header = append([]string{"row"}, platforms...)
	rows := slices.Clone(t.Rows)
	sort.SliceStable(rows, func(i, j int) bool { return rowRank(rows[i]) < rowRank(rows[j]) })
	for _, r := range rows {
		line := []string{rowName(r, e.Score)}
		for _, p := range platforms {
			if v, ok := t.Score[r][p]; ok {
				line = append(line, fmt.Sprintf("%.3f", v))
			} else {
				line = append(line, "-")
			}
		}
		tb.Rows = append(tb.Rows, line)
	}
	sum, overall, paper := []string{"summary (this run)"}, []string{"overall performance (this run)"}, []string{"summary (the paper)"}
	corrected := []string{"summary (the paper's own Op)"}
	for _, p := range platforms {
		if v, ok := e.Score.PaperCorrected[p]; ok {
			corrected = append(corrected, fmt.Sprintf("%.2f", v))
		} else {
			corrected = append(corrected, "-")
		}
		if v, ok := t.Total[p]; ok {
			sum = append(sum, fmt.Sprintf("%.2f", v))
			overall = append(overall, fmt.Sprintf("%.1f%%", 100*t.Overall[p]))
		} else {
			sum, overall = append(sum, "-"), append(overall, "-")
		}
		if v, ok := e.Score.Paper[p]; ok {
			paper = append(paper, fmt.Sprintf("%.2f", v))
		} else {
			paper = append(paper, "-")
		}
	}
	tb.Rows = append(tb.Rows, sum, overall, paper)
	if len(e.Score.PaperCorrected) > 0 {
		tb.Rows = append(tb.Rows, corrected)
	}
	if e.Score.PaperNote != "" {
		tb.Caption += "; " + e.Score.PaperNote
	}
	return tb
}

// rowRank orders a score's rows as the paper's Table 2 does.
func rowRank(r string) int {
	switch r {
	case "io_read":
		return 0
	case "io_write":
		return 1
	case "ram":
		return 2
	case "cpu":
		return 3
	}
	return 4
}

func rowName(r string, sc *Score) string {
	names := map[string]string{"io_read": "I/O read", "io_write": "I/O write", "ram": "RAM speed", "cpu": "CPU"}
	n, ok := names[r]
	if !ok {
		n = r
	}
	if row, ok := sc.Rows[r]; ok {
		n += " (" + row.Workload + " " + strings.Join(row.Metrics, ", ") + ")"
	}
	return n
}

// shortCells names the cells an experiment's checks compare by what
// tells them apart within the experiment (a swept value, the instance
// count), not by every parameter: "users=4000 ×1" rather than
// "http:requests=8000,server=apache,…,users=4000 ×1".
func shortCells(e Experiment, checks []Check) map[string]string {
	type parsed struct {
		params map[string]string
		n      string
	}
	all := map[string]parsed{}
	for _, c := range checks {
		if c.Experiment != e.ID {
			continue
		}
		wp, n, _ := strings.Cut(c.Cell, " ")
		sp, err := spec.Parse(wp)
		if err != nil {
			all[c.Cell] = parsed{n: c.Cell}
			continue
		}
		all[c.Cell] = parsed{params: sp.Params, n: n}
	}
	vals := map[string]map[string]bool{}
	for _, p := range all {
		for k, v := range p.params {
			if vals[k] == nil {
				vals[k] = map[string]bool{}
			}
			vals[k][v] = true
		}
	}
	out := map[string]string{}
	for cell, p := range all {
		var keep []string
		for k, v := range p.params {
			if len(vals[k]) > 1 {
				keep = append(keep, k+"="+v)
			}
		}
		sort.Strings(keep)
		out[cell] = strings.TrimSpace(strings.Join(keep, ",") + " " + p.n)
	}
	return out
}
