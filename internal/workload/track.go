package workload

import "context"

// Tracker samples a running workload's cumulative work on the clock of the
// process it runs in; the agent provides one (internal/agent) so the host
// can compute each instance's rate over the window in which every
// instance of a cell was running, instead of over each instance's own
// interval (instances released together still start and stop apart: on a
// loaded host tens of milliseconds, a tenth of a one-second run).
type Tracker interface {
	// Track starts sampling count, the cumulative work behind metric (e.g.
	// events done so far for events_per_sec), now: call it right after the
	// barrier. The returned stop is called when the timed work ends; it
	// takes the last sample.
	Track(metric string, count func() float64) (stop func())
}

type trackerKey struct{}

// WithTracker returns ctx carrying t, for AgentFunc bodies to find.
func WithTracker(ctx context.Context, t Tracker) context.Context {
	return context.WithValue(ctx, trackerKey{}, t)
}

// Track samples count for metric with the Tracker in ctx, if any (outside
// the agent, e.g. in a unit test, there is none and it does nothing). Call
// it right after the barrier and call the returned stop when the timed
// work ends.
func Track(ctx context.Context, metric string, count func() float64) (stop func()) {
	if t, ok := ctx.Value(trackerKey{}).(Tracker); ok && t != nil {
		return t.Track(metric, count)
	}
	return func() {}
}
