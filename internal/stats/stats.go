// Package stats turns repeated measurements into the numbers isobench
// reports: robust summaries with bootstrap confidence intervals, comparisons
// against a baseline platform (ratio, overhead, performance coefficient and
// a verdict), the normalised overall score of the studies, the stopping rule
// of `--reps auto` and warnings about noisy or drifting runs.
//
// Everything here is pure: no I/O, no global state, and every random choice
// comes from a generator seeded by the caller (Options.Seed), so the same
// input and seed always give the same output. Inputs are never trusted:
// non-finite values are dropped and counted, degenerate cases (too few
// values, zero medians) are reported through validity flags, and no field
// of a result struct is ever NaN or ±Inf (overflow saturates at
// ±MaxFloat64), so results always encode as JSON.
package stats

import (
	"math"
	"slices"
)

// Defaults of Options, used when the corresponding field is zero.
const (
	DefaultConfidence = 0.95
	DefaultResamples  = 2000
	// MaxResamples bounds Options.Resamples so that hostile input cannot
	// make a summary allocate without limit.
	MaxResamples = 100000
	// MinCI is the smallest number of values for which a bootstrap
	// confidence interval is computed; below it the interval is undefined.
	MinCI = 3
	// MinVerdict is the smallest number of values on each side for which
	// Compare gives a verdict other than "insufficient data".
	MinVerdict = 5
	// OutlierThreshold is the Iglewicz–Hoaglin cut-off on |modified z|.
	OutlierThreshold = 3.5
)

// Options controls the bootstrap. The zero value means the defaults
// (95 % confidence, 2000 resamples, seed 0).
type Options struct {
	// Confidence is the two-sided confidence level in (0, 1); anything
	// else means DefaultConfidence.
	Confidence float64
	// Resamples is the number of bootstrap resamples; <= 0 means
	// DefaultResamples, and values above MaxResamples are capped.
	Resamples int
	// Seed makes the bootstrap deterministic: the same values and seed
	// always give the same interval.
	Seed int64
}

// normalized returns o with defaults filled in and limits applied.
func (o Options) normalized() Options {
	if !(o.Confidence > 0 && o.Confidence < 1) {
		o.Confidence = DefaultConfidence
	}
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.Resamples > MaxResamples {
		o.Resamples = MaxResamples
	}
	return o
}

// Summary describes one set of repeated measurements of one metric.
//
// Percentiles (Median, P5, P95) use linear interpolation between order
// statistics, Hyndman & Fan type 7 (the default of R and NumPy): for sorted
// values x[0..n-1] the p-quantile is x[h] interpolated at h = (n-1)·p.
type Summary struct {
	// N is the number of finite values summarised.
	N int `json:"n"`
	// Dropped counts input values ignored because they were NaN or ±Inf.
	Dropped int `json:"dropped,omitempty"`

	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	// Stdev is the sample standard deviation (divisor n-1); 0 when N < 2.
	Stdev float64 `json:"stdev"`
	// CV is the coefficient of variation Stdev/|Mean|; meaningful only
	// when CVValid (N >= 2 and Mean != 0), otherwise 0.
	CV      float64 `json:"cv"`
	CVValid bool    `json:"cv_valid"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	P5      float64 `json:"p5"`
	P95     float64 `json:"p95"`

	// CILow and CIHigh bound the percentile-bootstrap confidence interval
	// of the median at level Confidence. They are meaningful only when
	// CIValid, which needs N >= MinCI; otherwise they are 0.
	CILow      float64 `json:"ci_low"`
	CIHigh     float64 `json:"ci_high"`
	CIValid    bool    `json:"ci_valid"`
	Confidence float64 `json:"confidence"`

	// MAD is the median absolute deviation from the median (unscaled).
	MAD float64 `json:"mad"`
	// Outliers lists the indices (into the slice given to Summarize) of
	// values whose modified z-score exceeds OutlierThreshold; see
	// Outliers. The values themselves stay in every statistic above.
	Outliers []int `json:"outliers,omitempty"`
}

// Summarize describes values (in any order). Non-finite values are dropped
// and counted in Dropped; the bootstrap interval of the median uses opt.
func Summarize(values []float64, opt Options) Summary {
	opt = opt.normalized()
	xs, idx := finiteValues(values)
	s := Summary{N: len(xs), Dropped: len(values) - len(xs), Confidence: opt.Confidence}
	if s.N == 0 {
		return s
	}

	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	s.Median = Quantile(sorted, 0.5)
	s.P5 = Quantile(sorted, 0.05)
	s.P95 = Quantile(sorted, 0.95)

	// Moments and deviations are computed on values scaled by a power of
	// two (exact) so that sums and squares cannot overflow; the results
	// are scaled back with saturation at ±MaxFloat64.
	scaled, exp := scaleDown(xs)
	mean, sd := meanStdev(scaled)
	s.Mean = saturate(math.Ldexp(mean, exp))
	s.Stdev = saturate(math.Ldexp(sd, exp))
	if s.N >= 2 && mean != 0 {
		s.CV = saturate(sd / math.Abs(mean))
		s.CVValid = true
	}
	scaledMAD, out := outliers(scaled)
	s.MAD = saturate(math.Ldexp(scaledMAD, exp))
	for _, i := range out {
		s.Outliers = append(s.Outliers, idx[i])
	}

	if lo, hi, ok := bootstrapMedianCI(xs, opt); ok {
		s.CILow, s.CIHigh, s.CIValid = lo, hi, true
	}
	return s
}

// Quantile returns the p-quantile (0 <= p <= 1) of sorted, which must be in
// ascending order and finite, by linear interpolation (type 7). It returns
// 0 for an empty slice; p outside [0, 1] is clamped.
func Quantile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if !(p > 0) { // also catches NaN
		return sorted[0]
	}
	if p >= 1 {
		return sorted[n-1]
	}
	h := float64(n-1) * p
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return lerp(sorted[lo], sorted[lo+1], h-float64(lo))
}

// Median returns the median of values (any order, finite), 0 when empty.
// values is not modified.
func Median(values []float64) float64 {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	return Quantile(sorted, 0.5)
}

// Outliers returns the indices of the values whose modified z-score
// (Iglewicz & Hoaglin 1993) exceeds OutlierThreshold in absolute value:
//
//	M_i = 0.6745 · (x_i − median) / MAD
//
// where MAD is the median absolute deviation from the median. When MAD is
// 0 (more than half the values are equal) the mean absolute deviation is
// used instead, M_i = (x_i − median) / (1.253314 · MeanAD); when that is 0
// too all values are equal and none is an outlier. Non-finite values are
// ignored (never flagged).
func Outliers(values []float64) []int {
	xs, idx := finiteValues(values)
	scaled, _ := scaleDown(xs)
	_, out := outliers(scaled)
	for k, i := range out {
		out[k] = idx[i]
	}
	return out
}

// outliers returns the MAD of xs and the indices of its outliers. xs must
// be finite and scaled so that differences cannot overflow.
func outliers(xs []float64) (mad float64, out []int) {
	if len(xs) == 0 {
		return 0, nil
	}
	med := Median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - med)
	}
	mad = Median(dev)
	scale := mad / 0.6745
	if mad == 0 {
		var sum float64
		for _, d := range dev {
			sum += d
		}
		scale = 1.253314 * sum / float64(len(dev))
	}
	if scale == 0 {
		return mad, nil
	}
	for i, d := range dev {
		if d/scale > OutlierThreshold {
			out = append(out, i)
		}
	}
	return mad, out
}

// finiteValues returns the finite values and their indices in values.
func finiteValues(values []float64) (xs []float64, idx []int) {
	xs = make([]float64, 0, len(values))
	idx = make([]int, 0, len(values))
	for i, v := range values {
		if isFinite(v) {
			xs = append(xs, v)
			idx = append(idx, i)
		}
	}
	return xs, idx
}

// scaleDown divides xs by 2^exp, exp chosen so that every |x| < 1; the
// scaling is exact for normal numbers. x = Ldexp(scaled, exp).
func scaleDown(xs []float64) (scaled []float64, exp int) {
	var maxAbs float64
	for _, x := range xs {
		maxAbs = max(maxAbs, math.Abs(x))
	}
	if maxAbs == 0 {
		return slices.Clone(xs), 0
	}
	_, exp = math.Frexp(maxAbs) // maxAbs = frac·2^exp, 0.5 <= frac < 1
	scaled = make([]float64, len(xs))
	for i, x := range xs {
		scaled[i] = math.Ldexp(x, -exp)
	}
	return scaled, exp
}

// meanStdev returns the mean and sample standard deviation (0 when fewer
// than two values) with a two-pass algorithm.
func meanStdev(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// lerp interpolates between a <= b at fraction f in [0, 1] without
// overflowing, and never leaves [a, b].
func lerp(a, b, f float64) float64 {
	if f <= 0 || a == b {
		return a
	}
	v := a*(1-f) + b*f
	return min(max(v, a), b)
}

// saturate maps ±Inf to ±MaxFloat64 and NaN to 0, so that results always
// encode as JSON.
func saturate(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return 0
	case math.IsInf(x, 1):
		return math.MaxFloat64
	case math.IsInf(x, -1):
		return -math.MaxFloat64
	}
	return x
}
