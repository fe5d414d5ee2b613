//go:build !linux

package k8s

import (
	"errors"
	"fmt"
)

// unmountDetach: the local cluster runs on Linux only.
func unmountDetach(path string) error {
	return fmt.Errorf("unmounting %s: %w", path, errors.ErrUnsupported)
}
