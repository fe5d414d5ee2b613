package study

import (
	"bytes"
	"flag"
	"github.com/isobench/isobench/internal/testkit/golden"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/builtin"
	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/stats"
)

// go test ./internal/study -update rewrites testdata/golden/* from the
// current output; review the diff before committing it.
var update = flag.Bool("update", false, "rewrite testdata/golden/* from the current output")

// synthBetter is a metric's direction for the synthetic runs.
func synthBetter(metric string) sample.Better {
	for _, s := range []string{"time", "latency", "_ms", "memory_bytes", "duration"} {
		if strings.Contains(metric, s) {
			return sample.Lower
		}
	}
	return sample.Higher
}

// synthStudyCells makes a synthetic run of a study at quick scale: every
// job of its plan the experiments draw, on every platform and instance
// count, 6 repetitions with 2% noise and fixed seeds. Each platform has
// its own true effect; startup_ms differs between the instances of one
// repetition (the last one slowest) and carries the runner's aggregate
// (the slowest), as a real run does.
func synthStudyCells(t *testing.T, id string) (File, []report.Cell) {
	t.Helper()
	f0, err := Load(id)
	if err != nil {
		t.Fatal(err)
	}
	f, err := f0.AtScale(ScaleQuick)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(f, builtin.Workloads(), builtin.Platforms())
	if err != nil {
		t.Fatal(err)
	}
	metrics := make([][]string, len(p.Jobs))
	want := func(sel string, ms ...string) {
		sp, err := spec.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range p.Jobs {
			if Selects(sp, j.Workload, j.Params.Raw()) {
				for _, m := range ms {
					if m != "" && !slices.Contains(metrics[i], m) {
						metrics[i] = append(metrics[i], m)
					}
				}
			}
		}
	}
	for _, e := range f.Study.Experiments {
		if e.Workload != "" {
			want(e.Workload, experimentMetrics(e)...)
		}
		if e.Score != nil {
			for _, r := range e.Score.Rows {
				want(r.Workload, r.Metrics...)
			}
		}
	}
	r := rand.New(rand.NewSource(42))
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var ss []sample.Sample
	for i, j := range p.Jobs {
		for mi, m := range metrics[i] {
			better := synthBetter(m)
			for _, n := range f.Instances {
				for rep := 0; rep < 6; rep++ {
					for pi, pl := range f.Platforms {
						name, opts, _ := strings.Cut(pl, ":")
						factor := 1 - 0.06*float64(pi) // native best, then in file order
						v0 := 100 * float64(mi+1) * (1 + 0.1*float64(i%3))
						if n > 2 {
							v0 *= 2 / float64(n)
						}
						worst := 0.0
						for inst := 0; inst < n; inst++ {
							v := v0 * factor
							if better == sample.Lower {
								v = v0 / factor
							}
							if m == "startup_ms" {
								v *= 1 + 0.1*float64(inst)
							}
							v *= 1 + 0.02*r.NormFloat64()
							worst = max(worst, v)
							ss = append(ss, sample.Sample{RunID: 1, Platform: name, Options: opts, Workload: j.Workload, Params: j.Params.String(),
								Instances: n, Instance: inst, Rep: rep, Metric: m, Unit: "u", Better: better, Value: v, Start: start, Duration: time.Second})
						}
						if m == "startup_ms" && n > 1 {
							ss = append(ss, sample.Sample{RunID: 1, Platform: name, Options: opts, Workload: j.Workload, Params: j.Params.String(),
								Instances: n, Instance: sample.AggregateInstance, Rep: rep, Metric: m, Unit: "u", Better: better, Value: worst, Start: start, Duration: time.Second})
						}
					}
				}
			}
		}
	}
	return f, report.Cells(ss, report.Options{Baseline: f.Baseline, Stats: stats.Options{Seed: 1}})
}

// sectionsPage renders a study's sections alone (no generic part, whose
// format report's own goldens cover).
func sectionsPage(t *testing.T, f File, cells []report.Cell, absent map[string]string) string {
	t.Helper()
	head, secs := Sections(f, cells, absent)
	var b bytes.Buffer
	if err := report.HTML(&b, report.Doc{Run: 1, Status: "done", Study: head, Sections: secs}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// sectionHTML is the part of the page that is one section.
func sectionHTML(t *testing.T, page, id string) string {
	t.Helper()
	open := `<section class="paper" id="paper-` + id + `">`
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatalf("no section %s", id)
	}
	j := strings.Index(page[i:], "</section>")
	return page[i : i+j]
}

// Each built-in study, rendered from a synthetic run, matches its golden
// page (go test ./internal/study -update rewrites them).
func TestStudySectionsGolden(t *testing.T) {
	for _, id := range IDs() {
		t.Run(id, func(t *testing.T) {
			f, cells := synthStudyCells(t, id)
			got := sectionsPage(t, f, cells, map[string]string{})
			path := filepath.Join("testdata", "golden", "study-"+id+".html")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run 'go test ./internal/study -update' to create it)", err)
			}
			if got != string(want) {
				t.Fatalf("%s changed at %s\n(if intended: go test ./internal/study -update, and review the diff)", path, golden.FirstDiff(string(want), got))
			}
			if again := sectionsPage(t, f, cells, map[string]string{}); again != got {
				t.Fatal("two renders differ")
			}
		})
	}
}

// Every experiment of every study is exactly one section, numbered as in
// the paper, and every checked finding's outcome is printed inside the
// section of its figure, next to the chart or table.
func TestEveryExperimentIsOneSection(t *testing.T) {
	for _, id := range IDs() {
		f, cells := synthStudyCells(t, id)
		head, secs := Sections(f, cells, nil)
		if head == nil || head.ID != id {
			t.Fatalf("%s: heading %+v", id, head)
		}
		page := sectionsPage(t, f, cells, nil)
		if len(secs) != len(f.Study.Experiments) {
			t.Errorf("%s: %d sections for %d experiments", id, len(secs), len(f.Study.Experiments))
		}
		checks := Checks(f, cells)
		if len(checks) == 0 && id != "000" {
			// 000's findings all name FreeBSD jails, which do not run
			// here: they are shown, not checked.
			t.Errorf("%s: no checks on the synthetic run", id)
		}
		for i, e := range f.Study.Experiments {
			s := secs[i]
			if s.ID != e.ID || s.Number != PaperNumber(e.ID) || !strings.HasPrefix(s.Number, "Figure ") && !strings.HasPrefix(s.Number, "Table ") {
				t.Errorf("%s: section %d is %q %q for experiment %s", id, i, s.ID, s.Number, e.ID)
			}
			n := strings.Count(page, `id="paper-`+e.ID+`"`)
			if n != 1 {
				t.Errorf("%s: section %s appears %d times", id, e.ID, n)
				continue
			}
			html := sectionHTML(t, page, e.ID)
			if !strings.Contains(html, "<h2>"+s.Number+": ") {
				t.Errorf("%s %s: no heading with the paper's number %q", id, e.ID, s.Number)
			}
			if e.Workload != "" && s.Shape != report.ShapeTable && !strings.Contains(html, "<svg") {
				t.Errorf("%s %s: a %s without a chart", id, e.ID, s.Shape)
			}
			short := shortCells(e, checks)
			for _, c := range checks {
				if c.Experiment != e.ID {
					continue
				}
				c.Cell = short[c.Cell]
				if !strings.Contains(html, "<b>"+strings.ToUpper(c.Outcome)+"</b> "+htmlEsc(c.Text())) {
					t.Errorf("%s %s: the outcome %s of %q is not in its section", id, e.ID, c.Outcome, c.Text())
				}
			}
			for _, fd := range e.Findings {
				if !strings.Contains(html, htmlEsc(fd.Text)) {
					t.Errorf("%s %s: finding %q not beside its figure", id, e.ID, fd.Text)
				}
			}
		}
	}
}

func htmlEsc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;").Replace(s)
}

// Study 000's figures place 1, 2, 4, 8, 16 and 32 instances evenly.
func TestLinesInstancesAreEvenlySpaced(t *testing.T) {
	f, cells := synthStudyCells(t, "000")
	page := sectionsPage(t, f, cells, nil)
	html := sectionHTML(t, page, "fig3")
	g := regexp.MustCompile(`<g class="series" data-series="docker">(.*?)</g>`).FindStringSubmatch(html)
	if g == nil {
		t.Fatalf("no docker series in fig3:\n%.2000s", html)
	}
	var xs []float64
	for _, m := range regexp.MustCompile(`<circle cx="([0-9.]+)"`).FindAllStringSubmatch(g[1], -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		xs = append(xs, x)
	}
	if len(xs) != 6 {
		t.Fatalf("%d points, want 6 (1-32 instances): %v", len(xs), xs)
	}
	step := xs[1] - xs[0]
	for i := 2; i < len(xs); i++ {
		if d := xs[i] - xs[i-1]; d < step-0.2 || d > step+0.2 || step < 10 {
			t.Fatalf("x positions %v are not evenly spaced", xs)
		}
	}
	for _, tick := range []string{">1<", ">2<", ">4<", ">8<", ">16<", ">32<"} {
		if !strings.Contains(html, `class="tick"`+tick) {
			t.Errorf("no x tick %s", tick)
		}
	}
}

// Startup at N instances is the slowest instance in the section's table,
// figure and verdict; the mean over the instances stays in the cells.
func TestStartupIsTheSlowestInstance(t *testing.T) {
	f, cells := synthStudyCells(t, "000")
	_, secs := Sections(f, cells, nil)
	var fig8 report.Section
	for _, s := range secs {
		if s.ID == "fig8" {
			fig8 = s
		}
	}
	if len(fig8.Panels) != 1 || fig8.Panels[0].Metric != "startup_ms" {
		t.Fatalf("fig8 panels %+v", fig8.Panels)
	}
	checked := 0
	for _, c := range fig8.Panels[0].Cells {
		var orig report.Cell
		for _, o := range cells {
			if o.Label() == c.Label() && o.Instances == c.Instances && o.Metric == c.Metric && o.Params == c.Params {
				orig = o
			}
		}
		if c.Instances == 1 {
			if c.Median != orig.Median {
				t.Errorf("×1: %v, want the cell's own %v", c.Median, orig.Median)
			}
			continue
		}
		checked++
		if c.Median != stats.Median(orig.Aggregate) || c.Median <= orig.Median || c.N != len(orig.Aggregate) {
			t.Errorf("%s ×%d: median %v, want the slowest's %v (the mean over instances is %v)", c.Label(), c.Instances, c.Median, stats.Median(orig.Aggregate), orig.Median)
		}
	}
	if checked != 2*5 {
		t.Errorf("%d cells at N > 1, want 10", checked)
	}
	if !slices.ContainsFunc(fig8.Notes, func(s string) bool { return strings.Contains(s, "slowest instance") }) {
		t.Errorf("fig8 does not say it shows the slowest instance: %v", fig8.Notes)
	}
	// The verdict compares the slowest instances too.
	for _, c := range Checks(f, cells) {
		if c.Experiment == "fig8" && strings.Contains(c.Cell, "×32") {
			var docker report.Cell
			for _, o := range cells {
				if o.Label() == "docker" && o.Instances == 32 && o.Metric == "startup_ms" {
					docker = o
				}
			}
			if c.Ratio.BaseMedian != stats.Median(docker.Aggregate) && c.Ratio.OtherMedian != stats.Median(docker.Aggregate) {
				t.Errorf("fig8 ×32 compares %v and %v, not the slowest docker instance %v", c.Ratio.BaseMedian, c.Ratio.OtherMedian, stats.Median(docker.Aggregate))
			}
		}
	}
}

// Platforms the paper had that this host cannot run, and platforms of the
// file the run lacks, are in every section as "not run here" with why.
func TestSectionsSayWhatDidNotRun(t *testing.T) {
	f, cells := synthStudyCells(t, "004")
	var noLXD []report.Cell
	for _, c := range cells {
		if c.Platform != "lxd" {
			noLXD = append(noLXD, c)
		}
	}
	page := sectionsPage(t, f, noLXD, map[string]string{"lxd": "not available (lxd is not installed)"})
	html := sectionHTML(t, page, "fig3a")
	for _, s := range []string{"a separate client machine behind a router (for the web, FTP and mail servers): not run here: one host here", "lxd: not available (lxd is not installed)"} {
		if !strings.Contains(html, htmlEsc(s)) {
			t.Errorf("fig3a lacks %q", s)
		}
	}
	f0, cells0 := synthStudyCells(t, "000")
	if html := sectionHTML(t, sectionsPage(t, f0, cells0, nil), "fig5"); !strings.Contains(html, "FreeBSD 12.1 Jails (ZFS): not run here: FreeBSD jails need a FreeBSD kernel") {
		t.Errorf("000 fig5 does not say the jails were not run")
	}
}

// Study 001's figures draw the host run once as a reference line against
// the containers; study 004's table 2 is the paper's score table; tables
// carry Op and the coefficient.
func TestShapesOfTheStudies(t *testing.T) {
	f1, c1 := synthStudyCells(t, "001")
	_, s1 := Sections(f1, c1, nil)
	if s1[0].Shape != report.ShapeLinesInstances || s1[0].Reference != "native@1" {
		t.Errorf("001 fig3: shape %s reference %q", s1[0].Shape, s1[0].Reference)
	}
	html := sectionHTML(t, sectionsPage(t, f1, c1, nil), "fig3")
	if !strings.Contains(html, `class="reference"`) || !strings.Contains(html, "native@1 (reference)") {
		t.Errorf("001 fig3 has no reference line for the host")
	}
	if !strings.Contains(html, "Op = |P − P_native@1| / P_native@1") || !strings.Contains(html, "<th>Op</th>") || !strings.Contains(html, "<th>mean</th>") {
		t.Errorf("001 fig3 table lacks the Op column against native@1 or the mean")
	}
	f4, c4 := synthStudyCells(t, "004")
	_, s4 := Sections(f4, c4, nil)
	shapes := map[string]string{}
	for _, s := range s4 {
		shapes[s.ID] = s.Shape + ":" + s.Param
		if s.ID == "table2" {
			// the paper's totals as printed, then from its own Op (its
			// CPU row subtracts a percentage as a fraction), said so
			if s.Table == nil || len(s.Table.Rows) != 8 || s.Table.Rows[6][0] != "summary (the paper)" || !slices.Contains(s.Table.Rows[6], "3.62") ||
				!slices.Contains(s.Table.Rows[7], "3.67") || !strings.Contains(s.Table.Caption, "subtracts the percentage as a fraction") || !strings.Contains(s.Table.Caption, "means at one instance") {
				t.Errorf("004 table2: %+v", s.Table)
			}
		}
	}
	for id, want := range map[string]string{"fig3a": "bars:", "fig3b": "lines-param:threads", "fig6": "lines-param:users", "table2": "table:"} {
		if shapes[id] != want {
			t.Errorf("004 %s: shape %s, want %s", id, shapes[id], want)
		}
	}
	// 003's Redis and OLTP sweeps are lines over connections and threads.
	f3, c3 := synthStudyCells(t, "003")
	_, s3 := Sections(f3, c3, nil)
	for _, s := range s3 {
		if s.ID == "fig7-get" && (s.Shape != report.ShapeLinesParam || s.Param != "connections") {
			t.Errorf("003 fig7-get: %s %s", s.Shape, s.Param)
		}
		if s.ID == "table2" && (s.Shape != report.ShapeTable || len(s.Panels) != 4) {
			t.Errorf("003 table2: %s with %d panels, want a table of the 4 STREAM kernels", s.Shape, len(s.Panels))
		}
	}
}

func TestParseFigureAndNumber(t *testing.T) {
	for in, want := range map[string]string{"bars": "bars/", "lines-param: users": "lines-param/users", "lines-param:threads": "lines-param/threads", "table": "table/", "": "/"} {
		s, p, err := ParseFigure(in)
		if err != nil || s+"/"+p != want {
			t.Errorf("%q: %s/%s %v, want %s", in, s, p, err, want)
		}
	}
	for _, bad := range []string{"pie", "lines-param", "bars: x", "lines-param: a,b"} {
		if _, _, err := ParseFigure(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for in, want := range map[string]string{"fig3": "Figure 3", "fig3a": "Figure 3a", "table4-tree": "Table 4 (tree)", "fig10-wordcount": "Figure 10 (wordcount)", "table2": "Table 2"} {
		if got := PaperNumber(in); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
	f, _ := Load("004")
	f.Study.Experiments[0].Figure = "pie"
	if err := f.Check(); err == nil || !strings.Contains(err.Error(), "pie") {
		t.Errorf("a bad figure passes Check: %v", err)
	}
}
