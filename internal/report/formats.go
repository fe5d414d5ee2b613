package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/isobench/isobench/internal/stats"
)

// Doc is what a report renders: one run's cells and its environment.
type Doc struct {
	Run         int64             `json:"run"`
	Status      string            `json:"status"`
	Fingerprint map[string]string `json:"fingerprint"`
	Cells       []Cell            `json:"cells"`
	// Study and Sections, when set, put a paper's tables and figures
	// first on the HTML page (the study package fills them in).
	Study    *StudyHeading `json:"study,omitempty"`
	Sections []Section     `json:"sections,omitempty"`
}

// JSON writes the run as one JSON document: its id, status and
// fingerprint, and every cell in "cells".
func JSON(w io.Writer, d Doc) error {
	d = markedDoc(d)
	if d.Fingerprint == nil {
		d.Fingerprint = map[string]string{}
	}
	if d.Cells == nil {
		d.Cells = []Cell{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// JSONL writes one JSON object per cell, one per line (JSON lines): for
// line-by-line tools; the run's id, status and fingerprint are not in it.
func JSONL(w io.Writer, d Doc) error {
	d = markedDoc(d)
	enc := json.NewEncoder(w)
	for _, c := range d.Cells {
		if err := enc.Encode(c); err != nil {
			return err
		}
	}
	return nil
}

// CSV writes the cells' summary columns.
func CSV(w io.Writer, d Doc) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"platform", "options", "workload", "params", "instances", "metric", "unit", "better", "n", "median", "stdev", "cv", "ci_low", "ci_high", "baseline", "ratio", "ratio_ci_low", "ratio_ci_high", "verdict"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, c := range d.Cells {
		cw.Write([]string{c.Platform, c.Options, c.Workload, c.Params, strconv.Itoa(c.Instances), c.Metric, c.Unit, c.Better,
			strconv.Itoa(c.N), f(c.Median), f(c.Stdev), f(c.CV), f(c.CILow), f(c.CIHigh), c.Baseline, f(c.Ratio), f(c.RatioCILow), f(c.RatioCIHigh), c.Verdict})
	}
	cw.Flush()
	return cw.Error()
}

// Markdown writes the fingerprint and a table per workload.
func Markdown(w io.Writer, d Doc) error {
	d = markedDoc(d)
	fmt.Fprintf(w, "# isobench run %d (%s)\n\n## Environment\n\n", d.Run, md(d.Status))
	keys := make([]string, 0, len(d.Fingerprint))
	for k := range d.Fingerprint {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintln(w, "| key | value |\n|---|---|")
	for _, k := range keys {
		fmt.Fprintf(w, "| %s | %s |\n", md(k), md(d.Fingerprint[k]))
	}
	prev := ""
	for _, c := range d.Cells {
		if c.Workload+c.Params != prev {
			prev = c.Workload + c.Params
			fmt.Fprintf(w, "\n## %s\n\n| metric | instances | platform | n | median | stdev | CV | ratio | ratio 95%% CI | verdict |\n|---|---:|---|---:|---:|---:|---:|---:|---|---|\n", md(workloadLabel(c)))
		}
		ratio, rci := "", ""
		if c.Baseline != "" && c.Label() != c.Baseline && c.Ratio != 0 {
			ratio = fmt.Sprintf("%.3f", c.Ratio)
			if c.RatioValid {
				rci = fmt.Sprintf("[%.3f, %.3f]", c.RatioCILow, c.RatioCIHigh)
			}
		}
		verdict := c.Verdict
		if c.Emulated != "" {
			verdict += " — " + EmulatedMark
		}
		fmt.Fprintf(w, "| %s (%s) | %d | %s | %d | %s | %s | %.1f%% | %s | %s | %s |\n", md(c.Metric), md(c.Unit), c.Instances, md(c.Label()), c.N, num(c.Median), num(c.Stdev), 100*c.CV, ratio, rci, md(verdict))
	}
	if lines := emulatedLines(d.Cells); len(lines) > 0 {
		fmt.Fprintln(w)
		for _, l := range lines {
			fmt.Fprintf(w, "- %s\n", md(l))
		}
	}
	return nil
}

// md escapes text for a Markdown table cell: '|' would end the cell, and
// '<', '>' would be read as HTML; a backslash escapes any ASCII punctuation.
func md(s string) string {
	return mdEscaper.Replace(s)
}

var mdEscaper = strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", `\<`, ">", `\>`)

// Change is one cell compared between two runs.
type Change struct {
	Cell  Cell // from B
	Ratio stats.Ratio
}

// CompareCells pairs cells of A and B by platform, workload, params,
// instances and metric, and compares B against A (unpaired: the runs are
// not interleaved with each other).
func CompareCells(a, b []Cell, opt stats.Options) []Change {
	type k struct {
		label, w, p string
		n           int
		m           string
	}
	index := map[k]Cell{}
	for _, c := range a {
		index[k{c.Label(), c.Workload, c.Params, c.Instances, c.Metric}] = c
	}
	var out []Change
	for _, c := range b {
		ac, ok := index[k{c.Label(), c.Workload, c.Params, c.Instances, c.Metric}]
		if !ok {
			continue
		}
		out = append(out, Change{Cell: c, Ratio: stats.Compare(ac.Values, c.Values, false, c.Better, opt)})
	}
	return out
}

// ChangeTable prints B/A per cell; only changes outside the noise get a verdict other than "no detectable difference".
func ChangeTable(w io.Writer, changes []Change) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tmetric\tinst\tplatform\tA median\tB median\tB/A\t95% CI\tverdict\t")
	for _, ch := range changes {
		c, r := ch.Cell, ch.Ratio
		ci := "-"
		if r.CIValid {
			ci = fmt.Sprintf("[%.3f, %.3f]", r.CILow, r.CIHigh)
		}
		flag := r.Verdict
		if r.Verdict == stats.VerdictFaster || r.Verdict == stats.VerdictSlower {
			flag = "CHANGED: " + r.Verdict
		}
		fmt.Fprintf(tw, "%s\t%s (%s)\t%d\t%s\t%s\t%s\t%.3f\t%s\t%s\t\n", workloadLabel(c), c.Metric, c.Unit, c.Instances, c.Label(),
			num(r.BaseMedian), num(r.OtherMedian), r.Ratio, ci, flag)
	}
	return tw.Flush()
}
