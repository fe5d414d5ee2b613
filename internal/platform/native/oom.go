package native

import (
	"context"
	"errors"

	"github.com/isobench/isobench/internal/hostos"
)

// OOMKilled implements platform.OOMReporter: whether the OOM killer killed
// a process in the instance's cgroup (only instances with limits have one).
func (in *Instance) OOMKilled(ctx context.Context) (bool, error) {
	if in.cg == nil || in.spec.Memory == 0 {
		return false, nil
	}
	var errs []error
	for _, d := range in.cg.Dirs() {
		n, err := hostos.CgroupOOMKills(d)
		if err == nil {
			return n > 0, nil
		}
		errs = append(errs, err)
	}
	return false, errors.Join(errs...)
}
