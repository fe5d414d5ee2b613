package workload

import (
	"context"
	"testing"
	"time"
)

// A Counter keeps a point every Tick while it grows steadily and two
// around every pause in its growth, and none before Record.
func TestCounterPoints(t *testing.T) {
	ms := time.Millisecond
	var now time.Duration
	c := NewCounterClock(func() time.Duration { return now })
	c.Add(5) // before tracking: counted, no point
	now = 10 * ms
	if p := c.Record(); p != (Point{At: 10 * ms, N: 5}) {
		t.Fatalf("Record returned %+v", p)
	}
	// steady growth every 0.5 ms from 10 to 50 ms: a point each Tick
	for now < 50*ms {
		now += ms / 2
		c.Add(1)
	}
	// a pause to 300 ms (descheduled), then one more; a pause after
	// growth between points keeps the count before it too
	now = 300 * ms
	c.Add(1)
	now = 305 * ms
	c.Add(1)
	now = 400 * ms
	c.Add(1)
	pts := c.Points()
	want := []Point{
		{10 * ms, 5},
		{30 * ms, 45},  // a Tick after the start
		{50 * ms, 85},  // and another, which is also the count before the pause
		{300 * ms, 86}, // after it
		{305 * ms, 87}, // before the next pause
		{400 * ms, 88},
	}
	if len(pts) != len(want) {
		t.Fatalf("points %v, want %v", pts, want)
	}
	for i := range want {
		if pts[i] != want[i] {
			t.Fatalf("points %v, want %v", pts, want)
		}
	}
	if c.Load() != 88 {
		t.Errorf("Load %d, want 88", c.Load())
	}
}

// Points ends at the last growth even between points.
func TestCounterPointsEndAtTheLastGrowth(t *testing.T) {
	ms := time.Millisecond
	var now time.Duration
	c := NewCounterClock(func() time.Duration { return now })
	c.Record()
	now = ms / 2
	c.Add(1)
	now = ms
	c.Add(1)
	pts := c.Points()
	if last := pts[len(pts)-1]; last != (Point{At: ms, N: 2}) {
		t.Fatalf("points %v end at %+v, want 2 at 1ms", pts, last)
	}
}

func TestThinKeepsEndsAndHalves(t *testing.T) {
	var pts []Point
	for i := range 9 {
		pts = append(pts, Point{At: time.Duration(i), N: int64(i)})
	}
	got := thin(pts)
	want := []time.Duration{0, 2, 4, 6, 8}
	if len(got) != len(want) {
		t.Fatalf("thinned to %v", got)
	}
	for i, at := range want {
		if got[i].At != at {
			t.Fatalf("thinned to %v", got)
		}
	}
	if got := thin([]Point{{0, 0}, {1, 1}, {2, 2}, {3, 3}}); got[len(got)-1].At != 3 {
		t.Fatalf("the last point was dropped: %v", got)
	}
}

// AddAt puts work at the instant given (a tool's own), not when it is
// counted; an instant before the last growth is taken as that one, and
// one after now as now.
func TestCounterAddAt(t *testing.T) {
	ms := time.Millisecond
	var now time.Duration
	c := NewCounterClock(func() time.Duration { return now })
	c.Record()
	now = 400 * ms
	c.AddAt(10, 100*ms) // read at 400 ms, done by 100 ms
	now = 700 * ms
	c.AddAt(10, 200*ms)
	c.AddAt(5, 150*ms) // before the last growth: at 200 ms
	c.AddAt(5, 900*ms) // in the future: now
	want := []Point{{0, 0}, {100 * ms, 10}, {200 * ms, 25}, {700 * ms, 30}}
	pts := c.Points()
	if len(pts) != len(want) {
		t.Fatalf("points %v, want %v", pts, want)
	}
	for i := range want {
		if pts[i] != want[i] {
			t.Fatalf("points %v, want %v", pts, want)
		}
	}
}

// TrackStartedAt begins the Counter's points at the instant the work
// began, with the count done by then, not when tracking began; an instant
// after now is now.
func TestTrackStartedAt(t *testing.T) {
	ms := time.Millisecond
	var now time.Duration
	c := NewCounterClock(func() time.Duration { return now })
	now = 500 * ms
	c.Add(100)                                                                 // a tool's first report, read at 500 ms
	TrackStartedAt(context.Background(), c, 300*ms)                            // made at 300 ms (no Tracker: only marks it)
	if p0 := c.Record(); p0 != (Point{300 * ms, 100}) || !c.StartsAtRecord() { // as a Tracker does
		t.Fatalf("Record %v (starts at record %v), want {300ms 100}, true", p0, c.StartsAtRecord())
	}
	c.AddAt(50, 400*ms)
	want := []Point{{300 * ms, 100}, {400 * ms, 150}}
	if pts := c.Points(); len(pts) != 2 || pts[0] != want[0] || pts[1] != want[1] {
		t.Fatalf("points %v, want %v", pts, want)
	}
	late := NewCounterClock(func() time.Duration { return now })
	TrackStartedAt(context.Background(), late, 900*ms)
	if p0 := late.Record(); p0.At != now {
		t.Errorf("a start after now: Record at %v, want now (%v)", p0.At, now)
	}
}
