package report

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/stats"
)

// This file renders a paper's tables and figures as sections of the HTML
// page: each in the paper's shape (bars per platform, lines over instance
// counts or over a swept parameter, a table), with the paper's findings and
// this run's verdicts beside it. The report knows nothing about studies:
// the study package fills the sections in; the report draws them.

// Shapes of a section.
const (
	// ShapeBars: the central value per platform as bars, the 95% interval
	// as whiskers; one group per parameter set or instance count.
	ShapeBars = "bars"
	// ShapeLinesInstances: one line per platform over the instance counts,
	// placed evenly (1, 2, 4, 8, 16, 32 equally apart), ±1 stdev whiskers.
	ShapeLinesInstances = "lines-instances"
	// ShapeLinesParam: one line per platform over the values of a swept
	// parameter (Section.Param), placed evenly, ±1 stdev whiskers.
	ShapeLinesParam = "lines-param"
	// ShapeTable: the cells as a table only, no chart.
	ShapeTable = "table"
)

// Section is one table or figure of a paper drawn from a run's cells.
type Section struct {
	// ID is the paper's own id ("fig3", "table2"); the page's anchor.
	ID string `json:"id"`
	// Number is how the paper numbers it ("Figure 3", "Table 2").
	Number string `json:"number"`
	Title  string `json:"title"`
	Shape  string `json:"shape"`
	// Param is the x axis of ShapeLinesParam ("users", "threads").
	Param string `json:"param,omitempty"`
	// Central is what the charts and tables show: "mean" or "median".
	Central string `json:"central"`
	// Baseline is the label Op and the coefficient are taken against;
	// "native@1" pins it to one instance count.
	Baseline string `json:"baseline,omitempty"`
	// Reference, when set (a label, "native@1" pinned), is drawn as a
	// horizontal reference line instead of a series: the host run once.
	Reference string `json:"reference,omitempty"`
	// Panels are the metrics drawn, one chart each.
	Panels []Panel `json:"panels,omitempty"`
	// NotRun lists platforms of the paper this run lacks, with why.
	NotRun []string `json:"not_run,omitempty"`
	// Notes are shown under the title (why nothing is drawn, how a value
	// is defined).
	Notes    []string         `json:"notes,omitempty"`
	Findings []SectionFinding `json:"findings,omitempty"`
	// Table is a table of the paper's own columns (study 004's Table 2),
	// shown besides the cells.
	Table *SectionTable `json:"table,omitempty"`
	// Fidelity is the experiment's ledger against the paper in one line,
	// and FidelityDetails what differs and why, one line each.
	Fidelity        string   `json:"fidelity,omitempty"`
	FidelityDetails []string `json:"fidelity_details,omitempty"`
	// Marks are said beside a platform label wherever the figure names
	// it ("emulated (TCG)").
	Marks map[string]string `json:"marks,omitempty"`
	// PaperTables put the paper's numbers beside this run's, below the
	// cells' tables.
	PaperTables []SectionTable `json:"paper_tables,omitempty"`
}

// Panel is one metric of a section with its cells (every platform,
// instance count and parameter set drawn).
type Panel struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Better string `json:"better"`
	Cells  []Cell `json:"cells"`
	// Paper are the paper's numbers drawn as a second series: the
	// paper's ratio to its own baseline times this run's baseline, at the
	// cell each describes.
	Paper []PaperPoint `json:"paper,omitempty"`
}

// PaperPoint is one of the paper's numbers placed on a panel.
type PaperPoint struct {
	Label     string  `json:"label"`
	Instances int     `json:"instances"`
	Params    string  `json:"params"`
	Value     float64 `json:"value"` // in the panel's unit
	Ratio     float64 `json:"ratio"` // the paper's, to its own baseline
}

// SectionFinding is one thing the paper found and what this run says.
type SectionFinding struct {
	Text  string        `json:"text"`
	Lines []FindingLine `json:"lines,omitempty"`
}

// Outcomes of a finding line (the study package's words).
const (
	OutcomeAgrees    = "agrees"
	OutcomeDisagrees = "disagrees"
	OutcomeUndecided = "undecided"
	// OutcomeNotComparable: a side ran emulated (not the paper's
	// hypervisor), so the comparison says nothing of the paper's claim.
	OutcomeNotComparable = "not comparable"
)

// FindingLine is one comparison (Outcome set) or a remark (Outcome "").
type FindingLine struct {
	Outcome string `json:"outcome,omitempty"`
	Text    string `json:"text"`
}

// SectionTable is a table given as text.
type SectionTable struct {
	Caption string     `json:"caption,omitempty"`
	Header  []string   `json:"header"`
	Rows    [][]string `json:"rows"`
}

// StudyHeading introduces a study's sections on the page.
type StudyHeading struct {
	ID, Title, Citation, Scale string
	Notes                      []string
	// Agrees, Disagrees, Undecided count the comparisons of every section;
	// NotComparable those with an emulated side.
	Agrees, Disagrees, Undecided, NotComparable int
}

// sectionView is a Section as the page template shows it.
type sectionView struct {
	ID, Number, Title string
	Fidelity          string
	FidelityDetails   []string
	Charts            []template.HTML
	Notes, NotRun     []string
	Findings          []findingView
	// Left are tables in place of a chart (a table-shaped section),
	// beside the findings; Tables come below.
	Left, Tables []SectionTable
}

type findingView struct {
	Text  string
	Lines []findingLineView
}

type findingLineView struct {
	Class, Outcome, Text string
}

// sectionCSS styles the sections; it is on the page only when there are
// sections.
const sectionCSS = `
section.paper .paper-body{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
section.paper .charts{flex:1 1 600px;min-width:0}
aside.findings{flex:1 1 340px;max-width:520px;background:#fff;border:1px solid #ccc;border-radius:4px;padding:6px 12px}
aside.findings h3{margin:6px 0 4px;font-size:14px}
aside.findings .ftext{margin:6px 0 2px;font-style:italic}
aside.findings ul{list-style:none;padding-left:0;margin:2px 0 8px}
aside.findings li{margin:2px 0;padding:2px 6px;border-radius:3px;overflow-wrap:anywhere}
li.f-agrees{background:#e3f4e1}li.f-disagrees{background:#fbe3e1}li.f-undecided{background:#f3f3f3}li.f-notcomparable{background:#fdf1d8}li.f-note{color:#555}
table.paper-table caption{text-align:left;font-weight:bold;padding:2px 0}
table.paper-table td:first-child,table.paper-table th:first-child{text-align:left}
.notrun{color:#8a5a00}
section.paper .fidelity{margin:2px 0 6px;font-size:13px}
section.paper .fidelity ul{margin:2px 0;padding-left:20px;color:#555}
`

func outcomeClass(o string) string {
	switch o {
	case OutcomeAgrees:
		return "f-agrees"
	case OutcomeDisagrees:
		return "f-disagrees"
	case OutcomeUndecided:
		return "f-undecided"
	case OutcomeNotComparable:
		return "f-notcomparable"
	}
	return "f-note"
}

// central is a cell's central value with its 95% interval: the median
// with its bootstrap interval, or the mean with Student's t interval.
func central(c Cell, kind string) (v, lo, hi float64, ok bool) {
	if kind == "mean" {
		if c.N < 2 {
			return c.Mean, 0, 0, false
		}
		h := tQuantile975(c.N-1) * c.Stdev / math.Sqrt(float64(c.N))
		return c.Mean, c.Mean - h, c.Mean + h, true
	}
	return c.Median, c.CILow, c.CIHigh, c.CIValid
}

// tQuantile975 is Student's t 0.975 quantile for df degrees of freedom.
func tQuantile975(df int) float64 {
	t := [...]float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df < 1:
		return math.Inf(1)
	case df < len(t):
		return t[df]
	case df < 60:
		return 2.000
	case df < 120:
		return 1.980
	}
	return 1.960
}

// paramsWithout drops one key from canonical "k=v,k=v" params.
func paramsWithout(params, name string) string {
	var out []string
	for _, kv := range strings.Split(params, ",") {
		if k, _, _ := strings.Cut(kv, "="); kv != "" && k != name {
			out = append(out, kv)
		}
	}
	return strings.Join(out, ",")
}

// differingParams returns, for each params string, only the key=value
// pairs that tell it apart from the others: keys whose value differs, or
// that some lack ("k=-").
func differingParams(all []string) map[string]string {
	var uniq []string
	for _, p := range all {
		if !slices.Contains(uniq, p) {
			uniq = append(uniq, p)
		}
	}
	split := func(p string) map[string]string {
		m := map[string]string{}
		for _, kv := range strings.Split(p, ",") {
			if k, v, _ := strings.Cut(kv, "="); kv != "" {
				m[k] = v
			}
		}
		return m
	}
	vals := map[string]map[string]bool{}
	present := map[string]int{}
	for _, p := range uniq {
		for k, v := range split(p) {
			if vals[k] == nil {
				vals[k] = map[string]bool{}
			}
			vals[k][v] = true
			present[k]++
		}
	}
	out := map[string]string{}
	for _, p := range uniq {
		m := split(p)
		var keep []string
		for k := range vals {
			if len(vals[k]) < 2 && present[k] == len(uniq) {
				continue
			}
			v, ok := m[k]
			if !ok {
				v = "-"
			}
			keep = append(keep, k+"="+v)
		}
		sort.Strings(keep)
		out[p] = strings.Join(keep, ",")
	}
	return out
}

// numOrder sorts x labels numerically when they are numbers (with a
// size suffix: 4k), else as text.
func numOrder(a, b string) int {
	fa, ea := parseNum(a)
	fb, eb := parseNum(b)
	if ea == nil && eb == nil {
		return cmp.Compare(fa, fb)
	}
	return strings.Compare(a, b)
}

func parseNum(s string) (float64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		s, mult = strings.TrimSuffix(s, "k"), 1e3
	case strings.HasSuffix(s, "m"):
		s, mult = strings.TrimSuffix(s, "m"), 1e6
	}
	f, err := strconv.ParseFloat(s, 64)
	return f * mult, err
}

// findBase returns the cell a cell's Op and coefficient are taken
// against: the baseline label at the pinned count or the cell's own.
func findBase(cells []Cell, c Cell, baseline string) (Cell, bool) {
	if baseline == "" {
		return Cell{}, false
	}
	l, at := SplitBaseline(baseline)
	n := cmp.Or(at, c.Instances)
	for _, b := range cells {
		if b.Label() == l && b.Instances == n && b.Workload == c.Workload && b.Params == c.Params && b.Metric == c.Metric {
			return b, true
		}
	}
	return Cell{}, false
}

// cellsTable is a section's cells as a table: the central value with its
// interval and stdev, Op = |P − P_base| / P_base and the performance
// coefficient, the papers' platform cost / baseline cost (Coefficient).
func cellsTable(s Section, p Panel) SectionTable {
	all := make([]string, 0, len(p.Cells))
	for _, c := range p.Cells {
		all = append(all, c.Params)
	}
	diff := differingParams(all)
	anyDiff := false
	for _, d := range diff {
		anyDiff = anyDiff || d != ""
	}
	t := SectionTable{Caption: fmt.Sprintf("%s (%s, %s is better)", p.Metric, p.Unit, p.Better)}
	if s.Baseline != "" {
		t.Caption += fmt.Sprintf(" · Op = |P − P_%s| / P_%s · %s", s.Baseline, s.Baseline, CoefficientNote(s.Baseline, p.Better))
	}
	t.Header = []string{"platform"}
	if anyDiff {
		t.Header = append(t.Header, "parameters")
	}
	t.Header = append(t.Header, "instances", "n", s.Central, "95% CI", "stdev", "Op", "coef.")
	for _, c := range p.Cells {
		row := []string{c.Label()}
		if anyDiff {
			row = append(row, cmp.Or(diff[c.Params], "-"))
		}
		v, lo, hi, ok := central(c, s.Central)
		ci := "-"
		if ok {
			ci = "[" + num(lo) + ", " + num(hi) + "]"
		}
		op, coef := "-", "-"
		l, at := SplitBaseline(s.Baseline)
		if b, found := findBase(p.Cells, c, s.Baseline); found && c.Label() == l && c.Instances == cmp.Or(at, c.Instances) {
			op, coef = "baseline", "1"
		} else if found {
			bv, _, _, _ := central(b, s.Central)
			if o, err := stats.Op(v, bv); err == nil && bv > 0 && v > 0 {
				op = fmt.Sprintf("%.1f%%", 100*o)
				coef = ratioNum(Coefficient(v, bv, p.Better))
			}
		}
		row = append(row, strconv.Itoa(c.Instances), strconv.Itoa(c.N), num(v), ci, num(c.Stdev), op, coef)
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Coefficient is the studies' performance coefficient of a platform's
// value v against the baseline's b, as the papers define it: the
// platform's cost over the baseline's, so 1 is the baseline and above 1
// is worse (slower, or less throughput) whatever the metric: v/b for a
// lower-is-better metric (time), b/v for a higher-is-better one
// (throughput, whose cost is its reciprocal). It is oriented as the JSON's
// coefficient (stats.Ratio.Coefficient), which takes it from medians.
func Coefficient(v, b float64, better string) float64 {
	if better == stats.BetterHigher {
		return b / v
	}
	return v / b
}

// CoefficientNote says what the coefficient is, in every table that
// shows one: "coef. = platform/native, > 1 worse"; for a
// higher-is-better metric, whose cost is its reciprocal,
// "coef. = native/platform (platform's cost over native's), > 1 worse".
func CoefficientNote(baseline, better string) string {
	if better == stats.BetterHigher {
		return fmt.Sprintf("coef. = %s/platform (platform's cost over %s's), > 1 worse", baseline, baseline)
	}
	return fmt.Sprintf("coef. = platform/%s, > 1 worse", baseline)
}

// xKey is where a cell sits on a section's x axis.
func xKey(s Section, c Cell) string {
	if s.Shape == ShapeLinesParam {
		return paramValue(c.Params, s.Param)
	}
	return strconv.Itoa(c.Instances)
}

// seriesNames names each cell's series: its label, with what else tells
// it apart from the others drawn at the same x (parameters, ×N).
func seriesNames(s Section, cells []Cell) []string {
	var rest []string
	for _, c := range cells {
		r := c.Params
		if s.Shape == ShapeLinesParam {
			r = paramsWithout(c.Params, s.Param)
		}
		rest = append(rest, r)
	}
	diff := differingParams(rest)
	insts := map[int]bool{}
	for _, c := range cells {
		insts[c.Instances] = true
	}
	out := make([]string, len(cells))
	for i, c := range cells {
		name := c.Label()
		if d := diff[rest[i]]; d != "" {
			name += " " + d
		}
		if s.Shape != ShapeLinesInstances && len(insts) > 1 {
			name += fmt.Sprintf(" ×%d", c.Instances)
		}
		out[i] = name
	}
	return out
}

// sectionChart draws one panel in the section's shape.
func sectionChart(s Section, p Panel, colours map[string]string) string {
	refLabel, refAt := SplitBaseline(s.Reference)
	var cells []Cell
	var ref *Cell
	for _, c := range p.Cells {
		if c.N == 0 {
			continue
		}
		if s.Reference != "" && c.Label() == refLabel && (refAt == 0 || c.Instances == refAt) {
			if ref == nil {
				ref = &c
			}
			continue
		}
		if s.Reference != "" && c.Label() == refLabel {
			continue // the host at other counts: in the table, not the figure
		}
		cells = append(cells, c)
	}
	title := fmt.Sprintf("%s: %s", s.Number, p.Metric)
	ylabel := fmt.Sprintf("%s of %s (%s)", s.Central, p.Metric, p.Unit)
	if s.Shape == ShapeBars {
		return sectionBars(s, p, cells, ref, colours, title, ylabel)
	}
	return sectionLines(s, p, cells, ref, colours, title, ylabel)
}

type catPoint struct {
	x         int // category index
	y, lo, hi float64
	whisker   bool
}

// catSeries is one series of a line section: the run's (one per drawn
// series name) or the paper's numbers for it.
type catSeries struct {
	name, colour string
	pts          []catPoint
}

// sectionLines draws lines over evenly spaced categories (instance counts
// or parameter values): the central value with ±1 stdev whiskers.
func sectionLines(s Section, p Panel, cells []Cell, ref *Cell, colours map[string]string, title, ylabel string) string {
	var cats []string
	for _, c := range cells {
		if x := xKey(s, c); !slices.Contains(cats, x) {
			cats = append(cats, x)
		}
	}
	slices.SortFunc(cats, numOrder)
	names := seriesNames(s, cells)
	lines, idx, ylo, yhi := runSeries(s, cells, names, cats, colours)
	plines, plo, phi := paperSeries(s, p, cells, names, cats, lines, idx)
	ylo, yhi = math.Min(ylo, plo), math.Max(yhi, phi)
	var refV float64
	if ref != nil {
		refV, _, _, _ = central(*ref, s.Central)
		ylo, yhi = math.Min(ylo, refV), math.Max(yhi, refV)
	}
	if math.IsInf(ylo, 0) {
		ylo, yhi = 0, 1
	}
	if ylo > 0 {
		ylo = 0 // absolute values: the axis starts at zero
	}
	ymin, ymax, ystep := niceScale(ylo, yhi, maxYTicks)
	plotW := float64(chartW - plotLeft - plotRight)
	items := linesLegend(s, cells, names, lines, plines, ref)
	pos, lh := legendLayout(items, plotLeft, plotW)
	height := float64(plotTop+plotH+50) + lh + 20
	xlabel := "instances (evenly spaced)"
	if s.Shape == ShapeLinesParam {
		xlabel = s.Param
	}
	var w svgWriter
	y := w.frame("line section", title, xlabel, ylabel, ymin, ymax, ystep, height)
	const inset = 30
	x := func(i int) float64 {
		if len(cats) == 1 {
			return plotLeft + plotW/2
		}
		return plotLeft + inset + float64(i)*(plotW-2*inset)/float64(len(cats)-1)
	}
	for i, c := range cats {
		w.printf(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#333"/>`, f1(x(i)), plotTop+plotH, f1(x(i)), plotTop+plotH+5)
		w.text(x(i), plotTop+plotH+18, "middle", "tick", c)
	}
	if ref != nil {
		w.printf(`<line class="reference" x1="%d" y1="%s" x2="%s" y2="%s" stroke="#333" stroke-width="1.5" stroke-dasharray="6 4"><title>%s</title></line>`,
			plotLeft, f1(y(refV)), f1(plotLeft+plotW), f1(y(refV)), esc(fmt.Sprintf("%s: %s %s", s.Reference, num(refV), p.Unit)))
	}
	w.runLines(lines, cats, p.Unit, x, y)
	w.paperLines(plines, cats, p.Unit, x, y)
	note := fmt.Sprintf("%s per point · whiskers: ±1 stdev", s.Central)
	if len(plines) > 0 {
		note += " · ◆ the paper (its ratio × this baseline)"
	}
	w.legend(items, pos, float64(plotTop+plotH+50), note)
	w.printf(`</svg>`)
	return w.b.String()
}

// runSeries is the run's series of a line section, one per series name in
// the order first seen, with idx from name to series and the lowest and
// highest values drawn (whiskers included; ±Inf when there are none).
func runSeries(s Section, cells []Cell, names, cats []string, colours map[string]string) (lines []catSeries, idx map[string]int, ylo, yhi float64) {
	idx = map[string]int{}
	ylo, yhi = math.Inf(1), math.Inf(-1)
	for i, c := range cells {
		j, ok := idx[names[i]]
		if !ok {
			j = len(lines)
			idx[names[i]] = j
			col := colours[names[i]]
			if col == "" {
				col = colour(len(colours) + j)
			}
			lines = append(lines, catSeries{name: names[i], colour: col})
		}
		v, _, _, _ := central(c, s.Central)
		pt := catPoint{x: slices.Index(cats, xKey(s, c)), y: v, lo: v - c.Stdev, hi: v + c.Stdev, whisker: c.N > 1 && c.Stdev > 0}
		if v >= 0 && pt.lo < 0 {
			pt.lo = 0 // a spread below zero of a value that cannot be: cut at the axis
		}
		lines[j].pts = append(lines[j].pts, pt)
		ylo, yhi = math.Min(ylo, v), math.Max(yhi, v)
		if pt.whisker {
			ylo, yhi = math.Min(ylo, pt.lo), math.Max(yhi, pt.hi)
		}
	}
	return lines, idx, ylo, yhi
}

// paperSeries is the paper's numbers: one dashed series per drawn series
// they describe, at the same x, in its colour; with the lowest and highest
// of them (±Inf when there are none).
func paperSeries(s Section, p Panel, cells []Cell, names, cats []string, lines []catSeries, idx map[string]int) (plines []catSeries, ylo, yhi float64) {
	ylo, yhi = math.Inf(1), math.Inf(-1)
	pidx := map[string]int{}
	for _, pp := range p.Paper {
		i := slices.IndexFunc(cells, func(c Cell) bool {
			return c.Label() == pp.Label && c.Instances == pp.Instances && c.Params == pp.Params
		})
		if i < 0 {
			continue
		}
		j, ok := pidx[names[i]]
		if !ok {
			j = len(plines)
			pidx[names[i]] = j
			plines = append(plines, catSeries{name: names[i], colour: lines[idx[names[i]]].colour})
		}
		plines[j].pts = append(plines[j].pts, catPoint{x: slices.Index(cats, xKey(s, cells[i])), y: pp.Value})
		ylo, yhi = math.Min(ylo, pp.Value), math.Max(yhi, pp.Value)
	}
	return plines, ylo, yhi
}

// linesLegend is a line section's legend: the run's series (with the
// section's mark for their platform), the reference, the paper's series.
func linesLegend(s Section, cells []Cell, names []string, lines, plines []catSeries, ref *Cell) []legendItem {
	var items []legendItem
	for _, l := range lines {
		name := l.name
		for j, c := range cells {
			if names[j] == l.name && s.Marks[c.Label()] != "" {
				name += " — " + s.Marks[c.Label()]
				break
			}
		}
		items = append(items, legendItem{name, l.colour})
	}
	if ref != nil {
		items = append(items, legendItem{s.Reference + " (reference)", "#333"})
	}
	for _, pl := range plines {
		items = append(items, legendItem{"the paper: " + pl.name, pl.colour})
	}
	return items
}

// runLines draws the run's series, each nudged sideways so that whiskers
// at one category do not hide each other: a polyline and a marker with
// whiskers per point.
func (w *svgWriter) runLines(lines []catSeries, cats []string, unit string, x func(int) float64, y func(float64) float64) {
	n := len(lines)
	for i, l := range lines {
		dx := (float64(i) - float64(n-1)/2) * 5
		px := func(c int) float64 { return x(c) + dx }
		pts := slices.Clone(l.pts)
		slices.SortFunc(pts, func(a, b catPoint) int { return cmp.Compare(a.x, b.x) })
		w.printf(`<g class="series" data-series="%s">`, esc(l.name))
		if len(pts) > 1 {
			var ps []string
			for _, pt := range pts {
				ps = append(ps, f1(px(pt.x))+","+f1(y(pt.y)))
			}
			w.printf(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.Join(ps, " "), l.colour)
		}
		for _, pt := range pts {
			xx := px(pt.x)
			if pt.whisker {
				w.printf(`<path d="M%s %sV%sM%s %sH%sM%s %sH%s" stroke="%s" stroke-width="1.3" fill="none"/>`,
					f1(xx), f1(y(pt.lo)), f1(y(pt.hi)), f1(xx-capHalf), f1(y(pt.lo)), f1(xx+capHalf), f1(xx-capHalf), f1(y(pt.hi)), f1(xx+capHalf), l.colour)
			}
			w.printf(`<circle cx="%s" cy="%s" r="%g" fill="%s" stroke="#fff" stroke-width="1"><title>%s</title></circle>`, f1(xx), f1(y(pt.y)), markerR, l.colour,
				esc(fmt.Sprintf("%s at %s: %s %s", l.name, cats[pt.x], num(pt.y), unit)))
		}
		w.printf(`</g>`)
	}
}

// paperLines draws the paper's series: dashed polylines with diamonds.
func (w *svgWriter) paperLines(plines []catSeries, cats []string, unit string, x func(int) float64, y func(float64) float64) {
	for _, pl := range plines {
		pts := slices.Clone(pl.pts)
		slices.SortFunc(pts, func(a, b catPoint) int { return cmp.Compare(a.x, b.x) })
		w.printf(`<g class="paper-series" data-series="%s">`, esc("the paper: "+pl.name))
		if len(pts) > 1 {
			var ps []string
			for _, pt := range pts {
				ps = append(ps, f1(x(pt.x))+","+f1(y(pt.y)))
			}
			w.printf(`<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="5 3"/>`, strings.Join(ps, " "), pl.colour)
		}
		for _, pt := range pts {
			w.diamond(x(pt.x), y(pt.y), pl.colour, fmt.Sprintf("the paper: %s at %s: %s %s (its ratio to its baseline × this run's)", pl.name, cats[pt.x], num(pt.y), unit))
		}
		w.printf(`</g>`)
	}
}

// sectionBars draws the central value per platform as bars with the 95%
// interval as whiskers, grouped by parameter set and instance count.
func sectionBars(s Section, p Panel, cells []Cell, ref *Cell, colours map[string]string, title, ylabel string) string {
	var all []string
	for _, c := range cells {
		all = append(all, c.Params)
	}
	diff := differingParams(all)
	insts := map[int]bool{}
	for _, c := range cells {
		insts[c.Instances] = true
	}
	var groups []barGroup
	gidx := map[string]int{}
	var legend []legendItem
	seen := map[string]bool{}
	ylo, yhi := 0.0, 0.0
	for _, c := range cells {
		g := diff[c.Params]
		if len(insts) > 1 {
			g = strings.TrimSpace(fmt.Sprintf("%s ×%d", g, c.Instances))
		}
		gi, ok := gidx[g]
		if !ok {
			gi = len(groups)
			gidx[g] = gi
			groups = append(groups, barGroup{Label: g})
		}
		col := colours[c.Label()]
		if !seen[c.Label()] {
			seen[c.Label()] = true
			legend = append(legend, legendItem{marked(s, c.Label()), col})
		}
		v, lo, hi, ok := central(c, s.Central)
		groups[gi].Bars = append(groups[gi].Bars, bar{Series: c.Label(), Colour: col, Value: v, Low: lo, High: hi, CIValid: ok})
		yhi = math.Max(yhi, v)
		if ok {
			ylo, yhi = math.Min(ylo, lo), math.Max(yhi, hi)
		}
	}
	// The paper's numbers: a diamond on the bar each describes.
	type paperMark struct {
		group, bar int
		value      float64
		colour     string
	}
	var marks []paperMark
	for _, pp := range p.Paper {
		g := diff[pp.Params]
		if len(insts) > 1 {
			g = strings.TrimSpace(fmt.Sprintf("%s ×%d", g, pp.Instances))
		}
		gi, ok := gidx[g]
		if !ok {
			continue
		}
		bi := slices.IndexFunc(groups[gi].Bars, func(b bar) bool { return b.Series == pp.Label })
		if bi < 0 {
			continue
		}
		marks = append(marks, paperMark{gi, bi, pp.Value, "#222"}) // dark: visible on its bar
		yhi = math.Max(yhi, pp.Value)
	}
	var refV float64
	if ref != nil {
		refV, _, _, _ = central(*ref, s.Central)
		yhi = math.Max(yhi, refV)
		legend = append(legend, legendItem{s.Reference + " (reference)", "#333"})
	}
	ymin, ymax, ystep := niceScale(ylo, yhi, maxYTicks)
	plotW := float64(chartW - plotLeft - plotRight)
	pos, lh := legendLayout(legend, plotLeft, plotW)
	height := float64(plotTop+plotH+50) + lh + 20
	xlabel := ""
	if len(groups) > 1 {
		xlabel = "parameters"
		if len(insts) == len(groups) {
			xlabel = "instances"
		}
	}
	var w svgWriter
	y := w.frame("bars section", title, xlabel, ylabel, ymin, ymax, ystep, height)
	gw := plotW / float64(max(1, len(groups)))
	for gi, g := range groups {
		gx := plotLeft + float64(gi)*gw
		w.text(gx+gw/2, plotTop+plotH+18, "middle", "tick", fitText(g.Label, int(gw/charWidth)))
		bw := math.Min(48, gw*0.8/float64(len(g.Bars)))
		x0 := gx + (gw-bw*float64(len(g.Bars)))/2
		for bi, b := range g.Bars {
			bx := x0 + float64(bi)*bw
			top := y(math.Max(0, b.Value))
			w.printf(`<rect class="bar" data-series="%s" x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.9"><title>%s</title></rect>`,
				esc(b.Series), f1(bx+1), f1(top), f1(bw-2), f1(math.Max(0.5, y(0)-top)), b.Colour,
				esc(fmt.Sprintf("%s: %s %s", b.Series, num(b.Value), p.Unit)))
			if b.CIValid {
				cx := bx + bw/2
				w.printf(`<path d="M%s %sV%sM%s %sH%sM%s %sH%s" stroke="#222" stroke-width="1.2" fill="none"/>`,
					f1(cx), f1(y(b.Low)), f1(y(b.High)), f1(cx-capHalf), f1(y(b.Low)), f1(cx+capHalf), f1(cx-capHalf), f1(y(b.High)), f1(cx+capHalf))
			}
		}
	}
	if ref != nil {
		w.printf(`<line class="reference" x1="%d" y1="%s" x2="%s" y2="%s" stroke="#333" stroke-width="1.5" stroke-dasharray="6 4"><title>%s</title></line>`,
			plotLeft, f1(y(refV)), f1(plotLeft+plotW), f1(y(refV)), esc(fmt.Sprintf("%s: %s %s", s.Reference, num(refV), p.Unit)))
	}
	for _, m := range marks {
		g := groups[m.group]
		gx := plotLeft + float64(m.group)*gw
		bw := math.Min(48, gw*0.8/float64(len(g.Bars)))
		x0 := gx + (gw-bw*float64(len(g.Bars)))/2
		w.diamond(x0+float64(m.bar)*bw+bw/2, y(m.value), m.colour, fmt.Sprintf("the paper: %s: %s %s (its ratio to its baseline × this run's)", g.Bars[m.bar].Series, num(m.value), p.Unit))
	}
	note := fmt.Sprintf("bars: %s · whiskers: its 95%% interval", s.Central)
	if len(marks) > 0 {
		note += " · ◆ the paper (its ratio × this baseline)"
	}
	w.legend(legend, pos, float64(plotTop+plotH+50), note)
	w.printf(`</svg>`)
	return w.b.String()
}

// marked is a label with its section mark, if any ("qemu — emulated
// (TCG)").
func marked(s Section, label string) string {
	if m := s.Marks[label]; m != "" {
		return label + " — " + m
	}
	return label
}

// sectionColours extends the page's platform colours to the labels only
// the sections have, so a platform has one colour on the whole page.
func sectionColours(colours map[string]string, secs []Section) map[string]string {
	out := make(map[string]string, len(colours))
	for k, v := range colours {
		out[k] = v
	}
	for _, s := range secs {
		for _, p := range s.Panels {
			for _, c := range p.Cells {
				if _, ok := out[c.Label()]; !ok {
					out[c.Label()] = colour(len(out))
				}
			}
		}
	}
	return out
}

// sectionViews prepares the sections for the page.
func sectionViews(secs []Section, colours map[string]string) []sectionView {
	var out []sectionView
	for _, s := range secs {
		v := sectionView{ID: "paper-" + strings.TrimPrefix(anchor(s.ID), "w-"), Number: s.Number, Title: s.Title,
			Notes: s.Notes, NotRun: s.NotRun, Fidelity: s.Fidelity, FidelityDetails: s.FidelityDetails}
		for _, f := range s.Findings {
			fv := findingView{Text: f.Text}
			for _, l := range f.Lines {
				fv.Lines = append(fv.Lines, findingLineView{Class: outcomeClass(l.Outcome), Outcome: strings.ToUpper(l.Outcome), Text: l.Text})
			}
			v.Findings = append(v.Findings, fv)
		}
		for _, p := range s.Panels {
			if len(p.Cells) == 0 {
				continue
			}
			if s.Shape != ShapeTable {
				// Safe as HTML: every text in the chart is escaped (esc).
				v.Charts = append(v.Charts, template.HTML(sectionChart(s, p, colours)))
			}
			v.Tables = append(v.Tables, cellsTable(s, p))
		}
		if s.Table != nil {
			v.Tables = append([]SectionTable{*s.Table}, v.Tables...)
		}
		v.Tables = append(v.Tables, s.PaperTables...)
		if s.Shape == ShapeTable && len(v.Tables) > 0 {
			v.Left, v.Tables = v.Tables[:1], v.Tables[1:]
		}
		out = append(out, v)
	}
	return out
}

// diamond draws one of the paper's numbers: a hollow diamond at (x, y)
// with its text as the tooltip.
func (w *svgWriter) diamond(x, y float64, colour, title string) {
	const r = 5.0
	w.printf(`<path class="paper-point" d="M%s %sL%s %sL%s %sL%s %sZ" fill="#fff" stroke="%s" stroke-width="2"><title>%s</title></path>`,
		f1(x), f1(y-r), f1(x+r), f1(y), f1(x), f1(y+r), f1(x-r), f1(y), colour, esc(title))
}
