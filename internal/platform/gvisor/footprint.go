package gvisor

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/runc"
)

var _ platform.Footprinter = (*Instance)(nil)

// Footprint reads the sandbox's cgroup, its overlay's upper directory and
// its volume, and names the runsc processes outside that cgroup as the
// engine.
//
// Memory and CPU: isobench gives runsc the bundle's cgroupsPath
// (/isobench/<id>, no --ignore-cgroups, cgroupfs rather than systemd), and
// runsc starts both its sandbox (`runsc-sandbox boot`: the Sentry, gVisor's
// kernel, and its systrap stubs) and its gofer in that cgroup. So the
// cgroup holds what the host pays for the sandbox, the Sentry's memory
// (the application's memory is the Sentry's) included.
//
// Disk: runsc's default --overlay2=root:self keeps the root file system's
// upper layer in a sparse "filestore" file it creates in the root
// directory it was given, i.e. in the instance's overlay upper directory
// on the host (.gvisor.filestore.<id>): what the sandbox writes to its
// root file system, the scratch directory with storage=rootfs included,
// shows up there as allocated blocks (and as page cache in the cgroup
// while it is cached); a volume is a bind mount, counted at its host
// directory.
//
// Engine: the `runsc run` process isobench started, which stays outside
// the cgroup, and any other child of it found outside the cgroup. The
// sandbox and gofer processes are left out on purpose: they are charged
// to the instance's cgroup already, and naming them as the engine too
// would count their memory and CPU twice.
func (in *Instance) Footprint(ctx context.Context) (platform.Footprint, error) {
	var fp platform.Footprint
	if in.Closed() {
		return fp, fmt.Errorf("gvisor: instance %s is closed", in.ID())
	}
	var mem, cpu string
	if run := in.MainPID(); run > 0 {
		fp.EnginePIDs = []int{run}
		for _, pid := range childPIDs(run) {
			m, c, err := hostos.ProcessCgroups(pid)
			if err == nil {
				m, c = runc.ContainerCgroup(m, in.ID()), runc.ContainerCgroup(c, in.ID())
			}
			if err != nil || m == "" || c == "" {
				if hostos.ProcExists(pid) {
					fp.EnginePIDs = append(fp.EnginePIDs, pid)
				}
				continue
			}
			mem, cpu = m, c
		}
	}
	if mem == "" {
		var err error
		if mem, cpu, err = runc.ConfiguredCgroupDirs("/sys/fs/cgroup", in.ID()); err != nil {
			return fp, fmt.Errorf("gvisor: %w", err)
		}
	}
	usage, err := in.CgroupFootprint("gvisor "+in.ID(), mem, cpu)
	usage.EnginePIDs = fp.EnginePIDs
	return usage, err
}

// childPIDs lists the processes whose parent is pid (from /proc/PID/stat).
func childPIDs(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if hostos.ParentPID(p) == pid {
			out = append(out, p)
		}
	}
	return out
}

var _ platform.OOMReporter = (*Instance)(nil)

// OOMKilled implements platform.OOMReporter: the sandbox's cgroup holds
// the Sentry, whose memory is the application's, so the OOM killer kills
// the Sentry and every command in the sandbox ends with an RPC error
// ("urpc method ... failed: EOF"), never a SIGKILL status.
func (in *Instance) OOMKilled(ctx context.Context) (bool, error) { return runc.OOMKilled(in.ID()) }
