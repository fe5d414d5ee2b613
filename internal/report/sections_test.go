package report

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/stats"
)

// sectionDoc is the golden run (instances 1, 2, 4; a label needing
// escaping) with three sections in different shapes.
func sectionDoc() Doc {
	d := goldenDoc(7)
	var cpu, rd []Cell
	for _, c := range d.Cells {
		switch {
		case c.Workload == "cpu" && c.Metric == "events_per_sec":
			cpu = append(cpu, c)
		case c.Workload == "blockio" && c.Metric == "read_mb_per_sec" && c.Instances == 1:
			rd = append(rd, c)
		}
	}
	d.Study = &StudyHeading{ID: "t", Title: "a <test> study", Scale: "quick", Agrees: 1}
	d.Sections = []Section{
		{ID: "fig3", Number: "Figure 3", Title: "CPU over instances", Shape: ShapeLinesInstances, Central: "median", Baseline: "native",
			Panels:   []Panel{{Metric: "events_per_sec", Unit: "events/s", Better: "higher", Cells: cpu}},
			Findings: []SectionFinding{{Text: "docker <beats> qemu", Lines: []FindingLine{{Outcome: OutcomeAgrees, Text: "×1: docker better than qemu? 95% CI [1.3, 1.4]"}}}},
			NotRun:   []string{"jails: not run here: a FreeBSD kernel"}},
		{ID: "fig4", Number: "Figure 4", Title: "read, bars", Shape: ShapeBars, Central: "mean", Baseline: "native", Reference: "native@1",
			Panels: []Panel{{Metric: "read_mb_per_sec", Unit: "MB/s", Better: "higher", Cells: rd}}},
		{ID: "table9", Number: "Table 9", Title: "not runnable", Shape: ShapeTable, Notes: []string{"not run: no such workload"},
			Findings: []SectionFinding{{Text: "words only"}}},
	}
	return d
}

func renderSections(t *testing.T, d Doc) string {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The sections come first, after the run's header, each with its chart,
// its findings beside it and its table; the generic part follows.
func TestSectionsComeFirstWithFindingsBeside(t *testing.T) {
	page := renderSections(t, sectionDoc())
	i3, i4, i9 := strings.Index(page, `id="paper-fig3"`), strings.Index(page, `id="paper-fig4"`), strings.Index(page, `id="paper-table9"`)
	iv := strings.Index(page, `<section id="verdict">`)
	iw := strings.Index(page, `<section class="workload"`)
	if !(0 < i3 && i3 < i4 && i4 < i9 && i9 < iv && iv < iw) {
		t.Fatalf("order: fig3 %d, fig4 %d, table9 %d, verdict %d, workloads %d", i3, i4, i9, iv, iw)
	}
	fig3 := page[i3:i4]
	for _, s := range []string{"<h2>Figure 3: CPU over instances</h2>", "<svg", `<aside class="findings">`, "docker &lt;beats&gt; qemu",
		`<li class="f-agrees"><b>AGREES</b> ×1: docker better than qemu? 95% CI [1.3, 1.4]</li>`, "jails: not run here: a FreeBSD kernel",
		"<th>median</th>", "<th>Op</th>", "<th>coef.</th>"} {
		if !strings.Contains(fig3, s) {
			t.Errorf("fig3 lacks %q", s)
		}
	}
	// The finding sits next to the chart: both inside one paper-body.
	body := fig3[strings.Index(fig3, `<div class="paper-body">`):]
	if strings.Index(body, "<svg") > strings.Index(body, "AGREES") || strings.Contains(body[:strings.Index(body, "AGREES")], "<table") {
		t.Errorf("the finding is not beside the chart")
	}
	if t9 := page[i9:iv]; !strings.Contains(t9, "not run: no such workload") || strings.Contains(t9, "<svg") || !strings.Contains(t9, "words only") {
		t.Errorf("table9: %s", t9)
	}
	// Every label is escaped, in the charts and in the tables.
	sections := page[i3:iv]
	if strings.Contains(sections, `note=<b>`) || !strings.Contains(sections, `note=&lt;b&gt;&amp;`) {
		t.Errorf("an unescaped label in the sections")
	}
	if !strings.Contains(page, "<h2>Study t: a &lt;test&gt; study</h2>") || !strings.Contains(page, `<a href="#paper-fig3">Figure 3</a>`) {
		t.Errorf("no study heading or navigation")
	}
}

// Lines over instance counts place 1, 2 and 4 evenly, not at 1:2:4.
func TestSectionLinesAreEvenlySpaced(t *testing.T) {
	d := sectionDoc()
	svg := sectionChart(d.Sections[0], d.Sections[0].Panels[0], platformColours(d.Cells))
	for _, name := range []string{"native", "docker", "qemu:cpus=1"} {
		g := regexp.MustCompile(`<g class="series" data-series="` + regexp.QuoteMeta(name) + `">(.*?)</g>`).FindStringSubmatch(svg)
		if g == nil {
			t.Fatalf("no series %s", name)
		}
		var xs []float64
		for _, m := range regexp.MustCompile(`<circle cx="([0-9.]+)"`).FindAllStringSubmatch(g[1], -1) {
			x, _ := strconv.ParseFloat(m[1], 64)
			xs = append(xs, x)
		}
		if len(xs) != 3 || math.Abs((xs[1]-xs[0])-(xs[2]-xs[1])) > 0.15 || xs[1]-xs[0] < 50 {
			t.Errorf("%s: x positions %v are not evenly spaced", name, xs)
		}
	}
	if !strings.Contains(svg, "instances (evenly spaced)") {
		t.Errorf("x axis label")
	}
}

// Bars show the mean with Student's t interval; the host run once is a
// reference line; Op and the coefficient are taken from the means.
func TestSectionBarsAndTable(t *testing.T) {
	d := sectionDoc()
	s := d.Sections[1]
	svg := sectionChart(s, s.Panels[0], platformColours(d.Cells))
	if strings.Count(svg, `<rect class="bar"`) != 3 || !strings.Contains(svg, `class="reference"`) || !strings.Contains(svg, "native@1 (reference)") {
		t.Errorf("bars: %d, reference line %v", strings.Count(svg, `<rect class="bar"`), strings.Contains(svg, `class="reference"`))
	}
	c := Cell{N: 5, Mean: 10, Stdev: 1, Median: 9}
	v, lo, hi, ok := central(c, "mean")
	if !ok || v != 10 || math.Abs(hi-10-2.776/math.Sqrt(5)) > 1e-9 || math.Abs(10-lo-(hi-10)) > 1e-12 {
		t.Errorf("mean interval %v [%v, %v] %v", v, lo, hi, ok)
	}
	if v, _, _, _ := central(c, "median"); v != 9 {
		t.Errorf("median %v", v)
	}
	tb := cellsTable(s, s.Panels[0])
	var native, qemu []string
	for _, r := range tb.Rows {
		switch r[0] {
		case "native":
			native = r
		case "qemu:cpus=1":
			qemu = r
		}
	}
	var nm, qm float64
	for _, c := range s.Panels[0].Cells {
		switch c.Label() {
		case "native":
			nm = c.Mean
		case "qemu:cpus=1":
			qm = c.Mean
		}
	}
	op, _ := stats.Op(qm, nm)
	if native[len(native)-2] != "baseline" || qemu[len(qemu)-2] != strconv.FormatFloat(100*op, 'f', 1, 64)+"%" || qemu[len(qemu)-1] != ratioNum(nm/qm) || nm/qm <= 1 {
		t.Errorf("rows %v / %v (means %v, %v)", native, qemu, nm, qm)
	}
}

// A page without sections is the page it always was (the golden file
// holds it); with sections it still passes the same escaping.
func TestNoSectionsNoChange(t *testing.T) {
	d := goldenDoc(7)
	a := renderSections(t, d)
	d.Sections, d.Study = []Section{}, nil
	if b := renderSections(t, d); a != b {
		t.Errorf("an empty section list changes the page")
	}
	if strings.Contains(a, "paper-body") || strings.Contains(a, `id="study"`) {
		t.Errorf("a page without sections has section markup")
	}
}
