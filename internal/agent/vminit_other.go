//go:build !linux

package agent

import (
	"context"
	"fmt"
	"io"
)

func vmInit(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "isobench agent vm-init: a QEMU guest's init runs on Linux only")
	return 2
}
