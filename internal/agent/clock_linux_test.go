package agent

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/isobench/isobench/internal/agentproto"
)

// The deadline wake is realtime where it may be (root here) and leaves the
// thread at SCHED_OTHER: the workload after it never runs at a realtime
// priority.
func TestSleepUntilDropsRealtime(t *testing.T) {
	runtime.LockOSThread() // keep this goroutine on the thread sleepUntil used
	defer runtime.UnlockOSThread()
	deadline := agentproto.Monotonic() + int64(5*time.Millisecond)
	clock, rt, err := sleepUntil(deadline)
	if err != nil {
		t.Fatal(err)
	}
	if clock < deadline {
		t.Fatalf("woke at %d, before the deadline %d", clock, deadline)
	}
	if os.Geteuid() == 0 && !rt {
		t.Errorf("root could not sleep at SCHED_FIFO: the wake was not realtime")
	}
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if attr.Policy != schedOther || attr.Priority != 0 {
		t.Fatalf("after the wake the thread is at policy %d priority %d, want SCHED_OTHER", attr.Policy, attr.Priority)
	}
}
