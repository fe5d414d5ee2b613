package pin

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/isobench/isobench/internal/cpulist"
)

// Thread locks the calling goroutine to its OS thread and binds that
// thread to cpu. It never unlocks it: when the goroutine returns, the
// runtime ends the thread, so no bound thread goes back into the pool. A
// process started from the thread inherits the binding. cpu < 0 does
// nothing.
func Thread(cpu int) error {
	if cpu < 0 {
		return nil
	}
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		var allowed unix.CPUSet
		unix.SchedGetaffinity(0, &allowed)
		return fmt.Errorf("pinning to cpu %d: %w (this side may use cpus %s)", cpu, err, List(allowed))
	}
	return nil
}

// List renders a CPU set as the kernel's list ("0-3,6"), "none" when
// empty.
func List(s unix.CPUSet) string {
	var cpus []int
	for i := 0; i < len(s)*64; i++ {
		if s.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) == 0 {
		return "none"
	}
	return cpulist.Format(cpus)
}
