// Package window computes the rates of concurrent instances over their
// common measurement window: the interval in which every instance of a
// cell was doing its timed work. Instances released together through a
// barrier still start and stop apart (on a loaded 2-core host, containers
// wake tens of milliseconds after one another); a rate over each
// instance's own interval then counts stretches in which some instances
// had the CPU to themselves, and the sum over instances is no longer the
// capacity they shared. Each instance reports its cumulative work sampled
// on a clock (agentproto.Timeline), put on the host's clock; this package
// reads every instance's work over the overlap of their intervals.
package window

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Series is one instance's cumulative work: Count[i] done by host-clock
// instant Clock[i] (ns). Clock ascends strictly; Count never falls. The
// first point is when the timed work began, the last when it ended.
type Series struct {
	Clock []int64
	Count []float64
}

// Result is the common window of a cell's instances.
type Result struct {
	Start, End int64         // the window on the host's clock (ns)
	Overlap    time.Duration // End - Start
	// Span is the median of the instances' own intervals; Frac is
	// Overlap / Span, the share of a typical instance's run in which every
	// instance was running (1 when they ran exactly together).
	Span time.Duration
	Frac float64
	// Rates[i] is instance i's work per second within the window.
	Rates []float64
}

// MinFrac is the overlap below which a cell's instances did not share
// enough of their runs to be read as concurrent: such a cell is flagged.
const MinFrac = 0.9

// Common computes the window of series and each one's rate within it. It
// fails when a series is malformed or the intervals do not overlap at all
// (an instance finished before another began).
func Common(series []Series) (Result, error) {
	if len(series) == 0 {
		return Result{}, errors.New("window: no series")
	}
	var r Result
	spans := make([]int64, len(series))
	for i, s := range series {
		if err := s.check(); err != nil {
			return Result{}, fmt.Errorf("window: instance %d: %w", i, err)
		}
		first, last := s.Clock[0], s.Clock[len(s.Clock)-1]
		if i == 0 || first > r.Start {
			r.Start = first
		}
		if i == 0 || last < r.End {
			r.End = last
		}
		spans[i] = last - first
	}
	if r.End <= r.Start {
		return Result{}, fmt.Errorf("window: the instances' runs do not overlap (the latest start is %v after the earliest end)", time.Duration(r.Start-r.End))
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i] < spans[j] })
	mid := len(spans) / 2
	span := spans[mid]
	if len(spans)%2 == 0 {
		span = (spans[mid-1] + spans[mid]) / 2
	}
	r.Overlap, r.Span = time.Duration(r.End-r.Start), time.Duration(span)
	r.Frac = float64(r.Overlap) / float64(r.Span)
	for _, s := range series {
		from, to := s.inner(r.Start, r.End)
		r.Rates = append(r.Rates, (s.at(to)-s.at(from))/(float64(to-from)/1e9))
	}
	return r, nil
}

// MaxStraddle is the longest typical interval between a series' points,
// as a share of the window, over which the window's edges are
// interpolated. A built-in workload's Counter keeps a point every 20 ms
// and one on each side of every pause, so a straight line between its
// points follows its work, pauses included, and it is read over the
// window exactly. An external tool reporting once a second (sysbench's
// --report-interval) is coarser than that: an instance that started 0.5 s
// before the others did half a second of work alone inside its first
// interval, and a straight line across that interval put part of it in
// the window (at 32 instances of a 3 s sysbench, one instance read 640
// events/s where the others read 230, and the sum 9% above the machine's
// capacity). A series whose median interval is longer is read over its
// own whole intervals inside the window instead, in all of which every
// instance was running.
const MaxStraddle = 0.05

// inner is the part of [start, end] over which s is read: the window,
// or, for a series whose median interval is longer than MaxStraddle of
// the window, the window with each edge that falls inside one of its
// intervals moved inward to the series' nearest point. When that leaves
// less than half the window, the whole window is read (interpolated).
func (s Series) inner(start, end int64) (from, to int64) {
	limit := int64(MaxStraddle * float64(end-start))
	from, to = start, end
	gaps := make([]int64, 0, len(s.Clock)-1)
	for k := 1; k < len(s.Clock); k++ {
		gaps = append(gaps, s.Clock[k]-s.Clock[k-1])
	}
	sort.Slice(gaps, func(a, b int) bool { return gaps[a] < gaps[b] })
	if gaps[len(gaps)/2] <= limit {
		return start, end
	}
	// the first point at or after start, and the last at or before end
	i := sort.Search(len(s.Clock), func(i int) bool { return s.Clock[i] >= start })
	if i > 0 && i < len(s.Clock) && s.Clock[i] != start {
		from = s.Clock[i]
	}
	j := sort.Search(len(s.Clock), func(j int) bool { return s.Clock[j] > end }) - 1
	if j >= 0 && j+1 < len(s.Clock) && s.Clock[j] != end {
		to = s.Clock[j]
	}
	if to-from < (end-start)/2 {
		return start, end
	}
	return from, to
}

func (s Series) check() error {
	if len(s.Clock) < 2 || len(s.Clock) != len(s.Count) {
		return fmt.Errorf("want at least two points with a count each, got %d clocks and %d counts", len(s.Clock), len(s.Count))
	}
	for i := 1; i < len(s.Clock); i++ {
		if s.Clock[i] <= s.Clock[i-1] {
			return fmt.Errorf("clock does not ascend at point %d", i)
		}
		if s.Count[i] < s.Count[i-1] {
			return fmt.Errorf("count falls at point %d", i)
		}
	}
	return nil
}

// at is the count at instant t, linear between samples (t within the
// series' interval).
func (s Series) at(t int64) float64 {
	i := sort.Search(len(s.Clock), func(i int) bool { return s.Clock[i] >= t })
	switch {
	case i == 0:
		return s.Count[0]
	case i == len(s.Clock):
		return s.Count[len(s.Count)-1]
	case s.Clock[i] == t:
		return s.Count[i]
	}
	t0, t1 := s.Clock[i-1], s.Clock[i]
	c0, c1 := s.Count[i-1], s.Count[i]
	return c0 + (c1-c0)*float64(t-t0)/float64(t1-t0)
}
