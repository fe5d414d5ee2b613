package agentproto

import (
	"time"

	"golang.org/x/sys/unix"
)

// Monotonic is CLOCK_MONOTONIC in nanoseconds: the clock of Event.Clock
// and of the deadline barrier, the agent's and the host's alike (shared by
// every container on a host; a VM has its own).
func Monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Now().UnixNano()
	}
	return ts.Nano()
}
