package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/isobench/isobench/internal/hoststate"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/stats"
)

// VerdictNoPhaseVerdict is the verdict of a startup phase compared across
// two different platforms: each platform marks its phases at its own
// points (see PhaseMetric), so their ratio is shown in the details but is
// not judged.
const VerdictNoPhaseVerdict = "no verdict: the phase means something else on each platform"

// PhaseMetric reports whether a metric is one of the startup workload's
// per-phase times, whose boundaries each platform sets itself: create_ms
// ends when the platform says the instance exists (native: a scratch
// directory; Docker: the create API call returned, image and rootfs ready;
// runc/crun: the createRuntime hook, namespaces and cgroup made; QEMU: the
// qemu process started), start_ms ends when it says the main process was
// started (Docker: the start call returned; runc/crun: the poststart hook;
// QEMU: the guest's exec server said hello, i.e. kernel boot), and
// first_instruction_ms runs from there to the agent's hello. The same
// phase name therefore covers different work on two platforms, and only
// the end-to-end times (startup_ms, exit_ms, remove_ms) are compared.
func PhaseMetric(m string) bool {
	switch m {
	case "create_ms", "start_ms", "first_instruction_ms":
		return true
	}
	return false
}

// headlineMetric is the metric a workload's summary line is about: the
// first metric the workload reports (its primary one), never the runner's
// bookkeeping metric or a startup phase.
func headline(cells []Cell) map[string]string {
	best := map[string]Cell{}
	for _, c := range cells {
		if sample.Bookkeeping(c.Metric) || PhaseMetric(c.Metric) {
			continue
		}
		k := workloadLabel(c)
		if b, ok := best[k]; !ok || c.seen < b.seen {
			best[k] = c
		}
	}
	out := map[string]string{}
	for k, c := range best {
		out[k] = c.Metric
	}
	return out
}

// SummaryOptions control Summary.
type SummaryOptions struct {
	// DetailsHint is the command that prints the full tables, named at
	// the end ("" for none).
	DetailsHint string
	// Warmups is how many warm-up repetitions the run made (the advice
	// for a cold start: add one, or raise it).
	Warmups int
}

// Summary writes the one-screen answer of a run, in the style of
// hyperfine: per workload (its headline metric) and instance count, the
// baseline first with its median, then every other platform as a ratio to
// the baseline with the ratio's 95% interval and the verdict. A detected
// difference reads "N× slower/faster than BASE (median vs median)"; no
// percentages. Noise warnings follow as one line per kind, with advice.
func Summary(w io.Writer, cells []Cell, o SummaryOptions) error {
	base := baselineOf(cells)
	if base == "" {
		fmt.Fprintln(w, "No baseline: nothing was compared (run with more than one platform, or give --baseline).")
	} else {
		fmt.Fprintf(w, "Baseline: %s. Ratios are medians' ratios to %s with 95%% bootstrap intervals.\n", base, base)
	}
	groups := headlineGroups(cells)
	width := 0
	for _, g := range groups {
		for _, c := range g.Cells {
			width = max(width, len(c.Label()))
		}
	}
	for _, g := range groups {
		fmt.Fprintf(w, "\n%s\n", g.Title)
		for _, c := range g.Cells {
			line := summaryLine(c)
			if c.Emulated != "" {
				line += " — " + EmulatedMark
			}
			fmt.Fprintf(w, "  %-*s  %s\n", width, c.Label(), line)
		}
	}
	if lines := emulatedLines(cells); len(lines) > 0 {
		fmt.Fprintln(w)
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	if err := noiseLines(w, cells, o.Warmups); err != nil {
		return err
	}
	if o.DetailsHint != "" {
		fmt.Fprintf(w, "\nFull tables (every metric, startup phase and instance count): %s\n", o.DetailsHint)
	}
	return nil
}

// summaryLine is one platform's comparison with the baseline.
func summaryLine(c Cell) string {
	unit := " " + c.Unit
	switch {
	case c.N == 0:
		return "no repetition finished"
	case c.Baseline == "":
		return fmt.Sprintf("%s%s (median of %d; no baseline to compare with)", num(c.Median), unit, c.N)
	case c.Label() == c.Baseline:
		return fmt.Sprintf("%s%s (median of %d) — baseline", num(c.Median), unit, c.N)
	case c.Ratio <= 0 || math.IsNaN(c.Ratio):
		return fmt.Sprintf("%s%s: no ratio (%s)", num(c.Median), unit, c.Verdict)
	}
	ci := ""
	if c.RatioValid {
		ci = fmt.Sprintf(", 95%% CI [%s, %s]", ratioNum(c.RatioCILow), ratioNum(c.RatioCIHigh))
	}
	for _, w := range c.Warnings {
		if strings.HasPrefix(w, hoststate.BaselineKind+":") {
			// never a ratio presented as the platform's merit alone
			ci += "; the host's state differed: see " + hoststate.BaselineKind
			break
		}
	}
	baseMedian := c.Median / c.Ratio
	switch c.Verdict {
	case stats.VerdictSlower, stats.VerdictFaster:
		// The factor by which it is worse or better, ≥ 1, with its
		// interval oriented the same way.
		f, lo, hi := c.Ratio, c.RatioCILow, c.RatioCIHigh
		if (c.Verdict == stats.VerdictSlower) != (c.Better == stats.BetterLower) {
			f, lo, hi = 1/c.Ratio, 1/c.RatioCIHigh, 1/c.RatioCILow
		}
		if c.RatioValid {
			ci = fmt.Sprintf(", 95%% CI [%s, %s]", ratioNum(lo), ratioNum(hi))
		}
		return fmt.Sprintf("%s× %s than %s (%s%s vs %s%s)%s", ratioNum(f), c.Verdict, c.Baseline, num(c.Median), unit, num(baseMedian), unit, ci)
	}
	return fmt.Sprintf("%s× %s%s — %s", ratioNum(c.Ratio), c.Baseline, ci, c.Verdict)
}

// ratioNum prints a ratio with three significant digits (1.01, 58.2, 913).
func ratioNum(r float64) string {
	switch a := math.Abs(r); {
	case math.IsNaN(r) || math.IsInf(r, 0):
		return "-"
	case a >= 100:
		return fmt.Sprintf("%.0f", r)
	case a >= 10:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

// noiseAdvice is what to do about each kind of noise warning.
var noiseAdvice = map[string]string{
	"noisy":                   "raise --reps or use --reps auto; see the report",
	"cold start":              "add --warmup 1",
	"drift":                   "something changed during the run (thermal throttling, another load); rerun on a quiet host",
	"short window":            "lengthen the workload's duration: its instances did not run together long enough",
	"accept queue overflowed": "the servers' accept queues overflowed, and the clients' SYN retransmission timeouts are in those values: use fewer users (see the report)",
	hoststate.Kind:            "isobench lets TIME_WAIT sockets, dirty pages and leftover processes drain before each repetition (bounded); what was left is in the report: rerun when nothing else runs on the host",
	hoststate.BaselineKind:    "those ratios measure the host's state as much as the platforms; see the report",
	FasterKind:                "isolation should not make the same work faster: find what else differs (the network path, the file system, the host's state) before reading it as a platform's merit",
}

// noiseLines prints one line per kind of noise warning: how many cells,
// what the kind means and the advice.
func noiseLines(w io.Writer, cells []Cell, warmups int) error {
	var order []string
	count := map[string]int{}
	for _, c := range cells {
		seen := map[string]bool{}
		for _, wn := range c.Warnings {
			kind, _, _ := strings.Cut(wn, ":")
			if seen[kind] {
				continue
			}
			seen[kind] = true
			if count[kind] == 0 {
				order = append(order, kind)
			}
			count[kind]++
		}
	}
	if len(order) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	for _, k := range order {
		what := k
		switch k {
		case "noisy":
			what = "noisy (CV > 10%)"
		case "cold start":
			what = "with a cold start (first repetition far off)"
		case "drift":
			what = "drifting over the run"
		case hoststate.Kind:
			what = "whose repetitions started from different host states"
		case hoststate.BaselineKind:
			what = "compared with a baseline whose host state differed"
		case "short window":
			what = "whose instances ran together for under 90% of their run"
		case "accept queue overflowed":
			what = "noisy while their server's accept queue overflowed"
		case FasterKind:
			what = "faster than the bare host beyond their interval"
		}
		advice := noiseAdvice[k]
		if k == "cold start" && warmups > 0 {
			advice = fmt.Sprintf("it ran after %d warm-up repetition(s): raise --warmup", warmups)
		}
		if advice == "" {
			advice = "see the report"
		}
		cellsWord := "cells"
		if count[k] == 1 {
			cellsWord = "cell"
		}
		if _, err := fmt.Fprintf(w, "warning: %d %s %s: %s\n", count[k], cellsWord, what, advice); err != nil {
			return err
		}
	}
	return nil
}

// cellJSON is Cell's JSON form, in the same field order, with the fields
// that may not apply as pointers.
type cellJSON struct {
	Platform    string    `json:"platform"`
	Options     string    `json:"options"`
	Workload    string    `json:"workload"`
	Params      string    `json:"params"`
	Instances   int       `json:"instances"`
	Metric      string    `json:"metric"`
	Unit        string    `json:"unit"`
	Better      string    `json:"better"`
	N           int       `json:"n"`
	Median      float64   `json:"median"`
	Mean        float64   `json:"mean"`
	Stdev       float64   `json:"stdev"`
	CV          float64   `json:"cv"`
	Min         float64   `json:"min"`
	Max         float64   `json:"max"`
	P5          float64   `json:"p5"`
	P95         float64   `json:"p95"`
	CILow       float64   `json:"ci_low"`
	CIHigh      float64   `json:"ci_high"`
	CIValid     bool      `json:"ci_valid"`
	Outliers    int       `json:"outliers"`
	Baseline    string    `json:"baseline"`
	Ratio       *float64  `json:"ratio"`
	RatioCILow  *float64  `json:"ratio_ci_low"`
	RatioCIHigh *float64  `json:"ratio_ci_high"`
	RatioValid  bool      `json:"ratio_valid"`
	Overhead    *float64  `json:"overhead"`
	Coefficient *float64  `json:"coefficient"`
	Verdict     string    `json:"verdict"`
	Warnings    []string  `json:"warnings,omitempty"`
	Emulated    string    `json:"emulated,omitempty"`
	Values      []float64 `json:"values"`
	Aggregate   []float64 `json:"aggregate,omitempty"`
}

// MarshalJSON writes a cell with null for what does not apply: a cell
// with no baseline (or no valid ratio) has ratio, its interval, overhead
// and coefficient null, never 0.
func (c Cell) MarshalJSON() ([]byte, error) {
	out := cellJSON{c.Platform, c.Options, c.Workload, c.Params, c.Instances, c.Metric, c.Unit, c.Better,
		c.N, c.Median, c.Mean, c.Stdev, c.CV, c.Min, c.Max, c.P5, c.P95, c.CILow, c.CIHigh, c.CIValid, c.Outliers,
		c.Baseline, nil, nil, nil, c.RatioValid, nil, nil, c.Verdict, c.Warnings, c.Emulated, c.Values, c.Aggregate}
	if c.Baseline != "" && c.Ratio > 0 && !math.IsNaN(c.Ratio) && !math.IsInf(c.Ratio, 0) {
		out.Ratio, out.Overhead, out.Coefficient = &c.Ratio, &c.Overhead, &c.Coefficient
		if c.RatioValid {
			out.RatioCILow, out.RatioCIHigh = &c.RatioCILow, &c.RatioCIHigh
		}
	}
	return json.Marshal(out)
}
