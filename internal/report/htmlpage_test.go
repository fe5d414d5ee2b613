package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/stats"
)

var svgRe = regexp.MustCompile(`(?s)<svg.*?</svg>`)

// Every text that comes from a run lands escaped, in the page and inside
// the SVG charts (which go into the template as trusted HTML): platform
// names and options, workload, params, metric, unit, status, fingerprint
// keys and values, and noise warnings.
func TestHTMLEscapesEveryRunText(t *testing.T) {
	const payload = `"><svg onload=alert(1)><script>x</script>`
	ss := synthSamples(1, 3, []int{1, 2}, 6, []synthPlatform{{"native", "", 1}, {"p" + payload, "o=" + payload, 0.5}},
		[]synthMetric{{"w" + payload, "k=" + payload, "m" + payload, "u" + payload, sample.Higher, 5}})
	cells := Cells(ss, Options{Baseline: "native", Stats: stats.Options{Seed: 1}})
	for i := range cells {
		cells[i].Warnings = append(cells[i].Warnings, "kind"+payload+": detail"+payload)
	}
	d := Doc{Run: 1, Status: "failed" + payload, Fingerprint: map[string]string{"k" + payload: "v" + payload, "cpu_governor": "powersave" + payload}, Cells: cells}
	page := renderHTML(t, d)
	for _, raw := range []string{"<script", "<svg onload", `"><svg`} {
		if strings.Contains(page, raw) {
			i := strings.Index(page, raw)
			t.Fatalf("raw %q in the page: …%s…", raw, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	charts := svgRe.FindAllString(page, -1)
	if len(charts) < 2 {
		t.Fatalf("%d charts", len(charts))
	}
	for _, c := range charts {
		if strings.Count(c, "<svg") != 1 || !strings.Contains(c, "&lt;svg onload=alert(1)&gt;") {
			t.Fatalf("a chart does not carry the escaped payload, or carries a raw one: %.400s", c)
		}
	}
	for _, want := range []string{"failed&#34;&gt;&lt;svg", "kind&#34;&gt;&lt;svg", "k&#34;&gt;&lt;svg"} {
		if !strings.Contains(page, want) {
			t.Errorf("escaped %q missing", want)
		}
	}
}
