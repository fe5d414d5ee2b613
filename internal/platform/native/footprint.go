package native

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/isobench/isobench/internal/platform"
)

var _ platform.Footprinter = (*Instance)(nil)

// Footprint reads the instance's cgroup (memory, CPU) and the size of its
// scratch directory. Native has no engine, so EnginePIDs is empty. Only an
// instance created with cpus or memory, or with Spec.Accounting (the
// footprint workload asks for it), has a cgroup; without one there is
// nothing to attribute memory and CPU to, and Footprint says so.
func (in *Instance) Footprint(ctx context.Context) (platform.Footprint, error) {
	if in.cg == nil {
		return platform.Footprint{}, errors.New("native: footprint needs the instance's cgroup, and this instance has none: set a limit (e.g. native:memory=64g) so its processes run in a cgroup")
	}
	var fp platform.Footprint
	var memOK, cpuOK bool
	for _, d := range in.cg.Dirs() {
		if !memOK && exists(filepath.Join(d, "memory.stat")) {
			m, err := platform.CgroupMemory(d)
			if err != nil {
				return fp, fmt.Errorf("native: %w", err)
			}
			fp.MemoryBytes, memOK = m, true
		}
		if !cpuOK && (exists(filepath.Join(d, "cpuacct.usage")) || exists(filepath.Join(d, "cpu.stat")) && !exists(filepath.Join(d, "cpu.cfs_period_us"))) {
			c, err := platform.CgroupCPU(d)
			if err != nil {
				return fp, fmt.Errorf("native: %w", err)
			}
			fp.CPUSeconds, cpuOK = c, true
		}
	}
	if !memOK || !cpuOK {
		return fp, fmt.Errorf("native: the instance's cgroup (%v) has no memory or CPU accounting", in.cg.Dirs())
	}
	du, err := platform.DiskUsage(in.dir)
	if err != nil {
		return fp, fmt.Errorf("native: %w", err)
	}
	fp.DiskBytes = du
	return fp, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
