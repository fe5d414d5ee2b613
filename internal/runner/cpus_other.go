//go:build !linux

package runner

import "errors"

func onlineCPUs() ([]int, error) {
	return nil, errors.New("duet runs bind CPUs on Linux only")
}
