package runc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/isobench/isobench/internal/platform"
)

// Bundle describes an OCI bundle for runtimes other than runc and crun
// that take the same config.json (gVisor's runsc): the same process,
// namespaces, mounts, cgroup and limits as isobench's runc instances.
type Bundle struct {
	ID        string // container id; the cgroup is /isobench/<ID>
	Rootfs    string // the root file system (an overlay mount)
	Volume    string // host directory bind-mounted at guestenv.ScratchDir, or ""
	NetnsPath string // network namespace to join, or "" for a new one
	HostNet   bool   // no network namespace at all
	// PhaseFIFO, when set, is a FIFO that OCI hooks on the host write
	// "created" (createRuntime) and "started" (poststart) lines to.
	PhaseFIFO string
	// Seccomp puts Docker's default seccomp profile into the bundle.
	Seccomp bool
}

// OCIConfig returns the bundle's config.json for spec s.
func (b Bundle) OCIConfig(s platform.Spec) ([]byte, error) {
	bc := bundleConfig{id: b.ID, rootfs: b.Rootfs, volume: b.Volume, netnsPath: b.NetnsPath, hostNet: b.HostNet, seccomp: b.Seccomp}
	if b.PhaseFIFO != "" {
		bc.hooks = phaseHooks(b.PhaseFIFO)
	}
	spec, err := ociConfig(s, bc)
	if err != nil {
		return nil, fmt.Errorf("oci config: %w", err)
	}
	cfg, err := json.MarshalIndent(spec, "", "\t")
	if err != nil {
		return nil, fmt.Errorf("oci config: %w", err)
	}
	return cfg, nil
}

// Write writes the bundle's config.json into dir.
func (b Bundle) Write(dir string, s platform.Spec) error {
	cfg, err := b.OCIConfig(s)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		return fmt.Errorf("oci bundle: %w", err)
	}
	return nil
}

// CFSPeriod is the CFS period (µs) of the CPU quotas in OCI bundles.
const CFSPeriod = cfsPeriod
