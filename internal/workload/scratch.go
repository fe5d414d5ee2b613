package workload

import (
	"fmt"
	"os"

	"github.com/isobench/isobench/internal/guestenv"
)

// ScratchEnv is guestenv.ScratchEnv, for in-guest code.
const ScratchEnv = guestenv.ScratchEnv

// Scratch returns the directory in-guest workloads must put their files in,
// creating it if needed.
func Scratch() (string, error) {
	dir := os.Getenv(ScratchEnv)
	if dir == "" {
		dir = guestenv.ScratchDir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("scratch directory %s: %w", dir, err)
	}
	return dir, nil
}
