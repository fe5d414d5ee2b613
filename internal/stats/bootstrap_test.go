package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// draw returns n values of gen from a generator seeded with seed.
func draw(seed uint64, n int, gen func(r *rand.Rand) float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 12345))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = gen(r)
	}
	return xs
}

func normal(mu, sigma float64) func(*rand.Rand) float64 {
	return func(r *rand.Rand) float64 { return mu + sigma*r.NormFloat64() }
}

func lognormal(mu, sigma float64) func(*rand.Rand) float64 {
	return func(r *rand.Rand) float64 { return math.Exp(mu + sigma*r.NormFloat64()) }
}

// TestBootstrapCoverage: over 300 seeded trials of n=20, the 95 % interval
// of the median covers the true median in roughly 95 % of them. The
// percentile bootstrap of a median is not exact at n=20, hence a band.
func TestBootstrapCoverage(t *testing.T) {
	cases := []struct {
		name       string
		gen        func(*rand.Rand) float64
		trueMedian float64
	}{
		{"normal(10,1)", normal(10, 1), 10},
		{"lognormal(0,0.5)", lognormal(0, 0.5), 1}, // median e^0
	}
	const trials, n = 300, 20
	for _, c := range cases {
		covered := 0
		for i := range trials {
			s := Summarize(draw(uint64(i), n, c.gen), Options{Seed: int64(i)})
			if !s.CIValid {
				t.Fatalf("%s: CI invalid at n=%d", c.name, n)
			}
			if s.CILow <= c.trueMedian && c.trueMedian <= s.CIHigh {
				covered++
			}
		}
		rate := float64(covered) / trials
		t.Logf("%s: coverage %.3f over %d trials", c.name, rate, trials)
		if rate < 0.88 || rate > 0.99 {
			t.Errorf("%s: coverage %.3f outside [0.88, 0.99]", c.name, rate)
		}
	}
}

func TestCIWithin(t *testing.T) {
	tight := draw(1, 20, normal(100, 0.5))
	ok, hw := CIWithin(tight, 0.02, Options{Seed: 1})
	if !ok || !(hw > 0 && hw < 0.02) {
		t.Errorf("tight data: ok=%v halfWidth=%v, want within ±2%%", ok, hw)
	}
	wide := draw(2, 20, normal(100, 30))
	ok, hw = CIWithin(wide, 0.02, Options{Seed: 1})
	if ok || !(hw > 0.02) {
		t.Errorf("wide data: ok=%v halfWidth=%v, want outside ±2%%", ok, hw)
	}
	// The half-width is the larger side of the interval, relative to the
	// median.
	s := Summarize(wide, Options{Seed: 1})
	want := math.Max(s.Median-s.CILow, s.CIHigh-s.Median) / s.Median
	if !near(hw, want, 1e-12) {
		t.Errorf("halfWidth %v, want %v from the summary's CI", hw, want)
	}
	for _, vals := range [][]float64{nil, {1, 1}, {0, 0, 0, 0}} {
		if ok, hw := CIWithin(vals, 0.02, Options{}); ok || !math.IsInf(hw, 1) {
			t.Errorf("%v: ok=%v hw=%v, want false, +Inf", vals, ok, hw)
		}
	}
	// More repetitions of the same noise narrow the interval: the stopping
	// rule eventually stops.
	noisy := draw(3, 400, normal(100, 10))
	okSmall, hwSmall := CIWithin(noisy[:10], 0.02, Options{Seed: 5})
	okBig, hwBig := CIWithin(noisy, 0.02, Options{Seed: 5})
	if okSmall || !okBig || !(hwBig < hwSmall) {
		t.Errorf("n=10: %v %.4f; n=400: %v %.4f; want the interval to shrink below 2%%", okSmall, hwSmall, okBig, hwBig)
	}
}

// TestMedianOfCounts: the counting shortcut gives exactly the median of the
// expanded resample, for odd and even sizes and ties.
func TestMedianOfCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		n := 1 + trial%9
		sorted := make([]float64, n)
		for i := range sorted {
			sorted[i] = float64(r.IntN(5)) // ties on purpose
		}
		slices.Sort(sorted)
		counts := make([]int, n)
		var expanded []float64
		for range n {
			i := r.IntN(n)
			counts[i]++
			expanded = append(expanded, sorted[i])
		}
		slices.Sort(expanded)
		if got, want := medianOfCounts(sorted, counts), Quantile(expanded, 0.5); got != want {
			t.Fatalf("sorted %v counts %v: got %v, want %v", sorted, counts, got, want)
		}
	}
}

func TestSortWithRanks(t *testing.T) {
	xs := []float64{3, 1, 2, 1}
	sorted, rank := sortWithRanks(xs)
	if !slices.Equal(sorted, []float64{1, 1, 2, 3}) {
		t.Fatalf("sorted = %v", sorted)
	}
	for i, x := range xs {
		if sorted[rank[i]] != x {
			t.Errorf("rank[%d] = %d points at %v, want %v", i, rank[i], sorted[rank[i]], x)
		}
	}
	if !slices.Equal(rank, []int{3, 0, 2, 1}) {
		t.Errorf("rank = %v, want a permutation [3 0 2 1]", rank)
	}
}
