package docker

import (
	"context"
	"fmt"
	"net/http"

	"github.com/isobench/isobench/internal/hostos"
)

// OOMKilled implements platform.OOMReporter. Docker's State.OOMKilled
// covers the container's main process; a process run with exec and killed
// by the OOM killer shows only in the container's memory cgroup, which is
// read through the main process's /proc/PID/cgroup.
func (in *Instance) OOMKilled(ctx context.Context) (bool, error) {
	var ci struct {
		State struct {
			OOMKilled bool
			Pid       int
		}
	}
	if err := in.p.c.do(ctx, http.MethodGet, "/containers/"+in.id+"/json", nil, nil, &ci); err != nil {
		return false, fmt.Errorf("docker inspect %s: %w", in.name, err)
	}
	if ci.State.OOMKilled {
		return true, nil
	}
	if ci.State.Pid <= 0 {
		return false, nil
	}
	dir, err := hostos.MemoryCgroupOf(ci.State.Pid)
	if err != nil {
		return false, fmt.Errorf("docker: memory cgroup of %s: %w", in.name, err)
	}
	n, err := hostos.CgroupOOMKills(dir)
	if err != nil {
		return false, fmt.Errorf("docker: %w", err)
	}
	return n > 0, nil
}
