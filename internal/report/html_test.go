package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/stats"
)

var (
	svgLineRe     = regexp.MustCompile(`<svg[^>]*class="chart line"`)
	svgOverheadRe = regexp.MustCompile(`<svg[^>]*class="chart overhead"`)
	errorClassRe  = regexp.MustCompile(`class="[^"]*\berror\b[^"]*"`)
)

// synthDoc is the synthetic run used by the HTML tests: 3 platforms,
// 3 workloads with 5 metrics, instance counts 1, 2 and 4, 8 repetitions.
func synthDoc(t *testing.T) Doc {
	t.Helper()
	path := synthStore(t, t.TempDir(), "synth.db", synthFingerprint(), func(id int64) []sample.Sample {
		return synthSamples(id, 7, []int{1, 2, 4}, 8, synthPlatforms, synthMetrics)
	})
	return loadDoc(t, path, "native")
}

func renderHTML(t *testing.T, d Doc) string {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestHTMLStructure(t *testing.T) {
	d := synthDoc(t)
	page := renderHTML(t, d)

	if n := len(svgLineRe.FindAllString(page, -1)); n != len(synthMetrics) {
		t.Errorf("%d line charts, want one per workload×metric = %d", n, len(synthMetrics))
	}
	if n := len(svgOverheadRe.FindAllString(page, -1)); n != len(synthMetrics) {
		t.Errorf("%d overhead charts, want %d", n, len(synthMetrics))
	}
	if m := errorClassRe.FindString(page); m != "" {
		t.Errorf("page has an error element: %s", m)
	}
	// Self-contained: nothing fetched at view time.
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "@import", "url(", "src=", `href="http`, `href="//`} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q: it must not load anything", bad)
		}
	}
	// Host warnings from the fingerprint.
	for _, want := range []string{`governor is &#34;powersave&#34;`, "qemu:cpus=1 runs under TCG"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks host warning %q", want)
		}
	}
	// The summary lists qemu (28% slower) for every metric and instance
	// count, as a detected difference.
	summary := section(page, "summary")
	if c := strings.Count(summary, "<td class=\"l\">qemu:cpus=1</td>"); c != len(synthMetrics)*3 {
		t.Errorf("summary lists qemu %d times, want %d:\n%s", c, len(synthMetrics)*3, summary)
	}
	if !strings.Contains(summary, "slower") {
		t.Error("summary does not call qemu slower")
	}
	// Study 004's score: all four rows, native = 4.00 in total.
	score := section(page, "score")
	for _, want := range []string{"CPU", "RAM speed", "I/O read", "I/O write", "<td>4.00</td>", "<b>100.0%</b>"} {
		if !strings.Contains(score, want) {
			t.Errorf("score section lacks %q:\n%s", want, score)
		}
	}
	if strings.Contains(score, "warnbox") {
		t.Errorf("score says rows are missing:\n%s", score)
	}
	// One table row per cell.
	if n := strings.Count(page, "<table class=\"cells\">"); n != len(synthMetrics) {
		t.Errorf("%d cell tables, want %d", n, len(synthMetrics))
	}
}

// section returns the text of <section id="id"> ... </section>.
func section(page, id string) string {
	i := strings.Index(page, `<section id="`+id+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], "</section>")
	if j < 0 {
		return page[i:]
	}
	return page[i : i+j]
}

func TestHTMLEscapesAndHandlesDegenerateInput(t *testing.T) {
	ss := synthSamples(1, 3, []int{1}, 2, []synthPlatform{{"native", "", 1}, {"x", `a=<script>alert(1)</script>`, 0.5}},
		[]synthMetric{{"w<b>", "p=\"q\"", "m&n", "u<", sample.Higher, 5}})
	d := Doc{Run: 1, Status: "interrupted", Fingerprint: map[string]string{"k<": "v&"},
		Cells: Cells(ss, Options{Baseline: "native"})}
	page := renderHTML(t, d)
	if strings.Contains(page, "<script>") || strings.Contains(page, "<b>(") {
		t.Error("labels are not escaped")
	}
	if !strings.Contains(page, "a=&lt;script&gt;") {
		t.Error("escaped label missing")
	}
	// An interrupted run says so, as an error box.
	if !errorClassRe.MatchString(page) {
		t.Error("interrupted run is not flagged")
	}
	// Two repetitions: no interval, verdict insufficient; still one chart.
	if n := len(svgLineRe.FindAllString(page, -1)); n != 1 {
		t.Errorf("%d line charts, want 1", n)
	}
	// Empty document still renders.
	empty := renderHTML(t, Doc{Run: 2, Status: "done"})
	if !strings.Contains(empty, "No fingerprint") || svgLineRe.MatchString(empty) {
		t.Error("empty document")
	}
}

func TestOverallScoreFromCells(t *testing.T) {
	d := synthDoc(t)
	s, ok, err := OverallScore(d.Cells)
	if err != nil || !ok {
		t.Fatalf("OverallScore: %v %v", ok, err)
	}
	if len(s.Missing) != 0 || len(s.Rows) != 4 {
		t.Fatalf("rows %v missing %v", s.Rows, s.Missing)
	}
	if s.Total["native"] != 4 {
		t.Errorf("native total %v, want 4", s.Total["native"])
	}
	// qemu runs at 0.72 of native in every row (2% noise, 8 reps).
	if o := s.Overall["qemu:cpus=1"]; o < 0.68 || o > 0.76 {
		t.Errorf("qemu overall %.3f, want about 0.72", o)
	}
	if !strings.Contains(s.Source[stats.RowCPU], "events_per_sec ×1") {
		t.Errorf("cpu source %q", s.Source[stats.RowCPU])
	}
	// Without blockio, the I/O rows are missing but the rest is scored.
	var noIO []Cell
	for _, c := range d.Cells {
		if c.Workload != "blockio" {
			noIO = append(noIO, c)
		}
	}
	s, ok, err = OverallScore(noIO)
	if err != nil || !ok || len(s.Missing) != 2 || s.Total["native"] != 2 {
		t.Errorf("without I/O: ok=%v err=%v missing=%v total=%v", ok, err, s.Missing, s.Total)
	}
	// Without a baseline there is nothing to normalise by.
	plain := Cells(synthSamples(1, 1, []int{1}, 3, synthPlatforms, synthMetrics), Options{})
	if _, ok, _ := OverallScore(plain); ok {
		t.Error("score without a baseline")
	}
}

func TestNiceScale(t *testing.T) {
	cases := []struct{ lo, hi float64 }{{0, 1}, {0.13, 0.97}, {1, 1}, {0, 0}, {-3.2, 17}, {2345, 2410}, {1e6, 3.3e6}, {-0.0004, 0.0021}}
	for _, c := range cases {
		mn, mx, step := niceScale(c.lo, c.hi, 6)
		if !(mn <= c.lo && mx >= c.hi && step > 0) {
			t.Errorf("niceScale(%v, %v) = %v %v %v: does not cover", c.lo, c.hi, mn, mx, step)
		}
		n := len(ticks(mn, mx, step))
		if n < 2 || n > 12 {
			t.Errorf("niceScale(%v, %v): %d ticks", c.lo, c.hi, n)
		}
		// The step is 1, 2 or 5 times a power of ten.
		m := step / pow10floor(step)
		if !(near(m, 1) || near(m, 2) || near(m, 5) || near(m, 10)) {
			t.Errorf("step %v is not nice", step)
		}
	}
	if got := fitText("memory:access=seq,block-size=1k,duration=500ms: mib_per_sec", 30); got != "memory:access=…ms: mib_per_sec" || len([]rune(got)) != 30 {
		t.Errorf("fitText = %q", got)
	}
	if got := tickLabel(2500000, 500000); got != "2.5M" {
		t.Errorf("tickLabel = %q", got)
	}
	if got := tickLabel(0.25, 0.05); got != "0.25" {
		t.Errorf("tickLabel = %q", got)
	}
	if got := tickLabel(12000, 2000); got != "12k" {
		t.Errorf("tickLabel = %q", got)
	}
}

func pow10floor(x float64) float64 {
	p := 1.0
	for p*10 <= x {
		p *= 10
	}
	for p > x {
		p /= 10
	}
	return p
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// chromium finds a Chromium binary, or skips (fails when
// ISOBENCH_REQUIRE_PLATFORMS is set).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("ISOBENCH_REQUIRE_PLATFORMS") != "" {
		t.Fatal("chromium is not installed (apt-get install -y chromium) and ISOBENCH_REQUIRE_PLATFORMS is set")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium)")
	return ""
}

func chromiumArgs(profile string, extra ...string) []string {
	return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir=" + profile}, extra...)
}

// TestHTMLInChromium renders the report of a synthetic store, opens it in
// headless Chromium and checks what a browser makes of it: a screenshot
// that is not blank, and a DOM with one line chart per workload×metric
// and no error element. With ISOBENCH_REPORT_OUT=DIR the page and the
// screenshot are kept in DIR.
func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	if keep := os.Getenv("ISOBENCH_REPORT_OUT"); keep != "" {
		dir = keep
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := synthDoc(t)
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := HTML(f, d); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	shot := filepath.Join(dir, "report.png")
	os.Remove(shot)
	cmd := exec.CommandContext(ctx, bin, chromiumArgs(t.TempDir(), "--screenshot="+shot, "--window-size=1280,4000", url)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	fh, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(fh)
	fh.Close()
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 4000 {
		t.Errorf("screenshot is %v, want 1280×4000", b)
	}
	colours, nonWhite := colourStats(img)
	t.Logf("screenshot %s: %d distinct colours, %.1f%% non-white pixels", shot, colours, 100*nonWhite)
	// Text alone gives a few dozen anti-aliasing greys; the charts' five
	// platform colours, bands and anti-aliased lines give hundreds.
	if colours < 200 {
		t.Errorf("screenshot has only %d distinct colours: blank or unstyled", colours)
	}
	if nonWhite < 0.05 {
		t.Errorf("screenshot is %.1f%% non-white: nearly blank", 100*nonWhite)
	}

	var stdout, stderr bytes.Buffer
	cmd = exec.CommandContext(ctx, bin, chromiumArgs(t.TempDir(), "--dump-dom", url)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	dom := stdout.String()
	if n := len(svgLineRe.FindAllString(dom, -1)); n != len(synthMetrics) {
		t.Errorf("DOM has %d line charts, want %d (workload×metric)", n, len(synthMetrics))
	}
	if n := strings.Count(dom, "<svg"); n != 2*len(synthMetrics)+1 {
		t.Errorf("DOM has %d <svg>, want %d (the overview, and a line and an overhead chart per workload×metric)", n, 2*len(synthMetrics)+1)
	}
	if m := errorClassRe.FindString(dom); m != "" {
		t.Errorf("DOM has an error element: %s", m)
	}
	if !strings.Contains(dom, "Overall score") {
		t.Error("DOM lacks the overall score")
	}
}

// colourStats counts distinct colours and the share of pixels that are not
// (near) white.
func colourStats(img image.Image) (distinct int, nonWhite float64) {
	seen := map[uint32]bool{}
	b := img.Bounds()
	total, dark := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			seen[r<<16|g<<8|bl] = true
			total++
			if r < 240 || g < 240 || bl < 240 {
				dark++
			}
		}
	}
	return len(seen), float64(dark) / float64(total)
}
