//go:build !linux

package tooladapt

import (
	"fmt"
	"os/exec"
)

// startOn pins only on Linux; elsewhere asking for a CPU is an error.
func startOn(cmd *exec.Cmd, cpu int) error {
	if cpu < 0 {
		return cmd.Start()
	}
	return fmt.Errorf("pinning %s to cpu %d is only supported on Linux", cmd.Path, cpu)
}
