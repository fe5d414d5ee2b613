package stats

import (
	"fmt"
	"math"
	"slices"
)

// Defaults of WarnOptions, used when the corresponding field is zero.
const (
	DefaultCVThreshold = 0.10
	DefaultColdSDs     = 3.0
	DefaultDriftAlpha  = 0.01
	DefaultDriftMinN   = 8
	// maxTrendN bounds the (quadratic) Mann–Kendall test: longer series
	// are reduced to medians of consecutive blocks first.
	maxTrendN = 5000
	// coldFloor is the smallest robust SD used by the cold-start check, as
	// a fraction of the median, so that quantised data with zero spread
	// does not flag trivial differences.
	coldFloor = 0.01
)

// WarnOptions sets the thresholds of Warnings; the zero value means the
// defaults.
type WarnOptions struct {
	// CVThreshold: warn when the coefficient of variation exceeds it
	// (a fraction; default 0.10).
	CVThreshold float64
	// ColdSDs: warn when the first run is worse than the median of the
	// others by more than this many robust standard deviations
	// (default 3).
	ColdSDs float64
	// DriftAlpha: warn when the Mann–Kendall trend test has a p-value
	// below it (default 0.01).
	DriftAlpha float64
	// DriftMinN: the trend test needs at least this many values
	// (default 8; values below 3 mean the default).
	DriftMinN int
	// Warmups is how many warm-up repetitions ran before the values (the
	// cold-start advice depends on it: add one, or more).
	Warmups int
}

func (o WarnOptions) normalized() WarnOptions {
	if !(o.CVThreshold > 0) {
		o.CVThreshold = DefaultCVThreshold
	}
	if !(o.ColdSDs > 0) {
		o.ColdSDs = DefaultColdSDs
	}
	if !(o.DriftAlpha > 0 && o.DriftAlpha < 1) {
		o.DriftAlpha = DefaultDriftAlpha
	}
	if o.DriftMinN < 3 {
		o.DriftMinN = DefaultDriftMinN
	}
	return o
}

// Warnings looks for signs that the repetitions of one metric (values, in
// the order they ran) are not a stable sample, and returns one short
// sentence per problem found (nil when none):
//
//   - cold start: the first run is worse than the median of the others by
//     more than ColdSDs robust standard deviations (1.4826·MAD of the
//     others, or 1.2533·mean absolute deviation when the MAD is 0, and at
//     least 1 % of their median); needs 4 values. "Worse" follows better;
//     with an unknown direction either side counts.
//   - noise: the coefficient of variation exceeds CVThreshold.
//   - drift: a monotone trend over the run order, by the Mann–Kendall test
//     (normal approximation with tie correction) at p < DriftAlpha; needs
//     DriftMinN values.
//
// Non-finite values are dropped first.
func Warnings(values []float64, better string, opt WarnOptions) []string {
	opt = opt.normalized()
	xs, _ := finiteValues(values)
	var out []string
	if w := coldStart(xs, better, opt.ColdSDs, opt.Warmups); w != "" {
		out = append(out, w)
	}
	if len(xs) >= 2 {
		scaled, _ := scaleDown(xs)
		mean, sd := meanStdev(scaled)
		if mean != 0 && sd/math.Abs(mean) > opt.CVThreshold {
			out = append(out, fmt.Sprintf("noisy: coefficient of variation %.1f%% is above %.0f%%",
				100*sd/math.Abs(mean), 100*opt.CVThreshold))
		}
	}
	if len(xs) >= opt.DriftMinN {
		if w := drift(xs, better, opt.DriftAlpha); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// coldStart returns a warning when xs[0] is an outlier on the bad side of
// the others.
func coldStart(xs []float64, better string, sds float64, warmups int) string {
	if len(xs) < 4 {
		return ""
	}
	first := xs[0]
	scaled, exp := scaleDown(xs[1:])
	med := Median(scaled)
	dev := make([]float64, len(scaled))
	for i, x := range scaled {
		dev[i] = math.Abs(x - med)
	}
	rsd := 1.4826 * Median(dev)
	if rsd == 0 {
		var sum float64
		for _, d := range dev {
			sum += d
		}
		rsd = 1.253314 * sum / float64(len(dev))
	}
	rsd = max(rsd, coldFloor*math.Abs(med))
	if rsd == 0 {
		return "" // the others are all exactly 0
	}
	z := (math.Ldexp(first, -exp) - med) / rsd
	var bad bool
	switch better {
	case BetterLower:
		bad = z > sds
	case BetterHigher:
		bad = z < -sds
	default:
		bad = math.Abs(z) > sds
	}
	if !bad {
		return ""
	}
	word := "slower" // worse, in the faster/slower words of Compare
	if better != BetterLower && better != BetterHigher {
		word = "different"
	}
	advice := "add a warm-up run"
	if warmups > 0 {
		advice = fmt.Sprintf("it ran after %d warm-up repetition(s): raise --warmup", warmups)
	}
	return fmt.Sprintf("cold start: the first run (%.4g) is much %s than the median of the others (%.4g, %.1f robust SDs away); %s",
		first, word, saturate(math.Ldexp(med, exp)), math.Abs(z), advice)
}

// drift returns a warning when xs (in run order) has a monotone trend.
func drift(xs []float64, better string, alpha float64) string {
	_, z, p := MannKendall(xs)
	if !(p < alpha) || z == 0 {
		return ""
	}
	third := max(len(xs)/3, 1)
	head, tail := Median(xs[:third]), Median(xs[len(xs)-third:])
	dir := "rise"
	if z < 0 {
		dir = "fall"
	}
	consequence := ""
	switch {
	case better == BetterLower && z > 0, better == BetterHigher && z < 0:
		consequence = ": later runs are slower"
	case better == BetterLower && z < 0, better == BetterHigher && z > 0:
		consequence = ": later runs are faster"
	}
	return fmt.Sprintf("drift: values %s steadily over the run order (Mann-Kendall p=%.2g; median of the first third %.4g, of the last third %.4g)%s",
		dir, p, head, tail, consequence)
}

// MannKendall runs the Mann–Kendall test for a monotone trend on xs (in
// order, finite values): S = Σ_{i<j} sign(x_j − x_i), its variance under
// the no-trend hypothesis with the tie correction
// Var(S) = [n(n−1)(2n+5) − Σ t(t−1)(2t+5)]/18 (t: sizes of groups of equal
// values), the continuity-corrected normal score z = (S ∓ 1)/√Var(S) and
// the two-sided p-value. A positive S means an upward trend. Series longer
// than 5000 are first reduced to medians of consecutive blocks. With fewer
// than 3 values, or all values equal, z is 0 and p is 1.
func MannKendall(xs []float64) (s, z, p float64) {
	xs = thin(xs, maxTrendN)
	n := len(xs)
	if n < 3 {
		return 0, 0, 1
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			switch {
			case xs[j] > xs[i]:
				s++
			case xs[j] < xs[i]:
				s--
			}
		}
	}
	nf := float64(n)
	v := nf * (nf - 1) * (2*nf + 5)
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	for i := 0; i < n; {
		j := i
		for j < n && sorted[j] == sorted[i] {
			j++
		}
		t := float64(j - i)
		v -= t * (t - 1) * (2*t + 5)
		i = j
	}
	v /= 18
	if v <= 0 {
		return s, 0, 1
	}
	switch {
	case s > 0:
		z = (s - 1) / math.Sqrt(v)
	case s < 0:
		z = (s + 1) / math.Sqrt(v)
	}
	return s, z, math.Erfc(math.Abs(z) / math.Sqrt2)
}

// thin replaces xs, when longer than limit, by the medians of at most limit
// consecutive blocks of (nearly) equal size, keeping the order.
func thin(xs []float64, limit int) []float64 {
	if len(xs) <= limit {
		return xs
	}
	out := make([]float64, limit)
	for b := range out {
		lo, hi := b*len(xs)/limit, (b+1)*len(xs)/limit
		out[b] = Median(xs[lo:hi])
	}
	return out
}
