package tooladapt

import (
	"fmt"
	"os/exec"

	"github.com/isobench/isobench/internal/pin"
)

// startOn starts cmd bound to cpu (cpu < 0: wherever the scheduler puts
// it), as `taskset -c CPU` would: it is started from an OS thread bound
// to cpu (pin.Thread), and a new process inherits its creating thread's
// binding. That thread ends with its goroutine.
func startOn(cmd *exec.Cmd, cpu int) error {
	if cpu < 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		if err := pin.Thread(cpu); err != nil {
			errc <- fmt.Errorf("%s: %w", cmd.Path, err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
