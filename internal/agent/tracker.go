package agent

import (
	"sync"
	"time"

	"github.com/isobench/isobench/internal/agentproto"
)

// trackTick is how often a tracked count is sampled, and maxPoints how
// many samples a timeline keeps: past it every other sample is dropped and
// the tick doubles, so a long run costs the same few kilobytes.
const (
	trackTick = 20 * time.Millisecond
	maxPoints = 2048
)

// tracker is the agent's workload.Tracker: one sampling goroutine per
// tracked metric, whose timeline goes into the result event.
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

func (t *tracker) Track(metric string, count func() float64) (stop func()) {
	now, c0 := agentproto.Monotonic(), count()
	tl := &agentproto.Timeline{Metric: metric, Clock: []int64{t.origin(now, c0)}, Count: []float64{c0}}
	quit := make(chan struct{})
	finished := make(chan struct{})
	var mu sync.Mutex // guards tl while the sampler runs
	add := func() {
		c, v := agentproto.Monotonic(), count()
		mu.Lock()
		defer mu.Unlock()
		if n := len(tl.Count); v < tl.Count[n-1] {
			v = tl.Count[n-1] // a count never falls
		}
		tl.Clock = append(tl.Clock, c)
		tl.Count = append(tl.Count, v)
	}
	go func() {
		defer close(finished)
		tick := trackTick
		timer := time.NewTimer(tick)
		defer timer.Stop()
		for {
			select {
			case <-quit:
				return
			case <-timer.C:
			}
			add()
			mu.Lock()
			if len(tl.Clock) >= maxPoints {
				thin(tl)
				tick *= 2
			}
			mu.Unlock()
			timer.Reset(tick)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(quit)
			<-finished
			add()
		})
	}
	t.mu.Lock()
	t.lines = append(t.lines, tl)
	t.stops = append(t.stops, stop)
	t.mu.Unlock()
	return stop
}

// thin keeps the first and last samples and every other one between.
func thin(tl *agentproto.Timeline) {
	n := len(tl.Clock)
	c, v := tl.Clock[:0:0], tl.Count[:0:0]
	for i := 0; i < n; i++ {
		if i == 0 || i == n-1 || i%2 == 0 {
			c = append(c, tl.Clock[i])
			v = append(v, tl.Count[i])
		}
	}
	tl.Clock, tl.Count = c, v
}

// timelines returns what was tracked (each timeline with at least a
// start and an end), stopping what the workload left running (its end is
// then when the workload returned).
func (t *tracker) timelines() []agentproto.Timeline {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, stop := range t.stops {
		stop()
	}
	var out []agentproto.Timeline
	for _, tl := range t.lines {
		if len(tl.Clock) >= 2 {
			out = append(out, *tl)
		}
	}
	return out
}
