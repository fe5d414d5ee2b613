//go:build !linux

package netbench

import "fmt"

// pinThread pins only on Linux; elsewhere asking for a CPU is an error.
func pinThread(cpu int) error {
	if cpu < 0 {
		return nil
	}
	return fmt.Errorf("netbench: pinning to cpu %d is only supported on Linux", cpu)
}
