package runner

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// onlineCPUs are the CPUs this process may run on, in order.
func onlineCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("reading this process's CPUs: %w", err)
	}
	var out []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			out = append(out, i)
		}
	}
	return out, nil
}
