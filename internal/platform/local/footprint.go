package local

import (
	"fmt"
	"path/filepath"

	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
)

// Disk is what the instance added on disk: its overlay's upper directory
// (the root file system's writes, the scratch directory with
// storage=rootfs) and its volume (storage=volume).
func (in *Instance) Disk() (int64, error) {
	return hostos.DisksUsage(filepath.Join(in.Dir, "upper"), in.Volume)
}

// CgroupFootprint is the footprint of an instance whose processes run in
// the cgroup with memory accounting in directory mem and CPU accounting in
// cpu: what that cgroup charged, and what the instance added on disk
// (Disk). EnginePIDs is left to the caller. what prefixes errors (e.g.
// "lxc c1").
func (in *Instance) CgroupFootprint(what, mem, cpu string) (platform.Footprint, error) {
	var fp platform.Footprint
	var err error
	if fp.MemoryBytes, fp.CPUSeconds, err = hostos.CgroupUsage(mem, cpu); err != nil {
		return fp, fmt.Errorf("%s: %w", what, err)
	}
	if fp.DiskBytes, err = in.Disk(); err != nil {
		return fp, fmt.Errorf("%s: %w", what, err)
	}
	return fp, nil
}

// MainPID is the pid of the main process isobench started while it runs,
// else 0: the engine's monitor process for runtimes without a daemon
// (nspawn, runc, crun, runsc).
func (in *Instance) MainPID() int {
	if in.Main != nil && in.Main.Process != nil && !in.Ended() {
		return in.Main.Process.Pid
	}
	return 0
}
