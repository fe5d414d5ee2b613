//go:build !amd64

package cpu

// eventRange runs the event's loop for c in [lo, hi), lo >= 3.
func eventRange(lo, hi uint64) uint64 { return eventGo(lo, hi) }
