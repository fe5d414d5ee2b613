package native

import (
	"context"
	"errors"
	"fmt"

	"github.com/isobench/isobench/internal/hostos"
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
	memBytes, cpuSeconds, err := hostos.CgroupUsage(in.cg.AccountingDirs())
	if err != nil {
		return platform.Footprint{}, fmt.Errorf("native: %w", err)
	}
	fp := platform.Footprint{MemoryBytes: memBytes, CPUSeconds: cpuSeconds}
	if fp.DiskBytes, err = hostos.DiskUsage(in.dir); err != nil {
		return fp, fmt.Errorf("native: %w", err)
	}
	return fp, nil
}
