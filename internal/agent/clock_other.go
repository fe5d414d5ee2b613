//go:build !linux

package agent

import "time"

var epoch = time.Now()

// monotonic is nanoseconds on the process's monotonic clock.
func monotonic() int64 { return int64(time.Since(epoch)) }

// sleepUntil blocks until monotonic() reaches deadline and returns it
// (never with a realtime wake here).
func sleepUntil(deadline int64) (int64, bool, error) {
	if d := deadline - monotonic(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	return monotonic(), false, nil
}
