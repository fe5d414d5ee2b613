package stats

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestQuantileType7HandComputed(t *testing.T) {
	// Reference values: R quantile(x, p, type = 7) / numpy.percentile.
	cases := []struct {
		sorted []float64
		p      float64
		want   float64
	}{
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
		{[]float64{1, 2, 3, 4}, 0.05, 1.15},
		{[]float64{1, 2, 3, 4}, 0.95, 3.85},
		{[]float64{1, 2, 3, 4}, 0, 1},
		{[]float64{1, 2, 3, 4}, 1, 4},
		{[]float64{1, 2, 3, 4, 5}, 0.5, 3},
		{[]float64{1, 2, 3, 4, 5}, 0.25, 2},
		{[]float64{10, 20}, 0.05, 10.5},
		{[]float64{10, 20}, 0.95, 19.5},
		{[]float64{7}, 0.3, 7},
		{nil, 0.5, 0},
		{[]float64{1, 2}, -1, 1},         // clamped
		{[]float64{1, 2}, math.NaN(), 1}, // clamped, no NaN out
	}
	for _, c := range cases {
		if got := Quantile(c.sorted, c.p); !near(got, c.want, 1e-12) {
			t.Errorf("Quantile(%v, %v) = %v, want %v", c.sorted, c.p, got, c.want)
		}
	}
}

func TestSummarizeHandComputed(t *testing.T) {
	// Unsorted on purpose; sorted it is 1 2 3 4 5 6 7 8 9 10.
	vals := []float64{7, 3, 10, 1, 5, 9, 2, 8, 6, 4}
	s := Summarize(vals, Options{Seed: 1})
	checks := []struct {
		name      string
		got, want float64
	}{
		{"median", s.Median, 5.5},
		{"mean", s.Mean, 5.5},
		{"stdev", s.Stdev, math.Sqrt(82.5 / 9)}, // Σ(x-5.5)² = 82.5
		{"cv", s.CV, math.Sqrt(82.5/9) / 5.5},
		{"min", s.Min, 1},
		{"max", s.Max, 10},
		{"p5", s.P5, 1.45},   // h = 9·0.05 = 0.45
		{"p95", s.P95, 9.55}, // h = 8.55
		{"mad", s.MAD, 2.5},  // |x-5.5| = .5 .5 1.5 1.5 ... 4.5 4.5
	}
	for _, c := range checks {
		if !near(c.got, c.want, 1e-12) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.N != 10 || s.Dropped != 0 || !s.CVValid || !s.CIValid || s.Confidence != 0.95 {
		t.Errorf("flags: %+v", s)
	}
	if !(s.CILow <= s.Median && s.Median <= s.CIHigh) || s.CILow < 1 || s.CIHigh > 10 {
		t.Errorf("CI [%v, %v] does not bracket the median inside the data range", s.CILow, s.CIHigh)
	}
	if len(s.Outliers) != 0 {
		t.Errorf("uniform data has outliers %v", s.Outliers)
	}
	if !slices.Equal(vals, []float64{7, 3, 10, 1, 5, 9, 2, 8, 6, 4}) {
		t.Errorf("Summarize modified its input: %v", vals)
	}
}

func TestSummarizeSmallAndDegenerate(t *testing.T) {
	for _, vals := range [][]float64{nil, {}, {4}, {4, 6}} {
		s := Summarize(vals, Options{})
		if s.CIValid || s.CILow != 0 || s.CIHigh != 0 {
			t.Errorf("%v: CI must be undefined below %d values: %+v", vals, MinCI, s)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("%v: JSON: %v", vals, err)
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil || back["ci_valid"] != false {
			t.Errorf("%v: JSON %s lacks ci_valid=false", vals, b)
		}
	}
	one := Summarize([]float64{4}, Options{})
	if one.Median != 4 || one.P5 != 4 || one.P95 != 4 || one.Stdev != 0 || one.CVValid {
		t.Errorf("single value: %+v", one)
	}
	two := Summarize([]float64{4, 6}, Options{})
	if two.Median != 5 || !near(two.Stdev, math.Sqrt2, 1e-12) || !two.CVValid {
		t.Errorf("two values: %+v", two)
	}
	zeroMean := Summarize([]float64{-1, 1, -1, 1}, Options{})
	if zeroMean.CVValid || zeroMean.CV != 0 || !zeroMean.CIValid {
		t.Errorf("zero mean: CV must be flagged undefined: %+v", zeroMean)
	}
	same := Summarize([]float64{3, 3, 3, 3}, Options{})
	if same.Stdev != 0 || same.CV != 0 || same.CILow != 3 || same.CIHigh != 3 || len(same.Outliers) != 0 {
		t.Errorf("constant data: %+v", same)
	}
}

func TestSummarizeDropsNonFinite(t *testing.T) {
	vals := []float64{math.NaN(), 1, 2, math.Inf(1), 3, math.Inf(-1), 100}
	s := Summarize(vals, Options{})
	if s.N != 4 || s.Dropped != 3 || s.Median != 2.5 || s.Max != 100 {
		t.Errorf("got %+v", s)
	}
	// 100 is an outlier and its index refers to the caller's slice.
	if !slices.Equal(s.Outliers, []int{6}) {
		t.Errorf("outliers = %v, want [6]", s.Outliers)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Error(err)
	}
}

func TestSummarizeHugeValuesStayFinite(t *testing.T) {
	m := math.MaxFloat64
	s := Summarize([]float64{m, m, m, -m, m / 2}, Options{Resamples: 100})
	if s.Mean <= 0 || math.IsInf(s.Mean, 0) || s.Max != m || s.Min != -m || s.Median != m {
		t.Errorf("got %+v", s)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Error(err)
	}
	tiny := Summarize([]float64{1e-310, 2e-310, 3e-310}, Options{Resamples: 100})
	if tiny.Median != 2e-310 || !(tiny.Stdev > 0) || !near(tiny.CV, 0.5, 1e-6) {
		t.Errorf("subnormal data: %+v", tiny)
	}
}

func TestOutliersPlanted(t *testing.T) {
	vals := []float64{10, 10.1, 9.9, 10.2, 9.8, 10, 10.05, 30, 9.95, 10.1}
	if got := Outliers(vals); !slices.Equal(got, []int{7}) {
		t.Errorf("Outliers = %v, want [7]", got)
	}
	s := Summarize(vals, Options{})
	if !slices.Equal(s.Outliers, []int{7}) || s.Max != 30 || s.N != 10 {
		t.Errorf("outlier must be flagged and kept: %+v", s)
	}
	// A low outlier is flagged too.
	vals[2] = -5
	if got := Outliers(vals); !slices.Equal(got, []int{2, 7}) {
		t.Errorf("Outliers = %v, want [2 7]", got)
	}
}

func TestOutliersMADZero(t *testing.T) {
	// More than half equal: MAD = 0, the mean absolute deviation is used:
	// MeanAD = 4/7, M = 4 / (1.253314·4/7) ≈ 5.58 > 3.5.
	if got := Outliers([]float64{5, 5, 5, 5, 5, 5, 9}); !slices.Equal(got, []int{6}) {
		t.Errorf("Outliers = %v, want [6]", got)
	}
	// MAD = 0, MeanAD = 2/5, M = 1/(1.253314·0.4) ≈ 2.0: not an outlier.
	if got := Outliers([]float64{5, 5, 5, 6, 4}); len(got) != 0 {
		t.Errorf("Outliers = %v, want none", got)
	}
	if got := Outliers([]float64{2, 2, 2, 2}); len(got) != 0 {
		t.Errorf("constant data: Outliers = %v, want none", got)
	}
}

func TestSummarizeDeterministicPerSeed(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	vals := make([]float64, 15)
	for i := range vals {
		vals[i] = 100 + 5*r.NormFloat64()
	}
	a := Summarize(vals, Options{Seed: 42})
	b := Summarize(vals, Options{Seed: 42})
	if a.CILow != b.CILow || a.CIHigh != b.CIHigh {
		t.Errorf("same seed, different CI: %v %v", a, b)
	}
	wide := Summarize(vals, Options{Seed: 42, Confidence: 0.99})
	narrow := Summarize(vals, Options{Seed: 42, Confidence: 0.5})
	if !(wide.CILow <= a.CILow && a.CIHigh <= wide.CIHigh && a.CILow <= narrow.CILow && narrow.CIHigh <= a.CIHigh) {
		t.Errorf("CI not nested by confidence: 50%% %v..%v, 95%% %v..%v, 99%% %v..%v",
			narrow.CILow, narrow.CIHigh, a.CILow, a.CIHigh, wide.CILow, wide.CIHigh)
	}
}

// FuzzSummarize: Summarize never panics, and never yields NaN or ±Inf (so
// the summary always encodes as JSON), whatever the input.
func FuzzSummarize(f *testing.F) {
	enc := func(vs ...float64) []byte {
		b := make([]byte, 0, 8*len(vs))
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		return b
	}
	f.Add(enc(1, 2, 3), int64(0))
	f.Add(enc(), int64(1))
	f.Add(enc(math.MaxFloat64, -math.MaxFloat64, 0, 5e-324), int64(2))
	f.Add(enc(math.NaN(), math.Inf(1), 1, 1, 1), int64(3))
	f.Add(enc(-1, 1, -1, 1, 1e300, -1e300), int64(4))
	f.Add(enc(0, 0, 0, 1e-320), int64(5))
	f.Fuzz(func(t *testing.T, data []byte, seed int64) {
		vals := make([]float64, 0, len(data)/8)
		for len(data) >= 8 && len(vals) < 200 {
			vals = append(vals, math.Float64frombits(binary.LittleEndian.Uint64(data)))
			data = data[8:]
		}
		s := Summarize(vals, Options{Resamples: 50, Seed: seed})
		for name, v := range map[string]float64{
			"median": s.Median, "mean": s.Mean, "stdev": s.Stdev, "cv": s.CV,
			"min": s.Min, "max": s.Max, "p5": s.P5, "p95": s.P95,
			"ci_low": s.CILow, "ci_high": s.CIHigh, "mad": s.MAD,
		} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s = %v for %v", name, v, vals)
			}
		}
		if s.N > 0 && !(s.Min <= s.P5 && s.P5 <= s.Median && s.Median <= s.P95 && s.P95 <= s.Max) {
			t.Fatalf("order statistics out of order: %+v", s)
		}
		if s.Stdev < 0 || s.MAD < 0 || s.CV < 0 {
			t.Fatalf("negative spread: %+v", s)
		}
		if s.CIValid && !(s.Min <= s.CILow && s.CILow <= s.CIHigh && s.CIHigh <= s.Max) {
			t.Fatalf("CI outside the data: %+v", s)
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("JSON: %v", err)
		}
		for _, i := range s.Outliers {
			if i < 0 || i >= len(vals) || !isFinite(vals[i]) {
				t.Fatalf("bad outlier index %d for %v", i, vals)
			}
		}
	})
}
