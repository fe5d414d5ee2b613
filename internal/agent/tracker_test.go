package agent

import (
	"context"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/agentproto"
	"github.com/isobench/isobench/internal/workload"
)

func TestTrackerTimeline(t *testing.T) {
	c := workload.NewCounter()
	tr := &tracker{}
	stop := tr.Track(c, workload.Rate{Metric: "events", Scale: 1}, workload.Rate{Metric: "mib", Scale: 0.5})
	for range 6 {
		c.Add(1)
		time.Sleep(3 * time.Millisecond)
	}
	stop()
	stop() // twice is safe
	tls := tr.timelines()
	if len(tls) != 2 || tls[0].Metric != "events" || tls[1].Metric != "mib" {
		t.Fatalf("timelines %+v", tls)
	}
	for _, tl := range tls {
		if len(tl.Clock) < 2 || len(tl.Clock) != len(tl.Count) {
			t.Fatalf("timeline %+v", tl)
		}
		for i := 1; i < len(tl.Clock); i++ {
			if tl.Clock[i] <= tl.Clock[i-1] || tl.Count[i] < tl.Count[i-1] {
				t.Fatalf("not ascending at %d: %+v", i, tl)
			}
		}
	}
	if ev, mib := tls[0].Count[len(tls[0].Count)-1], tls[1].Count[len(tls[1].Count)-1]; ev != 6 || mib != 3 {
		t.Errorf("timelines end at %g events and %g MiB, want 6 and 3", ev, mib)
	}
	// 3 ms pauses: every add is a point
	if n := len(tls[0].Clock); n < 7 {
		t.Errorf("%d points for 6 adds 3 ms apart: %+v", n, tls[0])
	}
}

// A tracking the workload never stopped is stopped when the result is
// written, so its end is known.
func TestTrackerStopsWhatWasLeftRunning(t *testing.T) {
	tr := &tracker{}
	tr.Track(workload.NewCounter(), workload.Rate{Metric: "x", Scale: 1})
	if tls := tr.timelines(); len(tls) != 1 || len(tls[0].Clock) < 2 {
		t.Fatalf("timelines %+v", tls)
	}
}

// A timeline begins at the barrier's release when no work was done by the
// time tracking starts (an instance that got its first slice late
// competed for the CPUs from the release), and at the first sample when
// some was.
func TestTrackerBeginsAtTheRelease(t *testing.T) {
	release := agentproto.Monotonic() - int64(50*time.Millisecond)
	tr := &tracker{}
	tr.released(release)
	stop := tr.Track(workload.NewCounter(), workload.Rate{Metric: "idle", Scale: 1})
	stop()
	seven := workload.NewCounter()
	seven.Add(7)
	busy := tr.Track(seven, workload.Rate{Metric: "busy", Scale: 1})
	busy()
	tls := tr.timelines()
	if len(tls) != 2 {
		t.Fatalf("timelines %+v", tls)
	}
	if tls[0].Clock[0] != release {
		t.Errorf("idle timeline begins at %d, want the release %d", tls[0].Clock[0], release)
	}
	if tls[1].Clock[0] <= release {
		t.Errorf("a timeline whose count was 7 at its start begins at %d, not after the release %d", tls[1].Clock[0], release)
	}
	// work that began at its tracking (workload.TrackStarted: a tool
	// whose threads started after its own start-up) begins there, not at
	// the release
	tr3 := &tracker{}
	tr3.released(release)
	ctx := workload.WithTracker(context.Background(), tr3)
	before := agentproto.Monotonic()
	workload.TrackStarted(ctx, workload.NewCounter(), workload.Rate{Metric: "tool", Scale: 1})()
	if tl := tr3.timelines(); len(tl) != 1 || tl[0].Clock[0] < before {
		t.Errorf("a TrackStarted timeline %+v begins before its tracking (%d), at the release %d?", tl, before, release)
	}
	// a release not yet past (a clock the host set ahead) is not used
	future := agentproto.Monotonic() + int64(time.Hour)
	tr2 := &tracker{}
	tr2.released(future)
	s := tr2.Track(workload.NewCounter(), workload.Rate{Metric: "x", Scale: 1})
	s()
	if tl := tr2.timelines(); tl[0].Clock[0] >= future {
		t.Errorf("timeline begins at the future release")
	}
}

// A process that gets the CPU in slices (10 events in each 5 ms slice, one
// slice every 100 ms) yields a timeline whose count, interpolated
// anywhere between slices, is the true count (to within the event that
// ends a pause). A sampler goroutine reading
// a bare count ran when its process got the CPU, at the start of a slice
// before the slice's work, so interpolation between its samples spread
// each slice's work over the gap before it: 5-10% of a 1 s window lost at
// 32 instances on 2 cores.
func TestTimelineFollowsTheCountBetweenSlices(t *testing.T) {
	ms := time.Millisecond
	var now time.Duration
	c := workload.NewCounterClock(func() time.Duration { return now })
	p0 := c.Record()
	for slice := 1; slice <= 5; slice++ {
		for i := 1; i <= 10; i++ {
			now = time.Duration(slice)*100*ms + time.Duration(i)*ms/2
			c.Add(1)
		}
	}
	tl := &agentproto.Timeline{Metric: "events"}
	fill(tl, c.Points(), func(d time.Duration) int64 { return int64(d - p0.At) }, 1, 0, int64(time.Second))
	at := func(d time.Duration) float64 {
		t := int64(d)
		for i := 1; i < len(tl.Clock); i++ {
			if tl.Clock[i] >= t {
				t0, t1 := tl.Clock[i-1], tl.Clock[i]
				return tl.Count[i-1] + (tl.Count[i]-tl.Count[i-1])*float64(t-t0)/float64(t1-t0)
			}
		}
		return tl.Count[len(tl.Count)-1]
	}
	for _, d := range []time.Duration{50 * ms, 150 * ms, 250 * ms, 399 * ms, 480 * ms} {
		want := float64(10 * int(d/(100*ms)))
		// within the one event whose work ends a pause
		if got := at(d); got < want || got > want+1 {
			t.Errorf("count at %v: %g, want %g (timeline %v %v)", d, got, want, tl.Clock, tl.Count)
		}
	}
	if end := tl.Clock[len(tl.Clock)-1]; end != int64(505*ms) {
		t.Errorf("timeline ends at %v, want the last growth at 505ms", time.Duration(end))
	}
}

// A Counter tracked with TrackStartedAt begins its timeline at the instant
// given (an external tool's stamp on its first report), on the agent's
// clock, and not when it was tracked.
func TestTrackerBeginsAtTheToolsInstant(t *testing.T) {
	tr := &tracker{}
	c := workload.NewCounter()
	c.Add(7)
	before := agentproto.Monotonic()
	stop := workload.TrackStartedAt(workload.WithTracker(context.Background(), tr), c, c.Now()-200*time.Millisecond, workload.Rate{Metric: "x", Scale: 1})
	c.Add(3)
	stop()
	tls := tr.timelines()
	if len(tls) != 1 || len(tls[0].Clock) < 2 {
		t.Fatalf("timelines %+v", tls)
	}
	tl := tls[0]
	if o := tl.Clock[0]; o < before-int64(201*time.Millisecond) || o > before-int64(150*time.Millisecond) {
		t.Errorf("timeline begins %v before tracking, want 200 ms", time.Duration(before-o))
	}
	if tl.Count[0] != 7 || tl.Count[len(tl.Count)-1] != 10 {
		t.Errorf("counts %v, want from 7 to 10", tl.Count)
	}
}
