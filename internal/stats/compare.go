package stats

import (
	"fmt"
	"math"
)

// Directions of a metric, the same strings as sample.Higher / sample.Lower.
const (
	BetterHigher = "higher"
	BetterLower  = "lower"
)

// Verdicts of a comparison.
const (
	// VerdictSame: the confidence interval of the ratio contains 1.
	VerdictSame = "no detectable difference"
	// VerdictFaster: the other platform is better than the baseline
	// (lower for a lower-is-better metric, higher for higher-is-better).
	VerdictFaster = "faster"
	// VerdictSlower: the other platform is worse than the baseline.
	VerdictSlower = "slower"
	// VerdictHigher and VerdictLower are used instead of faster/slower
	// when the metric's direction is unknown.
	VerdictHigher = "higher"
	VerdictLower  = "lower"
	// VerdictInsufficient: no interval could be computed (too few values,
	// or medians that are zero or negative); see Ratio.Note.
	VerdictInsufficient = "insufficient data"
)

// Ratio compares the values of one metric on some platform (other) with a
// baseline platform (base, normally native).
type Ratio struct {
	Better string `json:"better"`
	// Paired is true when pairs (base[i], other[i]) were resampled
	// together; it is false when pairing was asked for but the samples
	// had different lengths.
	Paired      bool    `json:"paired"`
	BaseN       int     `json:"base_n"`
	OtherN      int     `json:"other_n"`
	BaseMedian  float64 `json:"base_median"`
	OtherMedian float64 `json:"other_median"`

	// Ratio is median(other)/median(base); meaningful only when Valid
	// (both medians > 0).
	Ratio float64 `json:"ratio"`
	Valid bool    `json:"valid"`
	// CILow and CIHigh bound the percentile-bootstrap interval of Ratio at
	// level Confidence; meaningful only when CIValid.
	CILow      float64 `json:"ci_low"`
	CIHigh     float64 `json:"ci_high"`
	CIValid    bool    `json:"ci_valid"`
	Confidence float64 `json:"confidence"`

	// Overhead is the studies' performance overhead Op = |Pm − Pb| / Pb
	// with Pm = OtherMedian and Pb = BaseMedian, as a fraction (multiply
	// by 100 for the studies' percent). It has no sign: Verdict tells the
	// direction.
	Overhead float64 `json:"overhead"`
	// Coefficient is the studies' performance coefficient, oriented so
	// that 1 means unchanged, < 1 better than the baseline and > 1 worse
	// whatever the metric: other/base for a lower-is-better metric (time,
	// latency) and base/other for a higher-is-better one (throughput).
	// For an unknown direction it is other/base.
	Coefficient float64 `json:"coefficient"`

	// Verdict is VerdictSame when the interval contains 1, otherwise
	// VerdictFaster or VerdictSlower oriented by Better (VerdictHigher or
	// VerdictLower when Better is unknown), or VerdictInsufficient.
	Verdict string `json:"verdict"`
	// Note explains an insufficient verdict or an unknown direction.
	Note string `json:"note,omitempty"`
}

// Compare compares other with base for a metric whose better direction is
// better ("higher" or "lower"). When paired is true and both samples have
// the same length, repetition i of both is treated as one pair (the runner
// interleaves platforms, so they ran side by side and share slow drifts)
// and pair indices are resampled together; otherwise the samples are
// resampled independently. Non-finite values are dropped (in paired mode,
// the whole pair).
func Compare(base, other []float64, paired bool, better string, opt Options) Ratio {
	opt = opt.normalized()
	if paired && len(base) == len(other) {
		base, other = finitePairs(base, other)
	} else {
		paired = false
		base, _ = finiteValues(base)
		other, _ = finiteValues(other)
	}
	r := Ratio{
		Better:      better,
		Paired:      paired,
		BaseN:       len(base),
		OtherN:      len(other),
		BaseMedian:  Median(base),
		OtherMedian: Median(other),
		Confidence:  opt.Confidence,
	}
	if better != BetterHigher && better != BetterLower {
		r.Note = fmt.Sprintf("unknown better direction %q: verdict is higher/lower, coefficient is other/base", better)
	}

	switch {
	case len(base) == 0 || len(other) == 0:
		r.Verdict = VerdictInsufficient
		r.Note = "no values to compare"
		return r
	case !(r.BaseMedian > 0 && r.OtherMedian > 0):
		r.Verdict = VerdictInsufficient
		r.Note = "a median is zero or negative: the ratio is undefined"
		return r
	}
	r.Valid = true
	r.Ratio = saturate(r.OtherMedian / r.BaseMedian)
	r.Overhead = saturate(math.Abs(r.OtherMedian/r.BaseMedian - 1))
	r.Coefficient = r.Ratio
	if better == BetterHigher {
		r.Coefficient = saturate(r.BaseMedian / r.OtherMedian)
	}

	lo, hi, ok := bootstrapRatioCI(base, other, paired, opt)
	if !ok {
		r.Verdict = VerdictInsufficient
		if len(base) < MinCI || len(other) < MinCI {
			r.Note = fmt.Sprintf("need at least %d values on each side for a confidence interval", MinCI)
		} else {
			r.Note = "values include zeros or negatives: the ratio interval is undefined"
		}
		return r
	}
	r.CILow, r.CIHigh, r.CIValid = lo, hi, true
	if len(base) < MinVerdict || len(other) < MinVerdict {
		// With so few values the percentile bootstrap's interval shrinks to
		// about the range of the pair ratios: three pairs that happen to
		// fall on one side of 1 (a one-in-four event under no difference)
		// would be called a difference.
		r.Verdict = VerdictInsufficient
		r.Note = fmt.Sprintf("need at least %d repetitions on each side for a verdict (the interval is shown, but too few values make it too narrow)", MinVerdict)
		return r
	}
	r.Verdict = verdict(lo, hi, better)
	return r
}

// verdict orients a ratio interval [lo, hi] of other/base.
func verdict(lo, hi float64, better string) string {
	var up bool // other is significantly higher than base
	switch {
	case lo <= 1 && 1 <= hi:
		return VerdictSame
	case lo > 1:
		up = true
	}
	switch better {
	case BetterHigher:
		if up {
			return VerdictFaster
		}
		return VerdictSlower
	case BetterLower:
		if up {
			return VerdictSlower
		}
		return VerdictFaster
	}
	if up {
		return VerdictHigher
	}
	return VerdictLower
}

// finitePairs keeps the pairs (a[i], b[i]) where both are finite; a and b
// must have equal length.
func finitePairs(a, b []float64) (fa, fb []float64) {
	for i := range a {
		if isFinite(a[i]) && isFinite(b[i]) {
			fa = append(fa, a[i])
			fb = append(fb, b[i])
		}
	}
	return fa, fb
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
