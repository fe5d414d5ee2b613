// Package hist is the one latency histogram every workload uses: log-linear
// buckets in nanoseconds, exact below 64 ns, then 64 equal buckets per power
// of two, so a bucket is at most 1/64 of its lower bound wide and a
// percentile reported at the bucket's middle is within 0.8% of the true
// value. Values are clamped at 2^42 ns (about 73 minutes). The count, mean
// and maximum are exact. The zero value is ready to use; its buckets are
// allocated on the first Record.
package hist

import (
	"math"
	"math/bits"
	"time"
)

const (
	subBits = 6
	sub     = 1 << subBits
	maxBits = 42
	// Buckets is the number of buckets.
	Buckets = (maxBits-subBits)*sub + sub
)

// Histogram counts durations. It is not safe for concurrent use: give each
// goroutine its own and Merge them.
type Histogram struct {
	counts []uint64
	n      uint64
	sum    uint64 // ns
	max    uint64 // ns
}

// Index returns the bucket of v nanoseconds.
func Index(v uint64) int {
	if v < sub {
		return int(v)
	}
	e := bits.Len64(v)
	if e > maxBits {
		return Buckets - 1
	}
	shift := e - subBits - 1
	return (shift+1)*sub + int((v>>shift)&(sub-1))
}

// Bounds returns the lower bound and width of bucket i in nanoseconds.
func Bounds(i int) (lo, width uint64) {
	if i < sub {
		return uint64(i), 1
	}
	shift := i/sub - 1
	m := uint64(i % sub)
	return (sub + m) << shift, 1 << shift
}

// Record adds one duration; negative durations count as 0.
func (h *Histogram) Record(d time.Duration) {
	if h.counts == nil {
		h.counts = make([]uint64, Buckets)
	}
	v := uint64(max(d, 0))
	h.counts[Index(v)]++
	h.n++
	h.sum += v
	h.max = max(h.max, v)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, Buckets)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Mean is the exact mean of the recorded values (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Max is the largest recorded value, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Percentile returns the nearest-rank percentile pct (0-100) at the middle
// of the bucket holding it, never above the exact maximum (0 when empty).
func (h *Histogram) Percentile(pct float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(pct / 100 * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, w := Bounds(i)
			return time.Duration(min(lo+w/2, h.max))
		}
	}
	return time.Duration(h.max)
}
