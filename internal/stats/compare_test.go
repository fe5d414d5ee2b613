package stats

import (
	"encoding/json"
	"math"
	"testing"
)

// TestCompareAA: two samples of the same distribution show no detectable
// difference in most of 200 seeded trials (nominally 95 %).
func TestCompareAA(t *testing.T) {
	const trials = 200
	for _, paired := range []bool{false, true} {
		same := 0
		for i := range trials {
			base := draw(uint64(2*i), 20, lognormal(math.Log(50), 0.1))
			other := draw(uint64(2*i+1), 20, lognormal(math.Log(50), 0.1))
			r := Compare(base, other, paired, BetterLower, Options{Seed: int64(i)})
			if !r.Valid || !r.CIValid || r.Paired != paired {
				t.Fatalf("trial %d: %+v", i, r)
			}
			if r.Verdict == VerdictSame {
				same++
			} else if r.Verdict != VerdictFaster && r.Verdict != VerdictSlower {
				t.Fatalf("unexpected verdict %q", r.Verdict)
			}
		}
		rate := float64(same) / trials
		t.Logf("paired=%v: %q in %.3f of %d A/A trials", paired, VerdictSame, rate, trials)
		if rate < 0.85 {
			t.Errorf("paired=%v: A/A gave no detectable difference in only %.3f of trials", paired, rate)
		}
	}
}

// TestCompareHalfThroughput: a platform with half the throughput of the
// baseline is detected as slower, with ratio ≈ 0.5 and the oriented
// coefficient ≈ 2.
func TestCompareHalfThroughput(t *testing.T) {
	for i := range 20 {
		base := draw(uint64(i), 20, normal(1000, 30))
		other := draw(uint64(i+100), 20, normal(500, 15))
		r := Compare(base, other, false, BetterHigher, Options{Seed: int64(i)})
		if r.Ratio < 0.45 || r.Ratio > 0.55 {
			t.Errorf("trial %d: ratio %v outside 0.45–0.55", i, r.Ratio)
		}
		if !r.CIValid || !(r.CIHigh < 1) || !(r.CILow <= r.Ratio && r.Ratio <= r.CIHigh) {
			t.Errorf("trial %d: CI [%v, %v] must contain the ratio and exclude 1", i, r.CILow, r.CIHigh)
		}
		if r.Verdict != VerdictSlower {
			t.Errorf("trial %d: verdict %q, want %q", i, r.Verdict, VerdictSlower)
		}
		if !near(r.Coefficient, 1/r.Ratio, 1e-9) || r.Coefficient < 1.8 || r.Coefficient > 2.2 {
			t.Errorf("trial %d: coefficient %v, want base/other ≈ 2 (>1 = worse)", i, r.Coefficient)
		}
		if !near(r.Overhead, math.Abs(r.OtherMedian-r.BaseMedian)/r.BaseMedian, 1e-12) || r.Overhead < 0.45 || r.Overhead > 0.55 {
			t.Errorf("trial %d: overhead %v, want |Pm-Pb|/Pb ≈ 0.5", i, r.Overhead)
		}
	}
}

// TestCompareOrientation: the same ratio reads as faster or slower
// depending on the metric's direction, and the coefficient is < 1 exactly
// when the platform is better.
func TestCompareOrientation(t *testing.T) {
	base := []float64{10, 10.1, 9.9, 10.05, 9.95, 10}
	double := []float64{20, 20.2, 19.8, 20.1, 19.9, 20}
	cases := []struct {
		better  string
		other   []float64
		verdict string
		coeff   float64
	}{
		{BetterLower, double, VerdictSlower, 2},    // twice the time
		{BetterHigher, double, VerdictFaster, 0.5}, // twice the throughput
		{BetterLower, base, VerdictSame, 1},
		{"sideways", double, VerdictHigher, 2},
	}
	for _, c := range cases {
		r := Compare(base, c.other, true, c.better, Options{})
		if r.Verdict != c.verdict || !near(r.Coefficient, c.coeff, 1e-12) {
			t.Errorf("better=%s: verdict %q coefficient %v, want %q %v", c.better, r.Verdict, r.Coefficient, c.verdict, c.coeff)
		}
	}
	if r := Compare(base, double, true, "sideways", Options{}); r.Note == "" {
		t.Error("unknown direction must be explained in Note")
	}
}

// TestComparePairedUsesPairs: platforms run side by side share a slow
// drift of the machine. Resampling pairs together sees through the drift
// and detects a 3 % slowdown that independent resampling cannot.
func TestComparePairedUsesPairs(t *testing.T) {
	const n = 20
	drift := draw(9, n, normal(0, 1))
	jitter := draw(10, 2*n, normal(0, 0.002))
	base := make([]float64, n)
	other := make([]float64, n)
	for i := range base {
		machine := 100 * math.Exp(0.2*drift[i]) // ±20 % from run to run
		base[i] = machine * (1 + jitter[i])
		other[i] = 1.03 * machine * (1 + jitter[n+i])
	}
	p := Compare(base, other, true, BetterLower, Options{Seed: 3})
	u := Compare(base, other, false, BetterLower, Options{Seed: 3})
	t.Logf("paired CI [%.4f, %.4f], unpaired CI [%.4f, %.4f]", p.CILow, p.CIHigh, u.CILow, u.CIHigh)
	if !p.Paired || p.Verdict != VerdictSlower || p.CILow < 1.01 || p.CIHigh > 1.05 {
		t.Errorf("paired: %+v, want slower with CI around 1.03", p)
	}
	if u.Paired || u.Verdict != VerdictSame {
		t.Errorf("unpaired: %+v, want no detectable difference", u)
	}
	// Unequal lengths fall back to independent resampling.
	if r := Compare(base, other[:n-1], true, BetterLower, Options{}); r.Paired {
		t.Error("paired with unequal lengths must resample independently")
	}
}

func TestCompareDegenerate(t *testing.T) {
	cases := []struct {
		name        string
		base, other []float64
		valid       bool
	}{
		{"empty", nil, []float64{1, 2, 3}, false},
		{"two values", []float64{1, 2}, []float64{1, 2}, true},
		{"zero median", []float64{0, 0, 0, 1}, []float64{1, 2, 3}, false},
		{"zeros in the tail", []float64{0, 1, 1, 1, 1}, []float64{1, 1, 1, 2, 0}, true},
		{"non-finite pair dropped", []float64{math.NaN(), 1, 2}, []float64{5, 1, 2}, true},
	}
	for _, c := range cases {
		r := Compare(c.base, c.other, true, BetterLower, Options{Resamples: 500})
		if r.Valid != c.valid {
			t.Errorf("%s: valid=%v, want %v (%+v)", c.name, r.Valid, c.valid, r)
		}
		if r.Verdict != VerdictInsufficient || r.CIValid || r.Note == "" {
			t.Errorf("%s: want %q with a note, got %+v", c.name, VerdictInsufficient, r)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("%s: JSON: %v", c.name, err)
		}
	}
}

// FuzzCompareWarnings: Compare and Warnings never panic and Compare's
// result always encodes as JSON, whatever the input.
func FuzzCompareWarnings(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, true, "lower")
	f.Add([]byte{0, 0, 0, 255, 255, 255}, false, "higher")
	f.Add([]byte{}, true, "")
	f.Fuzz(func(t *testing.T, data []byte, paired bool, better string) {
		// Bytes become values spread over many magnitudes, with zeros,
		// negatives and NaN/Inf among them.
		special := []float64{0, -1, math.NaN(), math.Inf(1), math.MaxFloat64, 5e-324}
		var base, other []float64
		for i, b := range data {
			v := math.Ldexp(float64(b%16+1), int(b/16)*8-60)
			if b%23 == 0 {
				v = special[int(b)%len(special)]
			}
			if i%2 == 0 {
				base = append(base, v)
			} else {
				other = append(other, v)
			}
		}
		r := Compare(base, other, paired, better, Options{Resamples: 50})
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("JSON: %v (%+v)", err, r)
		}
		if r.CIValid && !(r.CILow <= r.CIHigh) {
			t.Fatalf("CI out of order: %+v", r)
		}
		_ = Warnings(base, better, WarnOptions{})
	})
}
