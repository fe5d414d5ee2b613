package stats

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestMannKendallHandComputed(t *testing.T) {
	cases := []struct {
		xs      []float64
		s, z, p float64
	}{
		// S = 45, Var = 10·9·25/18 = 125, z = 44/√125.
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 45, 3.9354796403996297, 8.303070332644999e-05},
		{[]float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, -45, -3.9354796403996297, 8.303070332644999e-05},
		// Ties: S = 8, Var = (5·4·15 − 2·2·1·9)/18, z = 7/√Var.
		{[]float64{1, 1, 2, 2, 3}, 8, 1.8278153875348273, 0.06757726305587058},
		{[]float64{4, 4, 4, 4}, 0, 0, 1},
		{[]float64{1, 2}, 0, 0, 1},
	}
	for _, c := range cases {
		s, z, p := MannKendall(c.xs)
		if s != c.s || !near(z, c.z, 1e-12) || !near(p, c.p, 1e-12) {
			t.Errorf("MannKendall(%v) = %v %v %v, want %v %v %v", c.xs, s, z, p, c.s, c.z, c.p)
		}
	}
}

func hasWarning(ws []string, prefix string) bool {
	for _, w := range ws {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}

// TestDriftDetection: a linear trend plus noise is flagged in (nearly)
// every seeded trial; iid noise of the same size almost never (the test's
// false-positive rate is 1 %).
func TestDriftDetection(t *testing.T) {
	const trials, n = 200, 20
	trend, iid := 0, 0
	for i := range trials {
		r := rand.New(rand.NewPCG(uint64(i), 99))
		drifting := make([]float64, n)
		flat := make([]float64, n)
		for k := range n {
			// +0.4 % per run against 1 % noise: +8 % over the series.
			drifting[k] = 100*(1+0.004*float64(k)) + r.NormFloat64()
			flat[k] = 100 + r.NormFloat64()
		}
		if hasWarning(Warnings(drifting, BetterLower, WarnOptions{}), "drift:") {
			trend++
		}
		if hasWarning(Warnings(flat, BetterLower, WarnOptions{}), "drift:") {
			iid++
		}
	}
	t.Logf("drift flagged in %d/%d trending and %d/%d iid series", trend, trials, iid, trials)
	if float64(trend) < 0.95*trials {
		t.Errorf("trend detected in only %d/%d trials", trend, trials)
	}
	if float64(iid) > 0.04*trials {
		t.Errorf("iid noise flagged as drift in %d/%d trials", iid, trials)
	}

	rising := []float64{10, 10.2, 10.4, 10.5, 10.9, 11, 11.3, 11.4, 11.8, 12}
	ws := Warnings(rising, BetterLower, WarnOptions{})
	if len(ws) != 1 || !strings.Contains(ws[0], "rise") || !strings.Contains(ws[0], "later runs are slower") {
		t.Errorf("rising times: %q", ws)
	}
	ws = Warnings(rising, BetterHigher, WarnOptions{})
	if len(ws) != 1 || !strings.Contains(ws[0], "later runs are faster") {
		t.Errorf("rising throughput: %q", ws)
	}
	if ws := Warnings(rising[:7], BetterLower, WarnOptions{}); hasWarning(ws, "drift:") {
		t.Errorf("drift needs %d values, got a warning for 7: %q", DefaultDriftMinN, ws)
	}
}

func TestColdStart(t *testing.T) {
	rest := []float64{10, 10.1, 9.9, 10.05, 9.95, 10.02}
	with := func(first float64) []float64 { return append([]float64{first}, rest...) }

	// (The slow first run also makes the series noisy: both are said.)
	ws := Warnings(with(15), BetterLower, WarnOptions{})
	if !strings.HasPrefix(ws[0], "cold start:") || !strings.Contains(ws[0], "slower") || !hasWarning(ws, "noisy:") {
		t.Errorf("slow first time: %q", ws)
	}
	// A high first value is better for a throughput: no cold start.
	if ws := Warnings(with(15), BetterHigher, WarnOptions{}); hasWarning(ws, "cold start:") {
		t.Errorf("fast first throughput flagged: %q", ws)
	}
	if ws := Warnings(with(5), BetterHigher, WarnOptions{}); !hasWarning(ws, "cold start:") {
		t.Errorf("low first throughput not flagged: %q", ws)
	}
	if ws := Warnings(with(10.1), BetterLower, WarnOptions{}); len(ws) != 0 {
		t.Errorf("ordinary first value flagged: %q", ws)
	}
	if ws := Warnings([]float64{15, 10, 10}, BetterLower, WarnOptions{}); hasWarning(ws, "cold start:") {
		t.Errorf("cold start needs 4 values: %q", ws)
	}
	// Quantised data (zero spread in the others): within 1 % is not
	// flagged, far off is.
	flat := []float64{10, 10, 10, 10, 10}
	if ws := Warnings(append([]float64{10.05}, flat...), BetterLower, WarnOptions{}); len(ws) != 0 {
		t.Errorf("0.5%% off quantised data flagged: %q", ws)
	}
	if ws := Warnings(append([]float64{12}, flat...), BetterLower, WarnOptions{}); !hasWarning(ws, "cold start:") {
		t.Errorf("20%% off quantised data not flagged: %q", ws)
	}
	if ws := Warnings(with(5), "sideways", WarnOptions{}); !hasWarning(ws, "cold start:") {
		t.Errorf("unknown direction: either side counts: %q", ws)
	}
}

func TestNoiseWarning(t *testing.T) {
	noisy := draw(4, 12, normal(100, 20))
	ws := Warnings(noisy, BetterLower, WarnOptions{})
	if !hasWarning(ws, "noisy:") {
		t.Errorf("CV ≈ 20%% not flagged: %q", ws)
	}
	if ws := Warnings(noisy, BetterLower, WarnOptions{CVThreshold: 0.5}); hasWarning(ws, "noisy:") {
		t.Errorf("threshold 50%% still flagged: %q", ws)
	}
	if ws := Warnings(draw(5, 12, normal(100, 1)), BetterLower, WarnOptions{}); len(ws) != 0 {
		t.Errorf("clean data warned: %q", ws)
	}
	for _, vals := range [][]float64{nil, {1}, {0, 0, 0}, {math.NaN(), math.Inf(1)}} {
		if ws := Warnings(vals, BetterLower, WarnOptions{}); len(ws) != 0 {
			t.Errorf("%v: %q", vals, ws)
		}
	}
}

func TestThinKeepsTrend(t *testing.T) {
	xs := make([]float64, 12000)
	for i := range xs {
		xs[i] = float64(i % 7) // no trend
	}
	if _, _, p := MannKendall(xs); p < 0.01 {
		t.Errorf("periodic series flagged as trend, p=%v", p)
	}
	for i := range xs {
		xs[i] += float64(i) / 1000
	}
	if s, _, p := MannKendall(xs); s <= 0 || p > 1e-6 {
		t.Errorf("long trend lost by thinning: s=%v p=%v", s, p)
	}
	if got := thin([]float64{1, 2, 3, 4, 5, 6}, 3); len(got) != 3 || got[0] != 1.5 || got[2] != 5.5 {
		t.Errorf("thin = %v", got)
	}
}
