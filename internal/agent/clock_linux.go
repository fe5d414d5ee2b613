package agent

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/isobench/isobench/internal/agentproto"
)

// sleepUntil blocks until CLOCK_MONOTONIC reaches deadline (ns) with an
// absolute clock_nanosleep and 1 ns timer slack, so every instance wakes
// at the same hrtimer expiry instead of at the Go scheduler's next timer
// check; it returns the clock on waking.
//
// Where it may (root with CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least 1,
// which the container platforms give their instances), the sleeping
// thread is SCHED_FIFO at priority 1 and drops back to SCHED_OTHER right
// after reading the clock. Without it, on a host with fewer CPUs than
// instances, the first agents to wake start their CPU-bound workloads and
// every later one waits for the scheduler's wake-up preemption before it
// can even read the clock (tens of ms at 32 instances on 2 cores); a
// realtime waker preempts them at once, reads the clock and leaves, so the
// instances become runnable together and then share the CPUs fairly. rt
// says whether the wake was realtime. An error means the thread could not
// leave SCHED_FIFO: the workload must not run at a realtime priority.
func sleepUntil(deadline int64) (clock int64, rt bool, err error) {
	runtime.LockOSThread()
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	rt = setFIFO(true) == nil
	ts := unix.NsecToTimespec(deadline)
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		if err != unix.EINTR {
			break
		}
	}
	clock = agentproto.Monotonic()
	if rt {
		if err := setFIFO(false); err != nil {
			// keep the thread locked to this goroutine: it is not returned
			// to the Go scheduler while it is realtime
			return clock, rt, fmt.Errorf("barrier: leaving SCHED_FIFO after the wake: %w", err)
		}
	}
	runtime.UnlockOSThread()
	return clock, rt, nil
}

// setFIFO puts the calling thread in SCHED_FIFO at priority 1, or back in
// SCHED_OTHER at nice 0.
func setFIFO(on bool) error {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: schedOther}
	if on {
		attr.Policy, attr.Priority = schedFIFO, 1
	}
	return unix.SchedSetAttr(0, &attr, 0)
}

// Scheduling policies (sched(7)); x/sys/unix does not name them.
const (
	schedOther = 0
	schedFIFO  = 1
)
