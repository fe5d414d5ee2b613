package tooladapt

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// startOn starts cmd bound to cpu (cpu < 0: wherever the scheduler puts
// it), as `taskset -c CPU` would: it is started from an OS thread bound
// to cpu, and a new process inherits its creating thread's affinity. That
// thread is never unlocked, so the runtime ends it with the goroutine and
// no bound thread returns to the pool.
func startOn(cmd *exec.Cmd, cpu int) error {
	if cpu < 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			var allowed unix.CPUSet
			unix.SchedGetaffinity(0, &allowed)
			errc <- fmt.Errorf("pinning %s to cpu %d: %w (%d cpus are allowed here)", cmd.Path, cpu, err, allowed.Count())
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
