package podman

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
)

var _ platform.Footprinter = (*Instance)(nil)

// sizeInspect is the part of `podman container inspect --size` used here.
type sizeInspect struct {
	SizeRw *int64
	State  struct {
		Pid        int
		ConmonPid  int
		CgroupPath string
		Running    bool
	}
}

// Footprint reads the container's cgroup (memory, CPU: found from its
// init's /proc/PID/cgroup, else from the cgroup path podman reports), the
// disk it added (its writable layer's size, SizeRw, plus the volume
// directory with storage=volume), and gives this container's conmon as
// the engine: podman has no daemon, conmon is the container's monitor.
func (in *Instance) Footprint(ctx context.Context) (platform.Footprint, error) {
	var fp platform.Footprint
	if in.isClosed() {
		return fp, fmt.Errorf("podman: instance %s is closed", in.name)
	}
	out, err := podman(ctx, nil, "container", "inspect", "--size", in.id)
	if err != nil {
		return fp, err
	}
	var all []sizeInspect
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != 1 {
		return fp, fmt.Errorf("podman container inspect %s: unexpected answer (%v): %.200q", in.name, err, out)
	}
	si := all[0]
	mem, cpu, err := containerCgroups(si.State.Pid, si.State.CgroupPath)
	if err != nil {
		return fp, fmt.Errorf("podman %s: %w", in.name, err)
	}
	if fp.MemoryBytes, fp.CPUSeconds, err = hostos.CgroupUsage(mem, cpu); err != nil {
		return fp, fmt.Errorf("podman %s: %w", in.name, err)
	}
	if si.SizeRw != nil {
		fp.DiskBytes = *si.SizeRw
	}
	vol, err := hostos.DisksUsage(in.volume)
	if err != nil {
		return fp, fmt.Errorf("podman %s: %w", in.name, err)
	}
	fp.DiskBytes += vol
	if pid := conmonPid(si.State.ConmonPid, si.State.Pid); pid > 0 {
		fp.EnginePIDs = []int{pid}
	}
	return fp, nil
}

// containerCgroups finds the container's memory and CPU accounting
// directories: from its init process when it runs, else podman's
// CgroupPath in the v1 memory and cpuacct hierarchies or the v2 unified
// one.
func containerCgroups(pid int, cgroupPath string) (mem, cpu string, err error) {
	if pid > 0 {
		if mem, cpu, err := hostos.ProcessCgroups(pid); err == nil {
			return mem, cpu, nil
		}
	}
	if cgroupPath != "" && !strings.Contains(cgroupPath, "..") {
		if cgroup.Version() == 2 {
			d := filepath.Join(cgroup.Root, cgroupPath)
			if isDir(d) {
				return d, d, nil
			}
		} else {
			m := filepath.Join(cgroup.Root, "memory", cgroupPath)
			for _, h := range []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"} {
				if c := filepath.Join(cgroup.Root, h, cgroupPath); isDir(m) && isDir(c) {
					return m, c, nil
				}
			}
		}
	}
	return "", "", fmt.Errorf("cannot find the container's cgroup (pid %d, cgroup path %q): has it ended?", pid, cgroupPath)
}

// conmonPid is the container's conmon: inspect's ConmonPid, or else the
// parent of the container's init, when that process is a conmon.
func conmonPid(conmon, pid int) int {
	for _, c := range []int{conmon, hostos.ParentPID(pid)} {
		if c > 0 && comm(c) == "conmon" {
			return c
		}
	}
	return 0
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
