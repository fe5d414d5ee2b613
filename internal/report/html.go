package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/isobench/isobench/internal/stats"
)

const pageCSS = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px auto;max-width:1240px;padding:0 16px;color:#222;background:#fafafa;font-size:14px}
h1{margin:0 0 4px;font-size:24px}h2{margin:28px 0 8px;padding-top:8px;border-top:2px solid #ddd;font-size:20px}h3{margin:18px 0 6px;font-size:16px}
nav{margin:8px 0 16px}a{color:#2a5d9f}
.meta{color:#555;margin:0 0 8px}
table{border-collapse:collapse;margin:6px 0 12px;background:#fff}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}
th{background:#f0f0f0}td.l,th.l{text-align:left}
table.fp td{text-align:left;white-space:normal;max-width:760px;word-break:break-all}
.fp-wrap{columns:2;column-gap:24px}
.fp-wrap table{width:100%}
.warnbox{background:#fff6d6;border:1px solid #e0c050;padding:8px 12px;margin:8px 0;border-radius:4px}
.warnbox ul{margin:4px 0;padding-left:20px}
.ok{color:#2d6a2d}
.error{background:#fde2e1;border:1px solid #d9534f;padding:8px 12px;border-radius:4px}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.charts svg{background:#fff;border:1px solid #ddd;max-width:100%;height:auto}
svg .title{font-weight:bold;font-size:13px}svg .tick{fill:#444;font-size:11px}svg .axis{fill:#222}svg .legend{fill:#222}svg .note{fill:#666;font-size:11px}
.v-slower,.v-lower{background:#fbe3e1}.v-faster,.v-higher{background:#e3f4e1}.v-baseline{color:#777}.v-insufficient{color:#a06000}
footer{margin:32px 0 8px;color:#777;font-size:12px}
nav,h1,h2,h3,.meta,ul.verdict li,.warnbox li{overflow-wrap:anywhere}
.tw{overflow-x:auto;max-width:100%}
.overview svg{background:#fff;border:1px solid #ddd;max-width:100%;height:auto;display:block}
svg .group{font-weight:bold;fill:#222}
ul.verdict{list-style:none;padding-left:0;margin:4px 0 12px}
ul.verdict li{margin:2px 0;padding:2px 6px;border-radius:3px}
ul.verdict .lbl{font-weight:bold;margin-right:4px}
ul.verdict li.v-same{background:#f3f3f3}
details>summary{cursor:pointer;margin:4px 0}
details.has-warnings>summary{color:#8a5a00;font-weight:bold}
@media (max-width:640px){body{margin:8px auto;padding:0 8px;font-size:13px}.fp-wrap{columns:1}table.fp td{max-width:none}}
`

// baselineOf is the baseline label the cells were compared with, or "".
func baselineOf(cells []Cell) string {
	for _, c := range cells {
		if c.Baseline != "" {
			return c.Baseline
		}
	}
	return ""
}

// platformColours gives each platform label a colour, in order of first
// appearance, so a platform has the same colour in every chart.
func platformColours(cells []Cell) map[string]string {
	m := map[string]string{}
	for _, c := range cells {
		if _, ok := m[c.Label()]; !ok {
			m[c.Label()] = colour(len(m))
		}
	}
	return m
}

// metricGroup is the cells of one workload, parameter set and metric.
type metricGroup struct {
	cells []Cell
}

type workloadGroup struct {
	label   string
	metrics []metricGroup
}

// groupByWorkload splits cells (in Cells order) by workload+params and
// then by metric, keeping the order.
func groupByWorkload(cells []Cell) []workloadGroup {
	var out []workloadGroup
	for _, c := range cells {
		lbl := workloadLabel(c)
		if len(out) == 0 || out[len(out)-1].label != lbl {
			out = append(out, workloadGroup{label: lbl})
		}
		g := &out[len(out)-1]
		if len(g.metrics) == 0 || g.metrics[len(g.metrics)-1].cells[0].Metric != c.Metric {
			g.metrics = append(g.metrics, metricGroup{})
		}
		m := &g.metrics[len(g.metrics)-1]
		m.cells = append(m.cells, c)
	}
	return out
}

// anchor makes an id out of a label.
func anchor(s string) string {
	var b strings.Builder
	b.WriteString("w-")
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// differs reports whether a cell's verdict is a detected difference.
func differs(c Cell) bool {
	switch c.Verdict {
	case stats.VerdictFaster, stats.VerdictSlower, stats.VerdictHigher, stats.VerdictLower:
		return true
	}
	return false
}

func verdictClass(v string) string {
	switch v {
	case stats.VerdictSlower:
		return "v-slower"
	case stats.VerdictFaster:
		return "v-faster"
	case stats.VerdictHigher:
		return "v-higher"
	case stats.VerdictLower:
		return "v-lower"
	case "baseline":
		return "v-baseline"
	case stats.VerdictInsufficient:
		return "v-insufficient"
	}
	return "v-same"
}

// metricLineChart plots one line per platform: the median at each
// instance count with ±1 stdev whiskers and the median's CI as a band.
func metricLineChart(m metricGroup, colours map[string]string) lineChart {
	c0 := m.cells[0]
	ch := lineChart{
		Title:  fmt.Sprintf("%s: %s", workloadLabel(c0), c0.Metric),
		XLabel: "instances",
		YLabel: fmt.Sprintf("%s (%s)", c0.Metric, c0.Unit),
	}
	idx := map[string]int{}
	for _, c := range m.cells {
		i, ok := idx[c.Label()]
		if !ok {
			i = len(ch.Series)
			idx[c.Label()] = i
			ch.Series = append(ch.Series, series{Name: c.Label(), Colour: colours[c.Label()]})
		}
		if c.N == 0 {
			continue
		}
		ch.Series[i].Points = append(ch.Series[i].Points, point{
			X: float64(c.Instances), Y: c.Median,
			SDLow: c.Median - c.Stdev, SDHigh: c.Median + c.Stdev, SDSet: c.N > 1,
			CILow: c.CILow, CIHigh: c.CIHigh, CIValid: c.CIValid,
		})
	}
	for i := range ch.Series {
		pts := ch.Series[i].Points
		sort.SliceStable(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
	}
	return ch
}

// overheadChart draws ratio − 1 (in %) of each non-baseline platform per
// instance count, with the ratio's CI as whiskers. ok is false when
// nothing was compared.
func overheadChart(m metricGroup, base string, colours map[string]string) (barChart, bool) {
	if base == "" {
		return barChart{}, false
	}
	c0 := m.cells[0]
	dir := "higher is better: below 0 is worse than " + base
	if c0.Better == stats.BetterLower {
		dir = "lower is better: above 0 is worse than " + base
	}
	bc := barChart{
		Title:  fmt.Sprintf("%s: %s, change vs %s", workloadLabel(c0), c0.Metric, base),
		XLabel: "instances",
		YLabel: "median ratio − 1 (%)",
		Note:   dir + " · whiskers: 95% CI · pale: CI includes 0",
	}
	seen := map[string]bool{}
	groups := map[int]int{}
	compared := false
	for _, c := range m.cells {
		if c.Label() == base || c.Baseline == "" || c.Ratio == 0 {
			continue
		}
		gi, ok := groups[c.Instances]
		if !ok {
			gi = len(bc.Groups)
			groups[c.Instances] = gi
			bc.Groups = append(bc.Groups, barGroup{Label: fmt.Sprintf("%d", c.Instances)})
		}
		if !seen[c.Label()] {
			seen[c.Label()] = true
			bc.Legend = append(bc.Legend, legendItem{c.Label(), colours[c.Label()]})
		}
		bc.Groups[gi].Bars = append(bc.Groups[gi].Bars, bar{
			Series: c.Label(), Colour: colours[c.Label()],
			Value: 100 * (c.Ratio - 1), Low: 100 * (c.RatioCILow - 1), High: 100 * (c.RatioCIHigh - 1),
			CIValid: c.RatioValid, Insignificant: !differs(c),
		})
		compared = true
	}
	return bc, compared // groups are in instance order: Cells sorts by instances
}
