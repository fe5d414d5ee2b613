package lxc

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
)

var _ platform.Footprinter = (*Instance)(nil)

// Footprint reads the container's cgroup (found from its init process,
// which lxc-info names), the overlay's upper directory and the volume
// directory for the disk it added, and gives lxc-execute, the container's
// monitor, as the engine: LXC has no daemon.
func (in *Instance) Footprint(ctx context.Context) (platform.Footprint, error) {
	out, err := exec.CommandContext(ctx, "lxc-info", "-n", in.ID(), "-P", in.p.lxcpath, "-p", "-H").Output()
	if err != nil {
		return platform.Footprint{}, fmt.Errorf("lxc-info %s: %w", in.ID(), err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 0 {
		return platform.Footprint{}, fmt.Errorf("lxc-info %s: no init pid in %q (is it running?)", in.ID(), out)
	}
	mem, cpu, err := hostos.ProcessCgroups(pid)
	if err != nil {
		return platform.Footprint{}, fmt.Errorf("lxc %s: %w", in.ID(), err)
	}
	// a booted system's init sits in a cgroup of its own below the
	// container's (init.scope): count the whole container, its services too
	fp, err := in.CgroupFootprint("lxc "+in.ID(), containerCgroup(mem), containerCgroup(cpu))
	if err != nil {
		return fp, err
	}
	if in.Main != nil && in.Main.Process != nil {
		fp.EnginePIDs = []int{in.Main.Process.Pid}
	}
	return fp, nil
}

// containerCgroup cuts a cgroup path after its lxc.payload.NAME part.
func containerCgroup(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "lxc.payload.") {
			return strings.Join(parts[:i+1], "/")
		}
	}
	return path
}
