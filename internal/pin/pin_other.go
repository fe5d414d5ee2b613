//go:build !linux

package pin

import "fmt"

// Thread pins only on Linux; elsewhere asking for a CPU is an error.
func Thread(cpu int) error {
	if cpu < 0 {
		return nil
	}
	return fmt.Errorf("pinning to cpu %d is only supported on Linux", cpu)
}
