package agent

import (
	"sync"
	"time"

	"github.com/isobench/isobench/internal/agentproto"
	"github.com/isobench/isobench/internal/workload"
)

// tracker is the agent's workload.Tracker: the timelines of the Counters
// the workload tracked, which go into the result event.
type tracker struct {
	mu    sync.Mutex
	lines []*agentproto.Timeline
	stops []func()
	// release is when the barrier released the instances (the host's
	// deadline on this clock; when the agent read the go line), 0 before.
	release int64
}

// released records the instant the barrier released the instances.
func (t *tracker) released(at int64) {
	t.mu.Lock()
	t.release = at
	t.mu.Unlock()
}

// origin is a timeline's first instant for a count of c0 taken at now:
// the release when no work was done yet (c0 == 0) and the release is
// past. Instances released together at a deadline are all runnable from
// it, but on a host with fewer CPUs than instances a later one gets its
// first slice only after the scheduler gets round to it (tens of ms per
// instance at 32 on 2 cores without a realtime wake): it competed for
// the CPUs from the release, and nothing of its work was done before it
// ran, so its count at the release is 0. Taking its own first slice as
// its start instead shrank the cell's common window to 78% of a 1 s run
// and left out of it the part of the run in which the late instances
// were waiting behind the early ones.
func (t *tracker) origin(now int64, c0 float64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c0 == 0 && t.release > 0 && t.release < now {
		return t.release
	}
	return now
}

// Track starts keeping c's points; stop turns them into one timeline per
// rate on the agent's clock.
func (t *tracker) Track(c *workload.Counter, rates ...workload.Rate) (stop func()) {
	// the Counter's instants on this clock: read back to back
	now, cnow := agentproto.Monotonic(), c.Now()
	mono := func(d time.Duration) int64 { return now + int64(d-cnow) }
	p0 := c.Record()
	// the work began at the tracking (workload.TrackStarted), or at the
	// earlier instant the workload gave (TrackStartedAt), which Record
	// made the first point
	origin := mono(p0.At)
	if !c.StartsAtRecord() {
		origin = t.origin(now, float64(p0.N)) // the release when no work was done yet
	}
	tls := make([]*agentproto.Timeline, len(rates))
	for i, r := range rates {
		tls[i] = &agentproto.Timeline{Metric: r.Metric}
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			pts := c.Points()
			end := agentproto.Monotonic()
			for i, tl := range tls {
				fill(tl, pts, mono, rates[i].Scale, origin, end)
			}
		})
	}
	t.mu.Lock()
	t.lines = append(t.lines, tls...)
	t.stops = append(t.stops, stop)
	t.mu.Unlock()
	return stop
}

// fill makes tl from a Counter's points (the first is where tracking
// began): it begins at origin, its instants are put on the agent's clock
// by mono and kept strictly ascending (a point no later than the one
// before is dropped, the one before keeping the larger count), its counts
// scaled. A count that never grew ends at end.
func fill(tl *agentproto.Timeline, pts []workload.Point, mono func(time.Duration) int64, scale float64, origin, end int64) {
	tl.Clock = []int64{origin}
	tl.Count = []float64{float64(pts[0].N) * scale}
	for _, p := range pts[1:] {
		at, v := mono(p.At), float64(p.N)*scale
		n := len(tl.Clock)
		switch {
		case at > tl.Clock[n-1]:
			tl.Clock = append(tl.Clock, at)
			tl.Count = append(tl.Count, v)
		case n > 1:
			tl.Count[n-1] = max(tl.Count[n-1], v)
		default: // no later than the origin: 1 ns after it
			tl.Clock = append(tl.Clock, origin+1)
			tl.Count = append(tl.Count, v)
		}
	}
	if len(tl.Clock) == 1 {
		tl.Clock = append(tl.Clock, max(end, origin+1))
		tl.Count = append(tl.Count, tl.Count[0])
	}
}

// timelines returns what was tracked (each timeline with at least a
// start and an end), stopping what the workload left running (its end is
// then when the workload returned).
func (t *tracker) timelines() []agentproto.Timeline {
	t.mu.Lock()
	stops, lines := t.stops, t.lines
	t.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	var out []agentproto.Timeline
	for _, tl := range lines {
		if len(tl.Clock) >= 2 {
			out = append(out, *tl)
		}
	}
	return out
}
