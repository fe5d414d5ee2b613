package study

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/spec"
)

// The paper's own numbers, per experiment, from its tables and text: each
// a value (or, where the paper gives only a relative figure, a ratio)
// with where it stands in the paper. They are compared with this run's
// as ratios to the paper's own baseline platform, so units and machines
// drop out: a figure draws them as a second series (the paper's ratio
// times this run's baseline), and a table below it puts the paper's and
// this run's ratios side by side.

// PaperValues are what the paper reports for one experiment.
type PaperValues struct {
	// Source is where the numbers stand in the paper ("Table IV",
	// "section 3.1.1").
	Source string `yaml:"source" json:"source"`
	// Baseline is the paper's own baseline: a platform label of the file
	// (pinned, "native@1", for the host run once), whose value every
	// ratio divides by; empty: the paper's values are absolute only.
	Baseline string `yaml:"baseline,omitempty" json:"baseline,omitempty"`
	// Metric is the metric the values are of (default the experiment's).
	Metric string `yaml:"metric,omitempty" json:"metric,omitempty"`
	// Unit is the values' unit as the paper gives it.
	Unit   string       `yaml:"unit,omitempty" json:"unit,omitempty"`
	Values []PaperValue `yaml:"values,omitempty" json:"values,omitempty"`
	// Note says what the paper gives when it gives no number, or how its
	// numbers were read.
	Note string `yaml:"note,omitempty" json:"note,omitempty"`
}

// PaperValue is one number of the paper.
type PaperValue struct {
	// Platform is the file's label the number is of (maybe pinned,
	// "native@1").
	Platform string `yaml:"platform" json:"platform"`
	// Instances is the instance count (default 1, or the pinned count).
	Instances int `yaml:"instances,omitempty" json:"instances,omitempty"`
	// Params selects the cells by parameter values ("users=1000").
	Params string `yaml:"params,omitempty" json:"params,omitempty"`
	// Metric overrides the values' metric.
	Metric string `yaml:"metric,omitempty" json:"metric,omitempty"`
	// Value is the number as the paper prints it, in Unit.
	Value float64 `yaml:"value,omitempty" json:"value,omitempty"`
	// Ratio is the number against the paper's baseline where the paper
	// gives only that ("6.1% ahead": 1.061).
	Ratio float64 `yaml:"ratio,omitempty" json:"ratio,omitempty"`
	// Base is this value's own baseline value when it is not the
	// baseline platform's entry (study 002's jails against native
	// FreeBSD, which this host cannot run).
	Base float64 `yaml:"base,omitempty" json:"base,omitempty"`
	// Text is the number in the paper's words, when it is not plain.
	Text string `yaml:"text,omitempty" json:"text,omitempty"`
}

func (pv PaperValues) metricOf(e Experiment, v PaperValue) string {
	switch {
	case v.Metric != "":
		return v.Metric
	case pv.Metric != "":
		return pv.Metric
	}
	return e.Metric
}

func (v PaperValue) instances() int {
	if v.Instances > 0 {
		return v.Instances
	}
	if _, at := SplitAt(v.Platform); at > 0 {
		return at
	}
	return 1
}

// ratio is the value against the paper's baseline, if the paper's
// numbers give one.
func (pv PaperValues) ratio(e Experiment, v PaperValue) (float64, bool) {
	switch {
	case v.Ratio != 0:
		return v.Ratio, true
	case v.Base != 0:
		return v.Value / v.Base, true
	case pv.Baseline == "" || v.Value == 0:
		return 0, false
	}
	bl, at := SplitAt(pv.Baseline)
	for _, b := range pv.Values {
		l, _ := SplitAt(b.Platform)
		if l != bl || b.Params != v.Params || pv.metricOf(e, b) != pv.metricOf(e, v) || b.Value == 0 {
			continue
		}
		if at > 0 && b.instances() != at || at == 0 && b.instances() != v.instances() {
			continue
		}
		return v.Value / b.Value, true
	}
	return 0, false
}

// checkPaperValues verifies an experiment's paper values name the file's
// platforms and give a number each.
func (f File) checkPaperValues(known func(string) bool, e Experiment) error {
	pv := e.PaperValues
	if pv == nil {
		return nil
	}
	if pv.Source == "" {
		return fmt.Errorf("paper_values: no source (where in the paper)")
	}
	if l, _ := SplitAt(pv.Baseline); pv.Baseline != "" && !known(l) {
		return fmt.Errorf("paper_values: baseline %q is not under platforms:", pv.Baseline)
	}
	if len(pv.Values) == 0 && pv.Note == "" {
		return fmt.Errorf("paper_values: neither values nor a note saying why none")
	}
	for _, v := range pv.Values {
		if l, _ := SplitAt(v.Platform); !known(l) {
			return fmt.Errorf("paper_values: %q is not under platforms:", v.Platform)
		}
		if v.Value == 0 && v.Ratio == 0 {
			return fmt.Errorf("paper_values: %s has neither a value nor a ratio", v.Platform)
		}
		if v.Params != "" {
			if _, err := spec.Parse("x:" + v.Params); err != nil {
				return fmt.Errorf("paper_values: %s params %q: %w", v.Platform, v.Params, err)
			}
		}
	}
	return nil
}

// paperMatch is one paper value with this run's cell and baseline cell
// for it.
type paperMatch struct {
	v            PaperValue
	metric       string
	paperRatio   float64
	havePaper    bool
	cell, base   report.Cell
	haveCell     bool
	haveBase     bool
	runRatio     float64
	haveRunRatio bool
}

// paperMatches pairs an experiment's paper values with a run's cells (the
// study's central value), at most one cell per value: the one its params
// select (the first in cell order when several do).
func paperMatches(f File, e Experiment, cells []report.Cell, central string) []paperMatch {
	pv := e.PaperValues
	if pv == nil || e.Workload == "" {
		return nil
	}
	sel, err := spec.Parse(e.Workload)
	if err != nil {
		return nil
	}
	find := func(label string, inst int, params, metric string) (report.Cell, bool) {
		need := map[string]string{}
		if params != "" {
			if sp, err := spec.Parse(sel.Name + ":" + params); err == nil {
				need = sp.Params
			}
		}
		for _, c := range selectCells(cells, sel, metric) {
			sp, err := spec.Parse(c.Workload + ":" + c.Params)
			if err != nil || c.Label() != label || c.Instances != inst || !Selects(spec.Spec{Name: sp.Name, Params: need}, sp.Name, sp.Params) {
				continue
			}
			return c, true
		}
		return report.Cell{}, false
	}
	var out []paperMatch
	for _, v := range pv.Values {
		m := paperMatch{v: v, metric: pv.metricOf(e, v)}
		m.paperRatio, m.havePaper = pv.ratio(e, v)
		l, _ := SplitAt(v.Platform)
		m.cell, m.haveCell = find(l, v.instances(), v.Params, m.metric)
		if bl, at := SplitAt(pv.Baseline); pv.Baseline != "" && m.haveCell {
			n := at
			if n == 0 {
				n = m.cell.Instances
			}
			// this run's baseline cell with the same parameters as ours
			for _, c := range selectCells(cells, sel, m.metric) {
				if c.Label() == bl && c.Instances == n && c.Params == m.cell.Params {
					m.base, m.haveBase = c, true
					break
				}
			}
		}
		if m.haveCell && m.haveBase {
			a, b := centralValue(m.cell, central), centralValue(m.base, central)
			if a > 0 && b > 0 {
				m.runRatio, m.haveRunRatio = a/b, true
			}
		}
		out = append(out, m)
	}
	return out
}

// paperPoints are the paper's values placed on a figure of metric: the
// paper's ratio times this run's baseline, at the cell they describe.
func paperPoints(ms []paperMatch, metric, central string) []report.PaperPoint {
	var out []report.PaperPoint
	for _, m := range ms {
		if m.metric != metric || !m.havePaper || !m.haveCell || !m.haveBase {
			continue
		}
		b := centralValue(m.base, central)
		if b <= 0 {
			continue
		}
		out = append(out, report.PaperPoint{Label: m.cell.Label(), Instances: m.cell.Instances, Params: m.cell.Params,
			Value: m.paperRatio * b, Ratio: m.paperRatio})
	}
	return out
}

// paperTable puts the paper's numbers and ratios beside this run's, for
// one metric (or every metric when metric is "").
func paperTable(e Experiment, ms []paperMatch, metric, central string) *report.SectionTable {
	pv := e.PaperValues
	var rows [][]string
	for _, m := range ms {
		if metric != "" && m.metric != metric {
			continue
		}
		what := m.v.Platform
		if m.v.Params != "" {
			what += " " + m.v.Params
		}
		if n := m.v.instances(); n != 1 && !strings.Contains(m.v.Platform, "@") {
			what += " ×" + strconv.Itoa(n)
		}
		paper := "-"
		if m.v.Value != 0 {
			paper = num(m.v.Value)
			if pv.Unit != "" {
				paper += " " + pv.Unit
			}
		}
		if m.v.Text != "" {
			if paper == "-" {
				paper = m.v.Text
			} else {
				paper += " (" + m.v.Text + ")"
			}
		}
		pr, rr := "-", "-"
		if m.havePaper {
			pr = fmt.Sprintf("%.3f", m.paperRatio)
		}
		switch {
		case m.haveRunRatio:
			rr = fmt.Sprintf("%.3f", m.runRatio)
		case !m.haveCell:
			rr = "no cell in this run"
		case pv.Baseline != "" && !m.haveBase:
			rr = "no " + pv.Baseline + " cell in this run"
		}
		row := []string{what}
		if metric == "" {
			row = append(row, m.metric)
		}
		rows = append(rows, append(row, paper, pr, rr))
	}
	if len(rows) == 0 {
		return nil
	}
	base := pv.Baseline
	if base == "" {
		base = "-"
	}
	t := &report.SectionTable{Caption: fmt.Sprintf("the paper's numbers (%s) beside this run's: ratios to %s, the paper's own baseline (this run's from its %ss)", pv.Source, base, central)}
	t.Header = []string{"platform"}
	if metric == "" {
		t.Header = append(t.Header, "metric")
	}
	t.Header = append(t.Header, "the paper", "the paper's ratio", "this run's ratio")
	if pv.Note != "" {
		t.Caption += "; " + pv.Note
	}
	t.Rows = rows
	return t
}

// num formats a paper's number as printed, without trailing zeros.
func num(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// paperSection fills a section with the paper's numbers: a second series
// per drawn metric and the table of ratios (or the note saying why there
// are no numbers).
func paperSection(sec *report.Section, f File, e Experiment, cells []report.Cell, central string) {
	pv := e.PaperValues
	if pv == nil {
		return
	}
	if len(pv.Values) == 0 {
		sec.Notes = append(sec.Notes, fmt.Sprintf("the paper's numbers (%s): %s", pv.Source, pv.Note))
		return
	}
	ms := paperMatches(f, e, cells, central)
	for i := range sec.Panels {
		sec.Panels[i].Paper = paperPoints(ms, sec.Panels[i].Metric, central)
	}
	drawn := map[string]bool{}
	for _, p := range sec.Panels {
		drawn[p.Metric] = true
	}
	// One table per drawn metric with paper values, then the rest.
	var rest []paperMatch
	for _, p := range sec.Panels {
		if t := paperTable(e, ms, p.Metric, central); t != nil {
			sec.PaperTables = append(sec.PaperTables, *t)
		}
	}
	for _, m := range ms {
		if !drawn[m.metric] {
			rest = append(rest, m)
		}
	}
	if t := paperTable(e, rest, "", central); t != nil {
		sec.PaperTables = append(sec.PaperTables, *t)
	}
	if len(sec.PaperTables) == 0 && pv.Note != "" {
		sec.Notes = append(sec.Notes, fmt.Sprintf("the paper's numbers (%s): %s", pv.Source, pv.Note))
	}
}
