package agent

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/isobench/isobench/internal/cpulist"
)

// bindAll binds every thread of this process to the CPUs of list: the
// threads that exist now, and so every thread created later (a new thread
// inherits its creator's mask), so the Go runtime's whole pool and every
// goroutine of the workload runs there.
func bindAll(list string) error {
	cpus, err := cpulist.Parse(list)
	if err != nil {
		return fmt.Errorf("--cpus=%s: %w", list, err)
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("--cpus=%s: %w", list, err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			var allowed unix.CPUSet
			unix.SchedGetaffinity(0, &allowed)
			return fmt.Errorf("binding the agent to cpus %s: %w (%d CPUs are allowed here)", list, err, allowed.Count())
		}
	}
	return nil
}
