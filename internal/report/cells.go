// Package report turns stored samples into cells (one platform × workload ×
// parameters × instance count × metric), summarises each with the stats
// package against the baseline platform, and renders them.
package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/hoststate"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/stats"
	"github.com/isobench/isobench/internal/window"
)

// Cell is one summarised row. Its JSON form is the report's json format.
type Cell struct {
	Platform  string `json:"platform"`
	Options   string `json:"options"`
	Workload  string `json:"workload"`
	Params    string `json:"params"`
	Instances int    `json:"instances"`
	Metric    string `json:"metric"`
	Unit      string `json:"unit"`
	Better    string `json:"better"`

	N        int     `json:"n"`
	Median   float64 `json:"median"`
	Mean     float64 `json:"mean"`
	Stdev    float64 `json:"stdev"`
	CV       float64 `json:"cv"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	P5       float64 `json:"p5"`
	P95      float64 `json:"p95"`
	CILow    float64 `json:"ci_low"`
	CIHigh   float64 `json:"ci_high"`
	CIValid  bool    `json:"ci_valid"`
	Outliers int     `json:"outliers"`

	Baseline    string  `json:"baseline"`
	Ratio       float64 `json:"ratio"`
	RatioCILow  float64 `json:"ratio_ci_low"`
	RatioCIHigh float64 `json:"ratio_ci_high"`
	RatioValid  bool    `json:"ratio_valid"`
	Overhead    float64 `json:"overhead"`
	// Coefficient is the papers' performance coefficient, the platform's
	// cost over the baseline's from the medians: 1 the baseline, > 1
	// worse (see stats.Ratio.Coefficient, and Coefficient for the study
	// tables' from the central value).
	Coefficient float64 `json:"coefficient"`
	Verdict     string  `json:"verdict"`

	Warnings []string `json:"warnings,omitempty"`

	// Emulated, when not "", says the cell's platform is a VM that ran
	// under QEMU's TCG emulation (not a hypervisor), and why: from its
	// samples' tags (Cells) or the run's fingerprint (MarkEmulated).
	Emulated string `json:"emulated,omitempty"`

	// Values are the per-repetition values in repetition order (the mean
	// over the instances of each repetition).
	Values []float64 `json:"values"`
	// Aggregate holds, when instances > 1, the per-repetition aggregate
	// over all instances (sum of throughput, worst latency).
	Aggregate []float64 `json:"aggregate,omitempty"`

	seen int // order of the cell's first sample (a workload's first metric is its primary one)
	// shown is the workload as users see it (Options.WorkloadLabel), ""
	// for the full workload:params
	shown string
}

// WorkloadLabel is the cell's workload as shown to users: its name and the
// parameters that differ from their defaults when the cells were made with
// Options.WorkloadLabel, else the name with the full stored parameters.
// Params keeps the full stored string (JSON, CSV, keys).
func (c Cell) WorkloadLabel() string {
	if c.shown != "" {
		return c.shown
	}
	if c.Params == "" {
		return c.Workload
	}
	return c.Workload + ":" + c.Params
}

// Label is the platform with its options, as given on the command line.
func (c Cell) Label() string { return Label(c.Platform, c.Options) }

// Label joins a platform name and options.
func Label(platform, options string) string {
	if options == "" {
		return platform
	}
	return platform + ":" + options
}

type key struct {
	label, workload, params string
	instances               int
	metric                  string
}

// Options control Cells.
type Options struct {
	Baseline string // platform label; "" for none
	Stats    stats.Options
	// Warmups is how many warm-up repetitions the run made before the
	// measured ones (the noise warnings' advice depends on it).
	Warmups int
	// WorkloadLabel, when set, is how a workload and its stored
	// parameters are shown (workload.Registry.Label: the parameters that
	// differ from their defaults); without it the full string is.
	WorkloadLabel func(workload, params string) string
	// IsHost, when set, says whether a platform (its name, without
	// options) is the bare host (platform.Registry.IsHost): a cell that
	// reads better than such a baseline beyond its interval is warned
	// about. Without it there is no such warning.
	IsHost func(platform string) bool
}

// cellAcc gathers one cell's samples while Cells groups them.
type cellAcc struct {
	cell   Cell
	perRep map[int][]float64
	aggRep map[int]float64
	order  int
	// the host state each repetition started from (hoststate tags)
	stateRep map[int]map[string]float64
	states   []map[string]float64 // in the order of Values
}

// Cells groups samples into summarised cells, in a stable order (workload,
// params, metric, instances, platform in the order first seen). Warm-up samples are
// left out.
func Cells(samples []sample.Sample, o Options) []Cell {
	groups, labelOrder := groupSamples(samples)
	var cells []*cellAcc
	for _, g := range groups {
		g.summarize(o)
		cells = append(cells, g)
	}
	settleEmulated(cells)
	ptrs := make([]*Cell, len(cells))
	for i, g := range cells {
		ptrs[i] = &g.cell
	}
	windowWarnings(ptrs)
	overflowWarnings(ptrs)
	bl, at := SplitBaseline(o.Baseline)
	if _, ok := labelOrder[o.Baseline]; ok {
		bl, at = o.Baseline, 0 // a label with an @ of its own
	}
	if o.Baseline != "" {
		compareBaseline(cells, groups, o, bl, at)
	}
	if _, ok := labelOrder[bl]; ok {
		labelOrder[bl] = -1 // the baseline is listed first
	}
	slices.SortStableFunc(cells, func(a, b *cellAcc) int {
		ca, cb := a.cell, b.cell
		return cmp.Or(
			strings.Compare(ca.Workload, cb.Workload),
			strings.Compare(ca.Params, cb.Params),
			cmp.Compare(metricRank(ca.Metric), metricRank(cb.Metric)),
			strings.Compare(ca.Metric, cb.Metric),
			cmp.Compare(ca.Instances, cb.Instances),
			cmp.Compare(labelOrder[ca.Label()], labelOrder[cb.Label()]),
		)
	})
	out := make([]Cell, len(cells))
	for i, g := range cells {
		out[i] = g.cell
	}
	if o.WorkloadLabel != nil {
		relabel(out, o.WorkloadLabel)
	}
	return out
}

// groupSamples sorts the measured samples into one accumulator per cell
// and numbers the platform labels in the order first seen.
func groupSamples(samples []sample.Sample) (map[key]*cellAcc, map[string]int) {
	groups := map[key]*cellAcc{}
	labelOrder := map[string]int{}
	n := 0
	for _, s := range samples {
		if s.Warmup {
			continue
		}
		lbl := Label(s.Platform, s.Options)
		if _, ok := labelOrder[lbl]; !ok {
			labelOrder[lbl] = len(labelOrder)
		}
		k := key{lbl, s.Workload, s.Params, s.Instances, s.Metric}
		g, ok := groups[k]
		if !ok {
			g = &cellAcc{cell: Cell{Platform: s.Platform, Options: s.Options, Workload: s.Workload, Params: s.Params,
				Instances: s.Instances, Metric: s.Metric, Unit: s.Unit, Better: string(s.Better)},
				perRep: map[int][]float64{}, aggRep: map[int]float64{}, stateRep: map[int]map[string]float64{}, order: n}
			g.cell.seen = n
			n++
			groups[k] = g
		}
		if s.Instance == sample.AggregateInstance {
			g.aggRep[s.Rep] = s.Value
		} else {
			g.perRep[s.Rep] = append(g.perRep[s.Rep], s.Value)
		}
		if g.cell.Emulated == "" {
			if tcg, why := tagsEmulated(lbl, s.Tags); tcg {
				g.cell.Emulated = cmp.Or(why, noReason)
			}
		}
		if _, ok := g.stateRep[s.Rep]; !ok {
			if v := hoststate.Values(s.Tags); len(v) > 0 {
				g.stateRep[s.Rep] = v
			}
		}
	}
	return groups, labelOrder
}

// summarize sets the cell's values (one per repetition: the instances'
// mean, or the aggregate), its statistics and its noise warnings.
func (g *cellAcc) summarize(o Options) {
	reps := map[int]bool{}
	for r := range g.perRep {
		reps[r] = true
	}
	for r := range g.aggRep {
		reps[r] = true
	}
	var idx []int
	for r := range reps {
		idx = append(idx, r)
	}
	slices.Sort(idx)
	for _, r := range idx {
		g.states = append(g.states, g.stateRep[r])
		if vs, ok := g.perRep[r]; ok {
			var sum float64
			for _, v := range vs {
				sum += v
			}
			g.cell.Values = append(g.cell.Values, sum/float64(len(vs)))
			if a, ok := g.aggRep[r]; ok && g.cell.Instances > 1 {
				g.cell.Aggregate = append(g.cell.Aggregate, a)
			}
		} else {
			g.cell.Values = append(g.cell.Values, g.aggRep[r])
		}
	}
	sm := stats.Summarize(g.cell.Values, o.Stats)
	c := &g.cell
	c.N, c.Median, c.Mean, c.Stdev, c.CV = sm.N, sm.Median, sm.Mean, sm.Stdev, sm.CV
	c.Min, c.Max, c.P5, c.P95 = sm.Min, sm.Max, sm.P5, sm.P95
	c.CILow, c.CIHigh, c.CIValid, c.Outliers = sm.CILow, sm.CIHigh, sm.CIValid, len(sm.Outliers)
	c.Warnings = stats.Warnings(c.Values, c.Better, stats.WarnOptions{Warmups: o.Warmups})
	if !sample.Bookkeeping(c.Metric) {
		c.Warnings = append(c.Warnings, hoststate.Warnings(c.Values, c.Better, c.CV > stats.DefaultCVThreshold, g.states)...)
	}
}

// settleEmulated marks every cell of a VM platform emulated when some of
// them are: its accelerator is settled once per run, so when some of its
// samples say TCG, all its cells ran emulated.
func settleEmulated(cells []*cellAcc) {
	emulated := map[string]string{}
	for _, g := range cells {
		if e := g.cell.Emulated; e != "" && (emulated[g.cell.Label()] == "" || emulated[g.cell.Label()] == noReason) {
			emulated[g.cell.Label()] = e
		}
	}
	for _, g := range cells {
		if e, ok := emulated[g.cell.Label()]; ok {
			g.cell.Emulated = e
		}
	}
}

// compareBaseline compares each cell with the baseline platform bl's cell
// of the same workload and metric, at the cell's instance count or, when
// at is not 0, at at instances (baseline PLATFORM@N).
func compareBaseline(cells []*cellAcc, groups map[key]*cellAcc, o Options, bl string, at int) {
	for _, g := range cells {
		c := &g.cell
		if sample.Bookkeeping(c.Metric) {
			continue // the harness's own diagnostic: no platform's merit
		}
		n := cmp.Or(at, c.Instances) // baseline PLATFORM@N: every cell against N instances of it
		b, ok := groups[key{bl, c.Workload, c.Params, n, c.Metric}]
		if !ok {
			continue
		}
		c.Baseline = o.Baseline
		// Paired repetitions only within one instance count (they ran side by side).
		r := stats.Compare(b.cell.Values, c.Values, n == c.Instances, c.Better, o.Stats)
		c.Ratio, c.RatioCILow, c.RatioCIHigh, c.RatioValid = r.Ratio, r.CILow, r.CIHigh, r.Valid && r.CIValid
		c.Overhead, c.Coefficient, c.Verdict = r.Overhead, r.Coefficient, r.Verdict
		if c.Label() == bl && n == c.Instances {
			c.Baseline, c.Verdict = bl, "baseline"
		} else if PhaseMetric(c.Metric) && c.Platform != b.cell.Platform {
			c.Verdict = VerdictNoPhaseVerdict
		}
		if c.Verdict != "baseline" && !sample.Bookkeeping(c.Metric) {
			if w := baselineCarryOver(b.cell, b.states, *c, g.states); w != "" {
				c.Warnings = append(c.Warnings, w)
			}
			if w := fasterThanHost(b.cell, *c, o.IsHost); w != "" {
				c.Warnings = append(c.Warnings, w)
			}
		}
	}
}

// relabel sets the cells' shown workload labels with label; two different
// parameter sets that label would show alike (they differ only in a
// parameter that plays no part, or in how a value is written) keep their
// full strings, so that no two rows read the same.
func relabel(cells []Cell, label func(workload, params string) string) {
	type wp struct{ workload, params string }
	shown := map[wp]string{}
	by := map[string]map[string]bool{} // label -> the params it shows
	for _, c := range cells {
		k := wp{c.Workload, c.Params}
		if _, ok := shown[k]; ok {
			continue
		}
		l := label(c.Workload, c.Params)
		shown[k] = l
		if by[l] == nil {
			by[l] = map[string]bool{}
		}
		by[l][c.Params] = true
	}
	for i := range cells {
		if l := shown[wp{cells[i].Workload, cells[i].Params}]; len(by[l]) == 1 {
			cells[i].shown = l
		}
	}
}

// baselineCarryOver is the warning of cell c compared with the baseline
// cell b when the baseline's repetitions started from different host
// states (b carries a carry-over warning) or c's and b's started from
// different states; "" otherwise. The ratio then measures the host's
// state as much as the platform.
func baselineCarryOver(b Cell, bStates []map[string]float64, c Cell, cStates []map[string]float64) string {
	var why []string
	for _, w := range b.Warnings {
		if strings.HasPrefix(w, hoststate.Kind+":") {
			why = append(why, fmt.Sprintf("the repetitions of %s started from different host states (see its warnings)", b.Label()))
			break
		}
	}
	if d := hoststate.Compare(b.Label(), bStates, c.Label(), cStates); d != "" {
		why = append(why, d)
	}
	if len(why) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %s; the ratio to %s measures the host's state (what earlier repetitions or other programs left) as much as %s's merit",
		hoststate.BaselineKind, strings.Join(why, "; "), b.Label(), c.Label())
}

// FasterKind starts the warning on a cell that reads better than the bare
// host beyond its interval.
const FasterKind = "faster than native"

// fasterThanHost is the warning of cell c when it reads better than its
// baseline b, the bare host (isHost: native), beyond c's 95% ratio
// interval: an isolated instance runs the same work with more in its way,
// so such a gain comes from something else that differs between the two,
// which the ratio does not name; "" otherwise.
func fasterThanHost(b Cell, c Cell, isHost func(string) bool) string {
	if isHost == nil || !isHost(b.Platform) || isHost(c.Platform) || !c.RatioValid {
		return ""
	}
	switch {
	case c.Better == string(sample.Lower) && c.RatioCIHigh < 1:
	case c.Better == string(sample.Higher) && c.RatioCILow > 1:
	default:
		return ""
	}
	return fmt.Sprintf("%s: %s reads better than %s beyond its interval (ratio %.3f [%.3f, %.3f]); isolation adds work to the same task, so look for what else differs before calling it %s's merit: the network path (a client on the host reaches %s over loopback and an instance over a bridge or NAT, on other queues and CPUs), the file system under the scratch directory, a client on the host that gets another CPU share beside one than beside the other, or the host's state (see carry-over)",
		FasterKind, c.Label(), b.Label(), c.Ratio, c.RatioCILow, c.RatioCIHigh, c.Label(), b.Label())
}

// SplitBaseline splits a baseline pinned to an instance count,
// "native@1" (the host run once, against N instances of the others), into
// the label and the count; at is 0 when the baseline is not pinned.
func SplitBaseline(s string) (label string, at int) {
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return s, 0
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n < 1 {
		return s, 0
	}
	return s[:i], n
}

// metricRank puts the runner's bookkeeping metric last.
func metricRank(m string) int {
	if sample.Bookkeeping(m) {
		return 1
	}
	return 0
}

// runGroup is a platform × workload × instance count: the cells of every
// metric of the same repetitions, which a cell of one metric (the window's
// overlap, the server's overflows) can explain.
type runGroup struct {
	label, workload, params string
	n                       int
}

func groupOf(c *Cell) runGroup { return runGroup{c.Label(), c.Workload, c.Params, c.Instances} }

// overflowWarnings explains the noisy cells of a platform × workload ×
// instance count whose server's accept queue overflowed
// (sample.OverflowMetric): connections it had no room for wait for the
// clients' SYN retransmissions (1 s, 3 s, 7 s ...), which spread their
// times by whole seconds whatever the platform costs.
func overflowWarnings(cells []*Cell) {
	over := map[runGroup][2]float64{} // repetitions with overflows, the most in one
	for _, c := range cells {
		if c.Metric != sample.OverflowMetric {
			continue
		}
		var reps, most float64
		for _, v := range c.Values {
			if v > 0 {
				reps++
				most = max(most, v)
			}
		}
		if reps > 0 {
			over[groupOf(c)] = [2]float64{reps, most}
		}
	}
	for _, c := range cells {
		o, ok := over[groupOf(c)]
		// the servers' readiness (ready_ms, instance_ready_ms) is over
		// before the clients start: no overflow weighs on it
		if !ok || c.Metric == sample.OverflowMetric || sample.Bookkeeping(c.Metric) || strings.HasSuffix(c.Metric, "ready_ms") || c.CV <= stats.DefaultCVThreshold {
			continue
		}
		c.Warnings = append(c.Warnings, fmt.Sprintf("accept queue overflowed: in %.0f of %d repetitions the server had no room for connections (%s, up to %.0f in one); they waited for the clients' SYN retransmissions (1 s, 3 s, 7 s ...), which spread these values: fewer users, or a larger backlog",
			o[0], len(c.Values), sample.OverflowMetric, o[1]))
	}
}

// windowWarnings flags the cells of a platform × workload × instance count
// whose instances, in some repetition, ran together for less than
// window.MinFrac of their run (sample.WindowMetric): their rates were
// read over a window that short, so the cell says so instead of being
// averaged silently.
//
// A workload that tracks nothing has no window: its cells at several
// instances carry sample.UnwindowedMetric, and where the instances'
// releases were spread over more than 1 − window.MinFrac of the run, the
// cell says its rates are each instance's own.
func windowWarnings(cells []*Cell) {
	for g, w := range underMinFrac(cells, sample.UnwindowedMetric) {
		for _, c := range cells {
			if groupOf(c) == g && c.Metric != sample.SkewMetric {
				c.Warnings = append(c.Warnings, fmt.Sprintf("no common window: this workload does not track its work, so each of the %d instances' rates is over its own run, and in %d of %d repetitions their releases were spread over more than %.0f%% of it (at worst they shared %.0f%%): a sum over them counts time some ran alone; lengthen duration",
					c.Instances, w.below, w.reps, 100*(1-window.MinFrac), w.low))
			}
		}
	}
	for g, w := range underMinFrac(cells, sample.WindowMetric) {
		for _, c := range cells {
			if groupOf(c) == g {
				c.Warnings = append(c.Warnings, fmt.Sprintf("short window: in %d of %d repetitions the %d instances ran together for under %.0f%% of their run (lowest %.0f%%); their rates are read over that window: lengthen duration",
					w.below, w.reps, c.Instances, 100*window.MinFrac, w.low))
			}
		}
	}
}

// shortShare is a group's share metric (percent) at its lowest and the
// repetitions in which it fell under window.MinFrac.
type shortShare struct {
	low         float64
	below, reps int
}

// underMinFrac finds the groups whose share metric (WindowMetric,
// UnwindowedMetric) fell under window.MinFrac in some repetition.
func underMinFrac(cells []*Cell, metric string) map[runGroup]shortShare {
	out := map[runGroup]shortShare{}
	for _, c := range cells {
		if c.Metric != metric {
			continue
		}
		s := shortShare{low: 100, reps: len(c.Values)}
		for _, v := range c.Values {
			s.low = min(s.low, v)
			if v < 100*window.MinFrac {
				s.below++
			}
		}
		if s.below > 0 {
			out[groupOf(c)] = s
		}
	}
	return out
}
