package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Table writes cells as aligned text: a header per workload and metric,
// then per instance count and platform: n, median, stdev, CV, the 95%
// interval of the median, and the ratio to the baseline with its interval
// and verdict. Noise warnings follow, grouped by kind.
func Table(w io.Writer, cells []Cell) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	prev := ""
	for _, c := range cells {
		group := c.Workload + "\x00" + c.Params + "\x00" + c.Metric
		if group != prev {
			if prev != "" {
				fmt.Fprintln(tw)
			}
			fmt.Fprintf(tw, "%s  %s [%s, %s is better]\n", workloadLabel(c), c.Metric, c.Unit, c.Better)
			fmt.Fprintln(tw, "  inst\tplatform\tn\tmedian\tstdev\tCV\tmedian 95% CI\tratio\tratio 95% CI\tverdict")
			prev = group
		}
		t := c.texts()
		fmt.Fprintf(tw, "  %d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			c.Instances, c.Label(), c.N, num(c.Median), num(c.Stdev), t.cv, t.ci, t.ratio, t.ratioCI, t.verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if lines := emulatedLines(cells); len(lines) > 0 {
		fmt.Fprintln(w)
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	return warningSummary(w, cells, 6)
}

// warningSummary prints noise warnings grouped by their kind (the text
// before the first colon), at most limit cells named per kind.
func warningSummary(w io.Writer, cells []Cell, limit int) error {
	kinds := map[string][]string{}
	var order []string
	warned := 0
	for _, c := range cells {
		if len(c.Warnings) > 0 {
			warned++
		}
		for _, wn := range c.Warnings {
			kind, _, _ := strings.Cut(wn, ":")
			if _, ok := kinds[kind]; !ok {
				order = append(order, kind)
			}
			kinds[kind] = append(kinds[kind], fmt.Sprintf("%s %s ×%d on %s: %s", c.Workload, c.Metric, c.Instances, c.Label(), wn))
		}
	}
	if len(order) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nnoise warnings (%d of %d cells):\n", warned, len(cells))
	for _, k := range order {
		list := kinds[k]
		fmt.Fprintf(w, "  %s: %d cell(s)\n", k, len(list))
		for i, l := range list {
			if i == limit {
				fmt.Fprintf(w, "    ... and %d more (isobench report --format json lists them all)\n", len(list)-limit)
				break
			}
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	return nil
}

// cellTexts are a cell's summary columns as the table and the HTML page
// print them, "-" where a value does not apply.
type cellTexts struct{ ci, cv, ratio, ratioCI, verdict string }

func (c Cell) texts() cellTexts {
	t := cellTexts{"-", "-", "-", "-", "-"}
	if c.CIValid {
		t.ci = "[" + num(c.CILow) + ", " + num(c.CIHigh) + "]"
	}
	if c.N > 1 && c.Mean != 0 {
		t.cv = fmt.Sprintf("%.1f%%", 100*c.CV)
	}
	if c.Baseline != "" && c.Label() != c.Baseline {
		if c.Ratio != 0 {
			t.ratio = fmt.Sprintf("%.3f", c.Ratio)
		}
		if c.RatioValid {
			t.ratioCI = fmt.Sprintf("[%.3f, %.3f]", c.RatioCILow, c.RatioCIHigh)
		}
	}
	if c.Verdict != "" {
		t.verdict = c.Verdict
	}
	if c.Emulated != "" {
		t.verdict += " — " + EmulatedMark
	}
	return t
}

func workloadLabel(c Cell) string { return c.WorkloadLabel() }

// num prints a value with about four significant digits.
func num(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v == 0:
		return "0"
	}
	a := math.Abs(v)
	prec := 0
	switch {
	case a < 1:
		prec = 4
	case a < 10:
		prec = 3
	case a < 100:
		prec = 2
	case a < 1000:
		prec = 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if prec > 0 {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
