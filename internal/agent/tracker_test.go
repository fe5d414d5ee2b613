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
