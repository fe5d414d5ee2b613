package runc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
)

var _ platform.Footprinter = (*Instance)(nil)

// Footprint reads the container's cgroup (memory, CPU), its overlay's
// upper directory and its volume for the disk it added, and gives the
// `runc run` / `crun run` process isobench started, the container's
// monitor, as the engine: neither runtime has a daemon.
func (in *Instance) Footprint(ctx context.Context) (platform.Footprint, error) {
	var fp platform.Footprint
	if in.Closed() {
		return fp, fmt.Errorf("%s: instance %s is closed", in.p.runtime, in.ID())
	}
	mem, cpu, err := CgroupDirs(in.ID(), in.initPid)
	if err != nil {
		return fp, fmt.Errorf("%s: %w", in.p.runtime, err)
	}
	if fp, err = in.CgroupFootprint(in.p.runtime+" "+in.ID(), mem, cpu); err != nil {
		return fp, err
	}
	if pid := in.MainPID(); pid > 0 {
		// crun on a hybrid host runs as `unshare -m sh -c '... exec crun'`:
		// unshare (without --fork) and sh exec, so this pid is crun's
		fp.EnginePIDs = []int{pid}
	}
	return fp, nil
}

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// CgroupDirs finds the memory and CPU accounting cgroup directories of the
// OCI container id (runc, crun, runsc): from its init's host pid when that
// runs in a cgroup named after id (a pid that was reused runs elsewhere),
// else at the cgroupsPath isobench configures ("/isobench/<id>", see
// ociConfig) in the v1 memory and cpuacct hierarchies or in the v2
// unified one.
func CgroupDirs(id string, pid int) (mem, cpu string, err error) {
	if pid > 0 {
		if m, c, err := hostos.ProcessCgroups(pid); err == nil {
			// the whole container's cgroup, when the init process sits
			// in a sub-cgroup of it (a booted system's init.scope)
			if m, c = ContainerCgroup(m, id), ContainerCgroup(c, id); m != "" && c != "" {
				return m, c, nil
			}
		}
	}
	return ConfiguredCgroupDirs(cgroupRoot, id)
}

// ConfiguredCgroupDirs is where the cgroup "/isobench/<id>" is under root:
// the v1 memory and cpuacct hierarchies (cpuacct may be mounted together
// with cpu as "cpu,cpuacct"), else the v2 unified hierarchy.
func ConfiguredCgroupDirs(root, id string) (mem, cpu string, err error) {
	rel := filepath.Join("isobench", id)
	mem = filepath.Join(root, "memory", rel)
	if isDir(mem) {
		for _, h := range []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"} {
			if c := filepath.Join(root, h, rel); isDir(c) {
				return mem, c, nil
			}
		}
	}
	if u := filepath.Join(root, rel); isDir(u) && exists(filepath.Join(u, "memory.current")) {
		return u, u, nil
	}
	return "", "", fmt.Errorf("no cgroup /%s with memory and CPU accounting under %s (has the container ended?)", rel, root)
}

// ContainerCgroup cuts cgroup directory dir after its component named id:
// the container's own cgroup, also when dir is a sub-cgroup of it; "" when
// no component is id (not this container's cgroup).
func ContainerCgroup(dir, id string) string {
	parts := strings.Split(dir, "/")
	for i, p := range parts {
		if p == id {
			return strings.Join(parts[:i+1], "/")
		}
	}
	return ""
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// OOMKilled says whether the kernel's OOM killer killed a process in the
// cgroup isobench configures for OCI container id ("/isobench/<id>":
// runc's, crun's and runsc's, whose Sentry holds the application's memory,
// so a sandbox killed for want of memory ends every command in it with an
// RPC error rather than a SIGKILL status). An error means the cgroup or its
// counter cannot be read (the container's cgroup is gone).
func OOMKilled(id string) (bool, error) {
	mem, _, err := ConfiguredCgroupDirs(cgroupRoot, id)
	if err != nil {
		return false, err
	}
	n, err := hostos.CgroupOOMKills(mem)
	return n > 0, err
}

var _ platform.OOMReporter = (*Instance)(nil)

// OOMKilled implements platform.OOMReporter.
func (in *Instance) OOMKilled(ctx context.Context) (bool, error) { return OOMKilled(in.ID()) }
