package workload

import (
	"fmt"
	"os"

	"github.com/isobench/isobench/internal/platform"
)

// ScratchEnv names the environment variable through which a platform tells
// the agent where its scratch directory is (for native, a temp dir per
// instance; inside containers, platform.ScratchDir, a volume when the
// platform's storage=volume).
const ScratchEnv = "ISOBENCH_SCRATCH"

// Scratch returns the directory in-guest workloads must put their files in,
// creating it if needed.
func Scratch() (string, error) {
	dir := os.Getenv(ScratchEnv)
	if dir == "" {
		dir = platform.ScratchDir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("scratch directory %s: %w", dir, err)
	}
	return dir, nil
}
