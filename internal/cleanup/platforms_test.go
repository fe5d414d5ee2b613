package cleanup

import (
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/docker"
	"github.com/isobench/isobench/internal/platform/gvisor"
	"github.com/isobench/isobench/internal/platform/local"
	"github.com/isobench/isobench/internal/platform/lxc"
	"github.com/isobench/isobench/internal/platform/native"
	"github.com/isobench/isobench/internal/platform/nspawn"
	"github.com/isobench/isobench/internal/platform/podman"
	"github.com/isobench/isobench/internal/platform/qemu"
	"github.com/isobench/isobench/internal/platform/runc"
)

// testCode is the platform code of the local instances this package's
// tests plant (isob-t<hex>): no platform's, so that a test's instances
// are told apart from real ones.
const testCode = "t"

// This package's tests that give no registry (Options.Platforms) search
// the platforms whose leftovers they plant: QEMU's run directories in
// Options.QEMUDir, Docker's and Podman's containers, native's scratch
// directories in Options.TempDirs, local instances of
// testCode, and the local platforms (whose instances the tests' scans
// see, as 'isobench clean' does).
func init() {
	testPlatforms = func(o Options) platform.Registry {
		return platform.NewRegistry(
			platform.Factory{Name: "qemu", Sweep: qemu.SweepDir(o.QEMUDir)},
			docker.Factory, podman.Factory,
			platform.Factory{Name: "tlocal", Sweep: local.Sweep(local.Traits{Code: testCode})},
			runc.RuncFactory, runc.CrunFactory, gvisor.Factory, lxc.Factory, nspawn.Factory, native.Factory,
		)
	}
}
