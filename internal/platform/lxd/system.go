package lxd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
)

// parseInit reads option init=: "" or "app" (the agent as the container's
// init), "system" (the image's systemd).
func parseInit(v string) (bool, error) {
	switch v {
	case "", "app":
		return false, nil
	case "system":
		return true, nil
	}
	return false, fmt.Errorf("lxd: init=%q must be app or system", v)
}

// checkSystem refuses init=system with an image that has no init system.
func (p *Platform) checkSystem(s platform.Spec) error {
	if !p.system {
		return nil
	}
	if err := image.CheckBootable(s.Image); err != nil {
		return fmt.Errorf("lxd: init=system boots the image's systemd: %w", err)
	}
	return nil
}

// rawLXC is the instance's raw.lxc: the agent as init, or with
// init=system the image's systemd, given the units to mask as its own
// arguments (systemd in a container reads kernel command line options
// from its argv), with its cgroups mounted read-write.
func (p *Platform) rawLXC() string {
	if !p.system {
		return "lxc.init.cmd = " + image.AgentPath + " agent idle\nlxc.mount.auto = cgroup:ro:force\n"
	}
	args := []string{"/sbin/init"}
	for _, u := range image.MaskedUnits {
		args = append(args, "systemd.mask="+u)
	}
	// cgroup:rw:force: the controllers mounted for systemd to manage (on a
	// v1 host with cpu and cpuacct apart, LXD's own setup leaves the cpu
	// controller unmounted, and the container would not see its quota)
	return "lxc.init.cmd = " + strings.Join(args, " ") + "\nlxc.mount.auto = cgroup:rw:force\n"
}

// waitBooted waits until systemd says the boot finished (running, or
// degraded: a unit failed).
func (in *Instance) waitBooted(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, image.BootTimeout)
	defer cancel()
	var last string
	for {
		var out bytes.Buffer
		in.exec(ctx, []string{"systemctl", "is-system-running", "--wait"}, platform.ExecIO{Stdout: &out, Stderr: &out})
		last = strings.TrimSpace(out.String())
		if i := strings.LastIndexByte(last, '\n'); i >= 0 {
			last = last[i+1:]
		}
		if last == "running" || last == "degraded" {
			in.bootState = last
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lxd: system container %s did not finish booting (systemctl is-system-running said %q): %w", in.id, last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
