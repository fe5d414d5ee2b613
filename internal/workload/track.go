package workload

import (
	"context"
	"sync"
	"time"
)

// Tracker reads a running workload's cumulative work, with the instants
// it grew on the clock of the process it runs in (a Counter's points); the agent provides one (internal/agent) so the host
// can compute each instance's rate over the window in which every
// instance of a cell was running, instead of over each instance's own
// interval (instances released together still start and stop apart: on a
// loaded host tens of milliseconds, a tenth of a one-second run).
type Tracker interface {
	// Track starts keeping c's points, the cumulative work behind each
	// of rates, now: call it right after the barrier. The returned stop is
	// called when the timed work ends; it reads them.
	Track(c *Counter, rates ...Rate) (stop func())
}

// Rate is a metric whose work is a Counter's count times Scale (e.g.
// events to MiB).
type Rate struct {
	Metric string
	Scale  float64
}

// Counter is a workload's completed work and the instants it grew, which
// is what a Tracker reads. A sampler goroutine reading a bare count every
// tick reads it when it gets the CPU: on a host with more runnable threads
// than CPUs, and behind the workload's own goroutines in its process's
// run queue, that was every 100-380 ms at 32 instances on 2 cores, and
// interpolating between such samples spread the work of the first slices
// over the first quarter second, so the rate over the common window read
// 5-10% low at 1 s. The Counter keeps the points itself, as the work is
// counted: one every tick, and two around every pause in its growth (the
// count before the pause, and after it), so the count interpolated between
// its points follows the true count wherever the process was descheduled.
type Counter struct {
	now  func() time.Duration // the real clock since the Counter was made, or a test's
	mu   sync.Mutex
	n    int64         // the work done
	last time.Duration // when it last grew
	rec  bool          // keeping points (a Tracker reads them)
	tick time.Duration // between points while it grows steadily
	pts  []Point
	// atRecord: the timed work began when tracking began (TrackStarted),
	// not at the barrier's release
	atRecord bool
	// startAt, when set (TrackStartedAt), is the instant on the Counter's
	// clock at which that work began, earlier than the tracking
	startAt *time.Duration
}

// StartsAtRecord reports whether the Counter's work began when it was
// first tracked (TrackStarted) rather than at the barrier's release.
func (c *Counter) StartsAtRecord() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.atRecord
}

// Point is a Counter's count N at instant At (since its clock's origin).
type Point struct {
	At time.Duration
	N  int64
}

// Tick is the interval between a Counter's points while it grows without
// pause, Pause the gap in its growth that it records as one, and
// MaxPoints how many it keeps: past it every other point is dropped and
// the tick doubles, so a long run costs the same few kilobytes.
const (
	Tick      = 20 * time.Millisecond
	Pause     = time.Millisecond
	MaxPoints = 2048
)

// NewCounter returns a zero Counter on the real clock.
func NewCounter() *Counter {
	base := time.Now()
	return NewCounterClock(func() time.Duration { return time.Since(base) })
}

// NewCounterClock returns a zero Counter whose instants come from now (the
// time since an origin of the caller's choosing; a test's fake clock).
func NewCounterClock(now func() time.Duration) *Counter {
	return &Counter{now: now, tick: Tick}
}

// Add counts k more units of work, done now.
func (c *Counter) Add(k int64) { c.add(k, c.now(), false) }

// Now is the instant on the Counter's clock.
func (c *Counter) Now() time.Duration { return c.now() }

// AddAt counts k more units of work done by instant at on the Counter's
// clock (Now), for work an external tool reports having done at an instant
// of its own, which the reading process learns later: a line read late
// would put the work late. An instant before the Counter's last growth,
// or after now, is taken as that one.
func (c *Counter) AddAt(k int64, at time.Duration) { c.add(k, min(at, c.now()), true) }

func (c *Counter) add(k int64, t time.Duration, clamp bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if clamp && t < c.last {
		t = c.last
	}
	n := c.n
	if c.rec {
		prev := c.pts[len(c.pts)-1].At
		switch {
		case t-c.last > Pause:
			if c.last > prev {
				c.pts = append(c.pts, Point{At: c.last, N: n})
			} else if c.pts[len(c.pts)-1].N < n {
				// more work at the last point's instant (AddAt)
				c.pts[len(c.pts)-1].N = n
			}
			c.pts = append(c.pts, Point{At: t, N: n + k})
		case t-prev >= c.tick:
			c.pts = append(c.pts, Point{At: t, N: n + k})
		}
		if len(c.pts) >= MaxPoints {
			c.pts = thin(c.pts)
			c.tick *= 2
		}
	}
	c.n = n + k
	c.last = t
}

// Load is the work done so far.
func (c *Counter) Load() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Record starts keeping points from now, or from the earlier instant
// TrackStartedAt gave; it returns the instant (on the Counter's clock) and
// the count it starts from.
func (c *Counter) Record() Point {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now()
	if c.startAt != nil && *c.startAt < t {
		t = *c.startAt // the count so far was done by then
	}
	c.rec, c.last = true, t
	c.pts = []Point{{At: t, N: c.n}}
	return c.pts[0]
}

// Points returns the points kept since Record, ending at the last growth
// (or at Record's own point if there was none).
func (c *Counter) Points() []Point {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]Point(nil), c.pts...)
	if len(out) > 0 && out[len(out)-1].N < c.n {
		out = append(out, Point{At: c.last, N: c.n})
	}
	return out
}

// thin keeps the first and last points and every other one between.
func thin(pts []Point) []Point {
	out := pts[:0:0]
	for i, p := range pts {
		if i == 0 || i == len(pts)-1 || i%2 == 0 {
			out = append(out, p)
		}
	}
	return out
}

type trackerKey struct{}

// WithTracker returns ctx carrying t, for AgentFunc bodies to find.
func WithTracker(ctx context.Context, t Tracker) context.Context {
	return context.WithValue(ctx, trackerKey{}, t)
}

// Track samples c for rates with the Tracker in ctx, if any (outside the
// agent, e.g. in a unit test, there is none and it does nothing). Call it
// right after the barrier and call the returned stop when the timed work
// ends. Each Counter is tracked once.
func Track(ctx context.Context, c *Counter, rates ...Rate) (stop func()) {
	if t, ok := ctx.Value(trackerKey{}).(Tracker); ok && t != nil {
		return t.Track(c, rates...)
	}
	return func() {}
}

// TrackStarted is Track for work that begins now, some time after the
// barrier, such as an external tool's once its own threads started: the
// time between the release and now is the tool starting, not the
// instance waiting for the CPU, and is left out of its run (Track counts
// an instance with no work done yet as running from the release).
func TrackStarted(ctx context.Context, c *Counter, rates ...Rate) (stop func()) {
	c.mu.Lock()
	c.atRecord = true
	c.mu.Unlock()
	return Track(ctx, c, rates...)
}

// TrackStartedAt is TrackStarted for work that began at instant at on the
// Counter's clock (Now), which the caller learns later: an external tool's
// first report, stamped by the tool and read once the reading process got
// the CPU. Its timeline begins there, not when it was read. An instant
// after now is taken as now.
func TrackStartedAt(ctx context.Context, c *Counter, at time.Duration, rates ...Rate) (stop func()) {
	c.mu.Lock()
	c.atRecord, c.startAt = true, &at
	c.mu.Unlock()
	return Track(ctx, c, rates...)
}
