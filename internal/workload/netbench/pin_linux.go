package netbench

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// pinThread locks the calling goroutine to its OS thread and binds that
// thread to cpu. The goroutine never unlocks it: when it returns the
// runtime ends the thread, so no pinned thread goes back into the pool.
// cpu < 0 does nothing.
func pinThread(cpu int) error {
	if cpu < 0 {
		return nil
	}
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		var allowed unix.CPUSet
		unix.SchedGetaffinity(0, &allowed)
		return fmt.Errorf("netbench: pinning to cpu %d: %w (this side may use cpus %s)", cpu, err, cpuList(allowed))
	}
	return nil
}

// cpuList renders a CPU set as "0-3,6".
func cpuList(s unix.CPUSet) string {
	out := ""
	for i := 0; i < len(s)*64; i++ {
		if !s.IsSet(i) {
			continue
		}
		j := i
		for j+1 < len(s)*64 && s.IsSet(j+1) {
			j++
		}
		if out != "" {
			out += ","
		}
		if j > i {
			out += fmt.Sprintf("%d-%d", i, j)
		} else {
			out += fmt.Sprint(i)
		}
		i = j
	}
	if out == "" {
		return "none"
	}
	return out
}
