package agent

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/agentproto"
)

func TestTrackerTimeline(t *testing.T) {
	var n atomic.Int64
	tr := &tracker{}
	stop := tr.Track("events", func() float64 { return float64(n.Add(1)) })
	time.Sleep(3 * trackTick)
	stop()
	stop() // twice is safe
	tls := tr.timelines()
	if len(tls) != 1 || tls[0].Metric != "events" {
		t.Fatalf("timelines %+v", tls)
	}
	tl := tls[0]
	if len(tl.Clock) < 2 || len(tl.Clock) != len(tl.Count) {
		t.Fatalf("timeline %+v", tl)
	}
	for i := 1; i < len(tl.Clock); i++ {
		if tl.Clock[i] <= tl.Clock[i-1] || tl.Count[i] < tl.Count[i-1] {
			t.Fatalf("not ascending at %d: %+v", i, tl)
		}
	}
}

// A tracking the workload never stopped is stopped when the result is
// written, so its end is known.
func TestTrackerStopsWhatWasLeftRunning(t *testing.T) {
	tr := &tracker{}
	tr.Track("x", func() float64 { return 1 })
	if tls := tr.timelines(); len(tls) != 1 || len(tls[0].Clock) < 2 {
		t.Fatalf("timelines %+v", tls)
	}
}

func TestThinKeepsEndsAndHalves(t *testing.T) {
	tl := &agentproto.Timeline{}
	for i := 0; i < 9; i++ {
		tl.Clock = append(tl.Clock, int64(i))
		tl.Count = append(tl.Count, float64(i))
	}
	thin(tl)
	want := []int64{0, 2, 4, 6, 8}
	if len(tl.Clock) != len(want) {
		t.Fatalf("thinned to %v", tl.Clock)
	}
	for i, c := range want {
		if tl.Clock[i] != c || tl.Count[i] != float64(c) {
			t.Fatalf("thinned to %v %v", tl.Clock, tl.Count)
		}
	}
	tl = &agentproto.Timeline{Clock: []int64{0, 1, 2, 3}, Count: []float64{0, 1, 2, 3}}
	thin(tl)
	if tl.Clock[len(tl.Clock)-1] != 3 {
		t.Fatalf("the last point was dropped: %v", tl.Clock)
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
	stop := tr.Track("idle", func() float64 { return 0 })
	stop()
	busy := tr.Track("busy", func() float64 { return 7 })
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
	// a release not yet past (a clock the host set ahead) is not used
	future := agentproto.Monotonic() + int64(time.Hour)
	tr2 := &tracker{}
	tr2.released(future)
	s := tr2.Track("x", func() float64 { return 0 })
	s()
	if tl := tr2.timelines(); tl[0].Clock[0] >= future {
		t.Errorf("timeline begins at the future release")
	}
}
