package runner_test

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func restoreAffinity(set *unix.CPUSet) {
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			unix.SchedSetaffinity(tid, set)
		}
	}
}
