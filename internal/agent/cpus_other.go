//go:build !linux

package agent

import "fmt"

func bindAll(list string) error {
	return fmt.Errorf("--cpus=%s: binding to CPUs is built for Linux only", list)
}
