package agenthost

import (
	"time"

	"golang.org/x/sys/unix"
)

// monotonic is the host's CLOCK_MONOTONIC in nanoseconds, the clock agents
// report in (agent.monotonic).
func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Now().UnixNano()
	}
	return ts.Nano()
}
