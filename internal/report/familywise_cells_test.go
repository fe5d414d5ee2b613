package report

import (
	"fmt"
	"testing"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/stats"
)

// TestFamilywiseAA: a platform against itself over 20 cells, 40 runs of
// 10 repetitions. Per-cell 95% intervals call some cell different in
// about two runs of three; the family-wise intervals in few of them, and
// they still find a real 20% difference. Not exactly 5%: the percentile
// bootstrap of a median of 10 paired ratios under-covers in its far
// tails (over 120 such runs: per cell 72, family-wise 10, i.e. 8%), so
// the bound below is 15%.
var aaRuns = int64(40)

func TestFamilywiseAA(t *testing.T) {
	var ms []synthMetric
	for i := 0; i < 20; i++ {
		ms = append(ms, synthMetric{"cpu", fmt.Sprintf("max-prime=%d", 10000+i), "events_per_sec", "events/s", sample.Higher, 2400})
	}
	ps := []synthPlatform{{"native", "", 1}, {"native", "cpus=2", 1}}
	differs := func(cs []Cell) (n int) {
		for _, c := range cs {
			if c.Options != "" && (c.Verdict == stats.VerdictFaster || c.Verdict == stats.VerdictSlower) {
				n++
			}
		}
		return n
	}
	runsPer, runsFW := 0, 0
	for seed := int64(1); seed <= aaRuns; seed++ {
		ss := synthSamples(1, seed, []int{1}, 10, ps, ms)
		o := Options{Baseline: "native", Stats: stats.Options{Seed: 1}}
		if differs(Cells(ss, o)) > 0 {
			runsPer++
		}
		fw, k := Familywise(ss, o)
		if k != 20 {
			t.Fatalf("seed %d: %d cells compared, want 20", seed, k)
		}
		if fw.Stats.Confidence != 1-0.05/20 {
			t.Fatalf("confidence %v", fw.Stats.Confidence)
		}
		if differs(Cells(ss, fw)) > 0 {
			runsFW++
		}
	}
	t.Logf("runs with a false difference: per-cell %d of 40, family-wise %d of 40", runsPer, runsFW)
	if runsPer < 10 {
		t.Errorf("per-cell intervals called a difference in only %d of 40 A/A runs: the test does not exercise the problem", runsPer)
	}
	if runsFW > 6 {
		t.Errorf("family-wise intervals called a difference in %d of 40 A/A runs (2-3 expected, at most 6 allowed)", runsFW)
	}
	// a real difference still stands out of the family's noise
	ps[1].factor = 0.8
	ss := synthSamples(1, 7, []int{1}, 10, ps, ms)
	fw, _ := Familywise(ss, Options{Baseline: "native", Stats: stats.Options{Seed: 1}})
	if n := differs(Cells(ss, fw)); n != 20 {
		t.Errorf("a 20%% difference found in %d of 20 cells family-wise", n)
	}
	// one cell: nothing to correct
	one := synthSamples(1, 1, []int{1}, 10, ps, ms[:1])
	if o, k := Familywise(one, Options{Baseline: "native"}); k != 1 || o.Stats.Confidence != 0 {
		t.Errorf("one cell: k=%d confidence %v", k, o.Stats.Confidence)
	}
}

// TestFamilywiseMinReps: 20 cells at 95% need 10 repetitions (2^(1-9) =
// 0.0039 > 0.05/20 = 0.0025 >= 2^(1-10)); one cell needs 6.
func TestFamilywiseMinReps(t *testing.T) {
	for _, c := range []struct{ k, want int }{{20, 10}, {1, 6}, {100, 12}} {
		if got := FamilywiseMinReps(c.k, 0.95); got != c.want {
			t.Errorf("%d cells: %d repetitions, want %d", c.k, got, c.want)
		}
	}
}
