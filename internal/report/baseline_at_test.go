package report

import (
	"fmt"
	"testing"

	"github.com/isobench/isobench/internal/stats"
)

func TestSplitBaseline(t *testing.T) {
	for in, want := range map[string]string{
		"native@1":                   "native 1",
		"docker:cpus=2@4":            "docker:cpus=2 4",
		"native":                     "native 0",
		"docker:host=ssh://u@h":      "docker:host=ssh://u@h 0",
		"native@0":                   "native@0 0",
		"native@x":                   "native@x 0",
		"docker:host=ssh://u@h@2":    "docker:host=ssh://u@h 2",
		"lxc:host=ssh://root@10.0.0": "lxc:host=ssh://root@10.0.0 0",
	} {
		l, n := SplitBaseline(in)
		if got := fmt.Sprintf("%s %d", l, n); got != want {
			t.Errorf("SplitBaseline(%q) = %s, want %s", in, got, want)
		}
	}
}

// With baseline native@1 every cell is compared with native at one
// instance (the papers' host run once against N containers); without the
// pin, with native at the cell's own count.
func TestBaselinePinnedToInstanceCount(t *testing.T) {
	plats := []synthPlatform{{"native", "", 1}, {"docker", "", 0.9}}
	samples := synthSamples(1, 7, []int{1, 2, 4}, 10, plats, synthMetrics[2:3]) // memory mib_per_sec, higher is better
	find := func(cells []Cell, label string, n int) Cell {
		t.Helper()
		for _, c := range cells {
			if c.Label() == label && c.Instances == n {
				return c
			}
		}
		t.Fatalf("no cell %s ×%d", label, n)
		return Cell{}
	}
	near := func(c Cell, want float64) {
		t.Helper()
		if c.Ratio < want*0.95 || c.Ratio > want*1.05 {
			t.Errorf("%s ×%d: ratio %.3f against %s, want about %.3f", c.Label(), c.Instances, c.Ratio, c.Baseline, want)
		}
	}
	pinned := Cells(samples, Options{Baseline: "native@1", Stats: stats.Options{Seed: 1}})
	if c := find(pinned, "native", 1); c.Verdict != "baseline" || c.Baseline != "native" || c.Ratio != 1 {
		t.Errorf("native ×1 under native@1: verdict %q baseline %q ratio %v", c.Verdict, c.Baseline, c.Ratio)
	}
	// Per-instance throughput halves at 4 instances on the synthetic 2 cores.
	near(find(pinned, "native", 4), 0.5)
	near(find(pinned, "docker", 1), 0.9)
	near(find(pinned, "docker", 2), 0.9)
	near(find(pinned, "docker", 4), 0.45)
	for _, c := range []Cell{find(pinned, "native", 4), find(pinned, "docker", 4)} {
		if c.Baseline != "native@1" || c.Verdict != stats.VerdictSlower {
			t.Errorf("%s ×4 under native@1: baseline %q verdict %q", c.Label(), c.Baseline, c.Verdict)
		}
	}
	// Cells at another count than the pin are compared unpaired; their
	// interval still exists.
	if a, b := find(pinned, "docker", 4), find(pinned, "docker", 1); !a.RatioValid || !b.RatioValid {
		t.Errorf("intervals: ×4 valid %v, ×1 valid %v", a.RatioValid, b.RatioValid)
	}

	plain := Cells(samples, Options{Baseline: "native", Stats: stats.Options{Seed: 1}})
	near(find(plain, "docker", 4), 0.9)
	if c := find(plain, "native", 4); c.Verdict != "baseline" {
		t.Errorf("native ×4 under native: verdict %q", c.Verdict)
	}
	// The baseline platform is listed first in both.
	if pinned[0].Label() != "native" || plain[0].Label() != "native" {
		t.Errorf("first cells %s, %s", pinned[0].Label(), plain[0].Label())
	}
	// A count the run does not have: no ratios, no verdicts.
	for _, c := range Cells(samples, Options{Baseline: "native@3"}) {
		if c.Baseline != "" || c.Verdict != "" {
			t.Fatalf("%s ×%d against native@3 (not run): baseline %q verdict %q", c.Label(), c.Instances, c.Baseline, c.Verdict)
		}
	}
}
