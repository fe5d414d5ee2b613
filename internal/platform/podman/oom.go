package podman

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/hostos"
)

// OOMKilled implements platform.OOMReporter: podman's State.OOMKilled
// (the main process), else the OOM kill counter of the container's memory
// cgroup, which also counts processes run with exec.
func (in *Instance) OOMKilled(ctx context.Context) (bool, error) {
	out, err := podman(ctx, nil, "inspect", "--format", "{{.State.OOMKilled}} {{.State.Pid}}", in.id)
	if err != nil {
		return false, err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return false, fmt.Errorf("podman inspect %s: unexpected %q", in.name, out)
	}
	if f[0] == "true" {
		return true, nil
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil || pid <= 0 {
		return false, nil
	}
	dir, err := hostos.MemoryCgroupOf(pid)
	if err != nil {
		return false, fmt.Errorf("podman: memory cgroup of %s: %w", in.name, err)
	}
	n, err := hostos.CgroupOOMKills(dir)
	if err != nil {
		return false, fmt.Errorf("podman: %w", err)
	}
	return n > 0, nil
}
