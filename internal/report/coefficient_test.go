package report

import (
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/stats"
)

// The coefficient is the papers' (study 002's time / native): the
// platform's cost over the baseline's, 1 the baseline and > 1 worse,
// whatever the metric; the study tables say so in their caption and agree
// with the JSON's coefficient (both from the median here).
func TestCoefficientOrientation(t *testing.T) {
	if k := Coefficient(12, 10, stats.BetterLower); k != 1.2 {
		t.Errorf("12 s against 10 s: coefficient %v, want 1.2 (slower is > 1)", k)
	}
	if k := Coefficient(80, 100, stats.BetterHigher); k != 1.25 {
		t.Errorf("80 ops/s against 100: coefficient %v, want 1.25 (less throughput is > 1)", k)
	}
	d := sectionDoc()
	s := d.Sections[0] // cpu events/s, medians, against native
	tb := cellsTable(s, s.Panels[0])
	if want := "coef. = native/platform (platform's cost over native's), > 1 worse"; !strings.Contains(tb.Caption, want) {
		t.Errorf("caption %q lacks %q", tb.Caption, want)
	}
	if tb.Header[len(tb.Header)-1] != "coef." {
		t.Fatalf("header %v", tb.Header)
	}
	seen := 0
	for i, c := range s.Panels[0].Cells {
		row := tb.Rows[i]
		if row[0] != c.Label() || c.Label() == "native" {
			continue
		}
		seen++
		if got, want := row[len(row)-1], ratioNum(c.Coefficient); got != want {
			t.Errorf("%s ×%d: table coef. %s, JSON coefficient %s", c.Label(), c.Instances, got, want)
		}
		if c.Label() == "qemu:cpus=1" && c.Coefficient <= 1 {
			t.Errorf("qemu, 0.72× native's events/s: coefficient %v, want > 1", c.Coefficient)
		}
	}
	if seen == 0 {
		t.Fatal("no compared row")
	}
	lower := Section{Baseline: "native", Central: "median"}
	if c := cellsTable(lower, Panel{Metric: "startup_ms", Unit: "ms", Better: stats.BetterLower}).Caption; !strings.Contains(c, "coef. = platform/native, > 1 worse") {
		t.Errorf("caption %q", c)
	}
}
