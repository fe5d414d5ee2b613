package agent

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// monotonic is CLOCK_MONOTONIC in nanoseconds, the clock of the deadline
// barrier (shared by every container on a host; a VM has its own).
func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Now().UnixNano()
	}
	return ts.Nano()
}

// sleepUntil blocks until CLOCK_MONOTONIC reaches deadline (ns) with an
// absolute clock_nanosleep and 1 ns timer slack, so every instance wakes
// at the same hrtimer expiry instead of at the Go scheduler's next timer
// check; it returns the clock on waking.
func sleepUntil(deadline int64) int64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	ts := unix.NsecToTimespec(deadline)
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		if err != unix.EINTR {
			break
		}
	}
	return monotonic()
}
