package fsbench

import (
	"math"
	"math/bits"
	"time"
)

// Histogram is a compact log-linear latency histogram: values below 16 ns
// are exact, above that every power of two is split into 16 equal buckets,
// so a bucket's width is at most 1/16 of its lower bound (percentiles are
// reported at the bucket's midpoint, within about 3%). Values are clamped at
// 2^41 ns (about 36 minutes). The mean and maximum are kept exactly.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    uint64 // ns
	max    uint64 // ns
}

const (
	histSubBits = 4
	histSub     = 1 << histSubBits
	histMaxBits = 41
	histBuckets = (histMaxBits-histSubBits)*histSub + histSub
)

func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	e := bits.Len64(v)
	if e > histMaxBits {
		return histBuckets - 1
	}
	shift := e - histSubBits - 1
	return (shift+1)*histSub + int((v>>shift)&(histSub-1))
}

// histBounds returns the lower bound and width of bucket i.
func histBounds(i int) (lo, width uint64) {
	if i < histSub {
		return uint64(i), 1
	}
	shift := i/histSub - 1
	m := uint64(i % histSub)
	return (histSub + m) << shift, 1 << shift
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(0)
	if d > 0 {
		v = uint64(d)
	}
	h.counts[histIndex(v)]++
	h.n++
	h.sum += v
	if v > h.max {
		h.max = v
	}
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	if o.max > h.max {
		h.max = o.max
	}
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Mean is the exact mean of the recorded values.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Max is the largest recorded value.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Percentile returns the nearest-rank percentile pct (0-100), at the
// midpoint of the bucket holding it, never above the maximum.
func (h *Histogram) Percentile(pct float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(pct / 100 * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, w := histBounds(i)
			v := lo + w/2
			if w == 1 {
				v = lo
			}
			if v > h.max {
				v = h.max
			}
			return time.Duration(v)
		}
	}
	return time.Duration(h.max)
}
