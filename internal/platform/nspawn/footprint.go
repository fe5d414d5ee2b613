package nspawn

import (
	"context"
	"fmt"

	"github.com/isobench/isobench/internal/platform"
)

var _ platform.Footprinter = (*Instance)(nil)

// Footprint reads the cgroup isobench made for the instance (memory,
// CPU), the overlay's upper directory and the volume for the disk it
// added, and gives the systemd-nspawn process isobench started, the
// container's monitor, as the engine: nspawn has no daemon, and with
// --register=no systemd-machined is not involved.
//
// The whole group is counted: nspawn's "payload" and "supervisor"
// sub-cgroups, and a booted system's init.scope and service cgroups below
// them, are inside it, and memory and cpuacct usage are hierarchical.
func (in *Instance) Footprint(ctx context.Context) (platform.Footprint, error) {
	var fp platform.Footprint
	if in.Closed() || in.cg == nil || in.cg.g == nil {
		return fp, fmt.Errorf("nspawn: instance %s is closed", in.ID())
	}
	mem, cpu := in.cg.g.AccountingDirs()
	fp, err := in.CgroupFootprint("nspawn "+in.ID(), mem, cpu)
	if err != nil {
		return fp, err
	}
	if pid := in.MainPID(); pid > 0 {
		// "isobench agent cgexec", unshare (without --fork) and sh all
		// exec the next one: this pid is systemd-nspawn's
		fp.EnginePIDs = []int{pid}
	}
	return fp, nil
}
