package stats

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// The bootstrap here is the plain percentile bootstrap (Efron): draw
// Options.Resamples resamples with replacement of the same size as the
// data, compute the statistic on each, and take the (1−c)/2 and (1+c)/2
// type-7 quantiles of those statistics as the interval at confidence c.

// newRand returns the generator of one bootstrap. The second PCG word is a
// fixed constant so that the stream depends on the seed alone.
func newRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
}

// percentileCI returns the percentile interval of the bootstrap statistics
// stats (sorted in place).
func percentileCI(stats []float64, confidence float64) (lo, hi float64) {
	slices.Sort(stats)
	alpha := (1 - confidence) / 2
	return Quantile(stats, alpha), Quantile(stats, 1-alpha)
}

// A resample's median is found without sorting it: the data are sorted
// once, each resample only counts how often each rank was drawn, and the
// median's ranks are found by walking the counts, in O(n) per resample.

// medianOfCounts returns the type-7 median of the multiset holding
// counts[i] copies of sorted[i]; the counts add up to len(sorted).
func medianOfCounts(sorted []float64, counts []int) float64 {
	n := len(sorted)
	h := float64(n-1) * 0.5
	k := int(h) // the median lies between the values of ranks k and k+1
	var lo, hi float64
	seen := 0
	found := false
	for i, c := range counts {
		if c == 0 {
			continue
		}
		seen += c
		if !found && seen > k {
			lo, found = sorted[i], true
		}
		if seen > k+1 || seen == n {
			hi = sorted[i]
			break
		}
	}
	if h == float64(k) {
		return lo
	}
	return lerp(lo, hi, h-float64(k))
}

// resampleMedian draws a resample (with replacement, same size) of sorted
// and returns its median; counts is scratch space of the same length.
func resampleMedian(sorted []float64, counts []int, r *rand.Rand) float64 {
	clear(counts)
	for range sorted {
		counts[r.IntN(len(sorted))]++
	}
	return medianOfCounts(sorted, counts)
}

// bootstrapMedianCI returns the percentile-bootstrap interval of the
// median of xs (finite values). ok is false when len(xs) < MinCI.
func bootstrapMedianCI(xs []float64, opt Options) (lo, hi float64, ok bool) {
	if len(xs) < MinCI {
		return 0, 0, false
	}
	opt = opt.normalized()
	r := newRand(opt.Seed)
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	counts := make([]int, len(xs))
	meds := make([]float64, opt.Resamples)
	for b := range meds {
		meds[b] = resampleMedian(sorted, counts, r)
	}
	lo, hi = percentileCI(meds, opt.Confidence)
	return lo, hi, true
}

// bootstrapRatioCI returns the percentile-bootstrap interval of
// median(other)/median(base). With paired set, base and other must have
// equal length and index i of both is drawn together; otherwise each is
// resampled independently. ok is false when either sample is smaller than
// MinCI or some resample has a median <= 0 (the ratio is then undefined).
func bootstrapRatioCI(base, other []float64, paired bool, opt Options) (lo, hi float64, ok bool) {
	if len(base) < MinCI || len(other) < MinCI || (paired && len(base) != len(other)) {
		return 0, 0, false
	}
	opt = opt.normalized()
	r := newRand(opt.Seed)
	bSorted, bRank := sortWithRanks(base)
	oSorted, oRank := sortWithRanks(other)
	bCounts := make([]int, len(base))
	oCounts := make([]int, len(other))
	ratios := make([]float64, opt.Resamples)
	for b := range ratios {
		var mb, mo float64
		if paired {
			clear(bCounts)
			clear(oCounts)
			for range base {
				j := r.IntN(len(base))
				bCounts[bRank[j]]++
				oCounts[oRank[j]]++
			}
			mb, mo = medianOfCounts(bSorted, bCounts), medianOfCounts(oSorted, oCounts)
		} else {
			mb = resampleMedian(bSorted, bCounts, r)
			mo = resampleMedian(oSorted, oCounts, r)
		}
		if !(mb > 0 && mo > 0) {
			return 0, 0, false
		}
		ratios[b] = saturate(mo / mb)
	}
	lo, hi = percentileCI(ratios, opt.Confidence)
	return lo, hi, true
}

// sortWithRanks returns xs sorted and, for each index i of xs, the
// position of xs[i] in sorted.
func sortWithRanks(xs []float64) (sorted []float64, rank []int) {
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	sorted = make([]float64, len(xs))
	rank = make([]int, len(xs))
	for pos, i := range order {
		sorted[pos] = xs[i]
		rank[i] = pos
	}
	return sorted, rank
}

// CIWithin is the stopping rule of `--reps auto`: it reports whether the
// bootstrap confidence interval of the median of values lies within
// ±relHalfWidth (a fraction: 0.02 for ±2 %) of the median. halfWidth is
// the interval's relative half-width, max(median−low, high−median)/|median|
// (the larger side, since the interval need not be symmetric). With fewer
// than MinCI finite values, or a zero median, ok is false and halfWidth is
// +Inf: the interval is undefined, so more repetitions are needed.
func CIWithin(values []float64, relHalfWidth float64, opt Options) (ok bool, halfWidth float64) {
	xs, _ := finiteValues(values)
	lo, hi, valid := bootstrapMedianCI(xs, opt)
	med := Median(xs)
	if !valid || med == 0 {
		return false, math.Inf(1)
	}
	halfWidth = max(med-lo, hi-med) / math.Abs(med)
	return halfWidth <= relHalfWidth, halfWidth
}
