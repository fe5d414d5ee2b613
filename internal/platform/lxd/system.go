package lxd

import (
	"context"
	"io"
	"strings"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
)

// parseInit reads option init=: "" or "app" (the agent as the container's
// init), "system" (the image's systemd).
func parseInit(v string) (bool, error) { return local.ParseInit("lxd", v) }

// checkSystem refuses init=system with an image that has no init system.
func (p *Platform) checkSystem(s platform.Spec) error {
	return local.CheckBootable("lxd", "init=system", p.system, s)
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
	run := func(ctx context.Context, argv []string, out io.Writer) {
		in.exec(ctx, argv, platform.ExecIO{Stdout: out, Stderr: out})
	}
	st, err := local.WaitBooted(ctx, run, nil, "lxd: system container "+in.id, nil)
	if err == nil {
		in.bootState = st
	}
	return err
}
