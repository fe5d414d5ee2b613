package cpu

// eventAsm is implemented in event_amd64.s.
//
//go:noescape
func eventAsm(lo, hi uint64) uint64

// eventRange runs the event's loop for c in [lo, hi), lo >= 3.
func eventRange(lo, hi uint64) uint64 { return eventAsm(lo, hi) }
