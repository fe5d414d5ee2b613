package study

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/stats"
)

// Outcomes of checking a finding against a run.
const (
	Agrees    = "agrees"
	Disagrees = "disagrees"
	Undecided = "undecided"
)

// Check is one checked comparison: A against B on one cell.
type Check struct {
	Experiment string
	Finding    string
	Cell       string // workload, params, instances
	Metric     string
	A, B       string      // A better than B (or the same as B)
	Ratio      stats.Ratio // A relative to B
	Want       string      // "better" or "same"
	// Margin is a "same" finding's equivalence margin (see
	// Finding.Margin): it agrees only when the ratio's interval lies
	// within 1 ± Margin.
	Margin  float64
	Outcome string
}

// Checks evaluates the checkable findings of f against a run's cells.
// Findings naming a platform the run did not include are skipped.
func Checks(f File, cells []report.Cell) []Check {
	if f.Study == nil {
		return nil
	}
	emulated := f.Study.emulatedIn(cells)
	var out []Check
	for _, e := range f.Study.Experiments {
		if e.Workload == "" {
			continue
		}
		sel, err := spec.Parse(e.Workload)
		if err != nil {
			continue
		}
		for _, fd := range e.Findings {
			pairs, want := findingPairs(fd)
			if len(pairs) == 0 {
				continue
			}
			metric := fd.Metric
			if metric == "" {
				metric = e.Metric
			}
			need := map[string]string{}
			if fd.Params != "" {
				if sp, err := spec.Parse(sel.Name + ":" + fd.Params); err == nil {
					need = sp.Params
				}
			}
			for _, g := range groupCells(cells, sel, metric, need, fd.Instances) {
				for _, pr := range pairs {
					a, okA := pick(cells, g, pr[0])
					b, okB := pick(cells, g, pr[1])
					if !okA || !okB || (a.Label() == b.Label() && a.Instances == b.Instances) {
						continue
					}
					// Paired repetitions only within one cell of one run (they
					// ran side by side).
					paired := a.Instances == b.Instances && f.Study.sameRun(a.Label(), b.Label())
					r := stats.Compare(values(b), values(a), paired, a.Better, stats.Options{Seed: 1})
					c := Check{Experiment: e.ID, Finding: fd.Text, Cell: g.name, Metric: metric, A: pr[0], B: pr[1], Ratio: r, Want: want}
					if want == "same" {
						c.Margin = fd.margin()
					}
					c.Outcome = outcome(c)
					if emulatedLabel(emulated, pr[0]) || emulatedLabel(emulated, pr[1]) {
						c.Outcome = NotComparable // the emulator, not the paper's hypervisor
					}
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// Text says what a check compared and what the interval decided (and,
// for an emulated side, that it is not comparable):
// "cell: A better than B? A/B = r, 95% CI [lo, hi] (metric, higher is
// better): verdict".
func (c Check) Text() string {
	rel := "better than"
	if c.Want == "same" {
		rel = fmt.Sprintf("the same (within %s) as", percent(c.Margin))
	}
	r := c.Ratio
	ci := "no interval"
	if r.CIValid {
		ci = fmt.Sprintf("95%% CI [%.3f, %.3f]", r.CILow, r.CIHigh)
	}
	t := fmt.Sprintf("%s: %s %s %s? %s/%s = %.3f, %s (%s, %s is better): %s",
		c.Cell, c.A, rel, c.B, c.A, c.B, r.Ratio, ci, c.Metric, r.Better, r.Verdict)
	if c.Outcome == NotComparable {
		t += " — " + EmulatedNote
	}
	return t
}

func findingPairs(fd Finding) (pairs [][2]string, want string) {
	switch {
	case len(fd.Better) == 2:
		return [][2]string{{fd.Better[0], fd.Better[1]}}, "better"
	case len(fd.Ranking) > 1:
		// Every ordered pair, not only neighbours: a run with some of the
		// platforms still checks the order of those it has.
		for i := range fd.Ranking {
			for j := i + 1; j < len(fd.Ranking); j++ {
				pairs = append(pairs, [2]string{fd.Ranking[i], fd.Ranking[j]})
			}
		}
		return pairs, "better"
	case len(fd.Same) > 1:
		for _, p := range fd.Same[1:] {
			pairs = append(pairs, [2]string{p, fd.Same[0]})
		}
		return pairs, "same"
	}
	return nil, ""
}

// outcome is what a check's interval says of its finding. A "same"
// finding is an equivalence claim: it agrees only when the whole 95%
// interval of the ratio lies within 1 ± margin, disagrees when the whole
// interval lies outside it, and is undecided when the interval is too wide
// to tell: an interval that merely contains 1 is no evidence that two
// platforms are alike.
func outcome(c Check) string {
	verdict := c.Ratio.Verdict
	switch {
	case verdict == stats.VerdictInsufficient:
		return Undecided
	case c.Want == "same":
		r := c.Ratio
		if !r.CIValid {
			return Undecided
		}
		lo, hi := 1-c.Margin, 1+c.Margin
		switch {
		case r.CILow >= lo && r.CIHigh <= hi:
			return Agrees
		case r.CIHigh < lo || r.CILow > hi:
			return Disagrees
		}
		return Undecided
	case verdict == stats.VerdictFaster:
		return Agrees
	case verdict == stats.VerdictSlower:
		return Disagrees
	}
	return Undecided // no detectable difference: the run cannot say
}

// values are a cell's per-repetition values; startup at N instances is the
// slowest instance (study 000's definition), the aggregate.
func values(c report.Cell) []float64 {
	if c.Metric == "startup_ms" && len(c.Aggregate) > 0 {
		return c.Aggregate
	}
	return c.Values
}

type cellGroup struct {
	name string
	by   map[string]report.Cell // platform label -> cell
	// the group's workload, params, metric and instance count
	workload, params, metric string
	instances                int
}

// SplitAt splits "native@1" into the platform label and the instance
// count it is pinned to (0: the count of the cell compared).
func SplitAt(label string) (string, int) {
	l, n, ok := strings.Cut(label, "@")
	if !ok {
		return label, 0
	}
	at, err := strconv.Atoi(n)
	if err != nil || at < 1 {
		return label, 0
	}
	return l, at
}

// pick returns the cell for a finding's label in a group: "docker" is the
// group's own cell, "native@1" the same workload and metric on native at
// one instance (the papers' host run once against N containers).
func pick(cells []report.Cell, g cellGroup, label string) (report.Cell, bool) {
	l, at := SplitAt(label)
	if at == 0 || at == g.instances {
		c, ok := g.by[l]
		return c, ok
	}
	for _, c := range cells {
		if c.Label() == l && c.Instances == at && c.Workload == g.workload && c.Params == g.params && c.Metric == g.metric {
			return c, true
		}
	}
	return report.Cell{}, false
}

// groupCells gathers, per workload params and instance count, the cells
// of the selected workload and metric by platform.
func groupCells(cells []report.Cell, sel spec.Spec, metric string, need map[string]string, instances []int) []cellGroup {
	idx := map[string]*cellGroup{}
	var keys []string
	for _, c := range cells {
		if c.Metric != metric || (len(instances) > 0 && !slices.Contains(instances, c.Instances)) {
			continue
		}
		sp, err := spec.Parse(c.Workload + ":" + c.Params)
		if err != nil || !Selects(sel, sp.Name, sp.Params) || !Selects(spec.Spec{Name: sp.Name, Params: need}, sp.Name, sp.Params) {
			continue
		}
		k := fmt.Sprintf("%s:%s ×%d", c.Workload, c.Params, c.Instances)
		g, ok := idx[k]
		if !ok {
			g = &cellGroup{name: fmt.Sprintf("%s ×%d", c.WorkloadLabel(), c.Instances), by: map[string]report.Cell{}, workload: c.Workload, params: c.Params, metric: c.Metric, instances: c.Instances}
			idx[k] = g
			keys = append(keys, k)
		}
		g.by[c.Label()] = c
	}
	sort.Strings(keys)
	out := make([]cellGroup, len(keys))
	for i, k := range keys {
		out[i] = *idx[k]
	}
	return out
}

// CompareFindings prints, per experiment, what the paper found and, for
// the findings that can be checked, whether this run agrees in direction,
// with the ratio's 95% interval that decides it. Disagreement is
// information, not an error.
func CompareFindings(w io.Writer, f File, cells []report.Cell) {
	if f.Study == nil {
		return
	}
	checks := Checks(f, cells)
	byFinding := map[string][]Check{}
	for _, c := range checks {
		byFinding[c.Experiment+"\x00"+c.Finding] = append(byFinding[c.Experiment+"\x00"+c.Finding], c)
	}
	fmt.Fprintf(w, "Study %s against the paper's findings (%s scale)\n", f.Study.ID, f.Study.Scale)
	emulated := f.Study.emulatedIn(cells)
	for _, l := range slices.Sorted(maps.Keys(emulated)) {
		fmt.Fprintf(w, "%s: %s (%s); its comparisons are not comparable\n", l, EmulatedNote, orDash(emulated[l]))
	}
	n := map[string]int{}
	for _, e := range f.Study.Experiments {
		fmt.Fprintf(w, "\n%s  %s\n", e.ID, e.Title)
		if e.NotRunnable != "" {
			fmt.Fprintf(w, "  not run: %s\n", e.NotRunnable)
		}
		for _, fd := range e.Findings {
			fmt.Fprintf(w, "  paper: %s\n", fd.Text)
			cs := byFinding[e.ID+"\x00"+fd.Text]
			pairs, _ := findingPairs(fd)
			switch {
			case e.NotRunnable != "" && e.Workload == "":
			case len(pairs) == 0:
				fmt.Fprintf(w, "    (a description, not checked)\n")
			case len(cs) == 0:
				fmt.Fprintf(w, "    not checked: this run has no cells with %s for %s\n", strings.Join(pairPlatforms(pairs), " and "), e.Workload)
			}
			for _, c := range cs {
				n[c.Outcome]++
				fmt.Fprintf(w, "    %s → %s\n", c.Text(), strings.ToUpper(c.Outcome))
			}
		}
		if e.Score != nil {
			printScore(w, e, cells, f.Baseline, centralName(f.Study))
		}
	}
	fmt.Fprintf(w, "\n%d comparisons agree with the paper, %d disagree, %d undecided (interval contains 1 or too few repetitions)", n[Agrees], n[Disagrees], n[Undecided])
	if n[NotComparable] > 0 {
		fmt.Fprintf(w, ", %d not comparable (%s)", n[NotComparable], EmulatedNote)
	}
	fmt.Fprintln(w)
}

func pairPlatforms(pairs [][2]string) []string {
	var out []string
	for _, p := range pairs {
		for _, l := range p {
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	return out
}

// ScoreTable computes an experiment's Score from a run's cells: per row
// and platform the mean of the row's metrics' central values (central:
// "mean", the paper's, or the median; at the smallest instance count
// run), scored 1 − Op against baseline (stats.PaperScore).
func ScoreTable(sc *Score, cells []report.Cell, baseline, central string) (stats.ScoreTable, error) {
	if sc == nil || baseline == "" {
		return stats.ScoreTable{}, fmt.Errorf("no score or no baseline")
	}
	minInst := 0
	for _, c := range cells {
		if minInst == 0 || c.Instances < minInst {
			minInst = c.Instances
		}
	}
	medians := map[string]map[string]float64{}
	for name, row := range sc.Rows {
		sel, err := spec.Parse(row.Workload)
		if err != nil {
			return stats.ScoreTable{}, err
		}
		per := map[string][]float64{} // label -> medians of the row's metrics
		for _, metric := range row.Metrics {
			for _, g := range groupCells(cells, sel, metric, nil, []int{minInst}) {
				for label, c := range g.by {
					per[label] = append(per[label], centralValue(c, central))
				}
			}
		}
		medians[name] = map[string]float64{}
		for label, ms := range per {
			if len(ms) != len(row.Metrics) {
				continue // a metric missing (or the selector matched several cells)
			}
			if v, err := stats.MeanOf(ms...); err == nil {
				medians[name][label] = v
			}
		}
	}
	return stats.PaperScore(medians, baseline)
}

// centralValue is a cell's mean when the study's central value is the
// mean, else its median.
func centralValue(c report.Cell, central string) float64 {
	if central == "mean" {
		return c.Mean
	}
	return c.Median
}

// centralName is what a study's central value is called: its mean or
// the median (the default).
func centralName(m *Meta) string {
	if m != nil && m.Central == "mean" {
		return "mean"
	}
	return "median"
}

func printScore(w io.Writer, e Experiment, cells []report.Cell, baseline, central string) {
	t, err := ScoreTable(e.Score, cells, baseline, central)
	if err != nil {
		fmt.Fprintf(w, "  this run: no score (%v)\n", err)
		return
	}
	fmt.Fprintf(w, "  this run, 1 − Op per row against %s (%ss; no interval for a sum of ratios):\n    %-10s", baseline, central, "platform")
	for _, r := range t.Rows {
		fmt.Fprintf(w, " %9s", r)
	}
	fmt.Fprintf(w, " %7s %8s %12s %12s\n", "total", "overall", "paper total", "paper's Op")
	for _, p := range t.Platforms {
		fmt.Fprintf(w, "    %-10s", p)
		for _, r := range t.Rows {
			if v, ok := t.Score[r][p]; ok {
				fmt.Fprintf(w, " %9.3f", v)
			} else {
				fmt.Fprintf(w, " %9s", "-")
			}
		}
		paper, own := "-", "-"
		if v, ok := e.Score.Paper[p]; ok {
			paper = fmt.Sprintf("%.2f", v)
		}
		if v, ok := e.Score.PaperCorrected[p]; ok {
			own = fmt.Sprintf("%.2f", v)
		}
		if tot, ok := t.Total[p]; ok {
			fmt.Fprintf(w, " %7.2f %7.1f%% %12s %12s\n", tot, 100*t.Overall[p], paper, own)
		} else {
			fmt.Fprintf(w, " %7s %8s %12s %12s\n", "-", "-", paper, own)
		}
	}
	if e.Score.PaperNote != "" {
		fmt.Fprintf(w, "    %s\n", e.Score.PaperNote)
	}
}

// percent writes a margin as a percentage: 0.1 -> "10%", 0.035 -> "3.5%".
func percent(m float64) string {
	return strconv.FormatFloat(100*m, 'f', -1, 64) + "%"
}
