//go:build !linux

package confine

import (
	"fmt"
	"io"
)

// Main is Linux-only.
func Main(args []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "isobench agent confine: Linux-only")
	return 126
}

// ProbeMain is Linux-only.
func ProbeMain(stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "isobench agent probe: Linux-only")
	return 1
}
