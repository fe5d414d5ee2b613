package hist

import (
	"math"
	"testing"
	"time"
)

func TestBucketsAreContiguousAndHoldTheirValues(t *testing.T) {
	prev := -1
	for v := uint64(0); v < 1<<20; v++ {
		b := Index(v)
		if b != prev && b != prev+1 {
			t.Fatalf("Index(%d) = %d after %d", v, b, prev)
		}
		prev = b
	}
	for _, v := range []uint64{0, 63, 64, 65, 127, 128, 1000, 1 << 30, 1<<42 - 1} {
		lo, w := Bounds(Index(v))
		if v < lo || v >= lo+w {
			t.Errorf("value %d not in its bucket [%d,%d)", v, lo, lo+w)
		}
		if v >= sub {
			// the midpoint is within 0.8% of every value in the bucket
			mid := float64(lo + w/2)
			if rel := math.Abs(mid-float64(v)) / float64(v); rel > 0.008 {
				t.Errorf("value %d: bucket middle %v is %.2f%% away", v, mid, rel*100)
			}
		}
	}
	if b := Index(math.MaxUint64); b != Buckets-1 {
		t.Errorf("Index(max) = %d, want the last bucket %d", b, Buckets-1)
	}
}

func TestPercentilesMeanMaxMerge(t *testing.T) {
	var h Histogram
	if h.Percentile(50) != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Fatal("empty histogram must report zeros")
	}
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	if h.Count() != 1000 || h.Mean() != 500500*time.Nanosecond || h.Max() != time.Millisecond {
		t.Fatalf("count %d mean %v max %v", h.Count(), h.Mean(), h.Max())
	}
	for _, tc := range []struct {
		pct  float64
		want time.Duration
	}{{50, 500 * time.Microsecond}, {95, 950 * time.Microsecond}, {99, 990 * time.Microsecond}, {100, time.Millisecond}} {
		got := h.Percentile(tc.pct)
		if rel := math.Abs(float64(got-tc.want)) / float64(tc.want); rel > 0.008 {
			t.Errorf("p%v = %v, want %v within 0.8%%", tc.pct, got, tc.want)
		}
	}
	if h.Percentile(100) > h.Max() {
		t.Errorf("p100 %v above max %v", h.Percentile(100), h.Max())
	}
	var small Histogram
	small.Record(3)
	small.Record(-5)
	if small.Percentile(99) != 3 || small.Percentile(1) != 0 {
		t.Errorf("exact small buckets: p99 %v p1 %v", small.Percentile(99), small.Percentile(1))
	}
	var m Histogram
	m.Merge(&Histogram{})
	m.Merge(&h)
	m.Merge(&h)
	if m.Count() != 2000 || m.Percentile(50) != h.Percentile(50) || m.Mean() != h.Mean() || m.Max() != h.Max() {
		t.Errorf("merge: count %d, p50 %v vs %v, mean %v vs %v", m.Count(), m.Percentile(50), h.Percentile(50), m.Mean(), h.Mean())
	}
}
