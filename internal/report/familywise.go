package report

import (
	"math"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/stats"
)

// CompareCellsFamilywise is CompareCells with the confidence level of
// every cell's interval raised (Bonferroni) so that, over all k paired
// cells together, the chance of flagging any cell that did not change is
// at most 1 − opt.Confidence (5% by default) instead of about that much
// per cell. CompareCells at 95% flags about 1 unchanged cell in 20, so a
// comparison of dozens of cells nearly always reports some change that
// is only noise; this variant reports a change only when it stands out of
// the noise of the whole set. The bootstrap gets enough resamples for the
// narrower tails (at most stats.MaxResamples).
func CompareCellsFamilywise(a, b []Cell, opt stats.Options) []Change {
	k := len(CompareCells(a, b, stats.Options{Resamples: 1}))
	if k <= 1 {
		return CompareCells(a, b, opt)
	}
	conf := opt.Confidence
	if !(conf > 0 && conf < 1) {
		conf = stats.DefaultConfidence
	}
	alpha := (1 - conf) / float64(k)
	opt.Confidence = 1 - alpha
	// About 20 resamples in each tail keep the percentile interval's ends
	// stable.
	need := int(math.Ceil(40 / alpha))
	if opt.Resamples < need {
		opt.Resamples = min(need, stats.MaxResamples)
	}
	return CompareCells(a, b, opt)
}

// Familywise returns o with every cell's ratio interval widened
// (Bonferroni) over the k cells of samples that are compared with the
// baseline, and k: read together, the chance that any of the k cells is
// called different when no platform differs is then at most 1 −
// confidence (5%), where plain per-cell 95% intervals call about one in
// twenty. An A/A run of 20 cells (a platform against itself) should call
// none; with per-cell intervals it calls at least one in about two runs
// of three (1 − 0.95^20).
func Familywise(samples []sample.Sample, o Options) (Options, int) {
	probe := o
	probe.Stats = stats.Options{Resamples: 1, Seed: 1}
	k := 0
	for _, c := range Cells(samples, probe) {
		if c.Compared() {
			k++
		}
	}
	if k <= 1 {
		return o, k
	}
	conf := o.Stats.Confidence
	if !(conf > 0 && conf < 1) {
		conf = stats.DefaultConfidence
	}
	alpha := (1 - conf) / float64(k)
	o.Stats.Confidence = 1 - alpha
	if need := int(math.Ceil(40 / alpha)); o.Stats.Resamples < need {
		o.Stats.Resamples = min(need, stats.MaxResamples)
	}
	return o, k
}

// Compared says whether the cell was compared with the baseline: it has a
// ratio interval and a verdict of its own (not the baseline itself, not a
// startup phase that means something else on each platform). These are
// the cells a family-wise correction counts.
func (c Cell) Compared() bool {
	return c.RatioValid && c.Verdict != "" && c.Verdict != "baseline" && c.Verdict != VerdictNoPhaseVerdict
}

// FamilywiseMinReps is the fewest repetitions per cell with which
// family-wise intervals over k cells can hold their level: the bootstrap
// interval of a median never reaches past the repetitions' own ratios, so
// when all n fall on one side of 1, which happens to a cell that did not
// change with probability 2^(1−n), the cell is called different however
// wide the interval is asked to be. Over k cells at 1 − confidence (5%)
// that chance must stay below (1 − confidence) / k: n ≥ 1 + log2(k /
// (1 − confidence)), 10 for 20 cells.
func FamilywiseMinReps(k int, confidence float64) int {
	if !(confidence > 0 && confidence < 1) {
		confidence = stats.DefaultConfidence
	}
	if k < 1 {
		k = 1
	}
	return int(math.Ceil(1 + math.Log2(float64(k)/(1-confidence))))
}
