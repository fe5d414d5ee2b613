package cleanup

import (
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/docker"
	"github.com/isobench/isobench/internal/platform/podman"
	"github.com/isobench/isobench/internal/platform/qemu"
)

// This package's tests that give no registry (Options.Platforms) search
// the platforms whose leftovers they plant: QEMU's run directories in
// Options.QEMUDir, Docker's and Podman's containers.
func init() {
	testPlatforms = func(o Options) platform.Registry {
		return platform.NewRegistry(
			platform.Factory{Name: "qemu", Sweep: qemu.SweepDir(o.QEMUDir)},
			docker.Factory, podman.Factory,
		)
	}
}
