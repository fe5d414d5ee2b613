package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/remote"
	"github.com/isobench/isobench/internal/runner"
	"github.com/isobench/isobench/internal/workload/netbench"
)

// cmdPlatformd is the hidden "isobench platformd SPEC": the remote end of a
// platform given host=ssh://..., started by the host over SSH; it serves
// the platform on its stdin and stdout.
func cmdPlatformd(ctx context.Context, st *State, args []string) error {
	fs := newFlags(st, "platformd", "platformd [--state-dir DIR] PLATFORM-SPEC (started by isobench over SSH)")
	stateDir := fs.String("state-dir", "", "where images and rootfs trees are kept")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usage("platformd takes one platform spec")
	}
	env := platform.Env{AgentBinary: st.Executable, StateDir: st.stateDir(*stateDir), Log: st.Stderr}
	return remote.Platformd(ctx, st.Platforms, env, fs.Arg(0), st.Stdin, os.Stdout)
}

// checkRemote refuses workloads whose client or server runs in isobench on
// the host when a platform runs on another machine: the host's end would
// be this machine, reaching the remote instances through the SSH
// connection, so it would measure the tunnel, not the platform. Network
// workloads run there with client=instance,server=instance.
func checkRemote(plan runner.Plan, targets []target) error {
	for _, t := range targets {
		host := t.opts.Extra["host"]
		if host == "" {
			continue
		}
		for _, j := range plan.Jobs {
			for _, side := range []string{"client", "server"} {
				if j.Def.Host != nil && j.Params.Str(side) == netbench.OnHost {
					return fmt.Errorf("%s with %s=host cannot run on %s (on %s): the host-side %s would run on this machine and reach the remote instances through the SSH connection; use client=instance,server=instance", j.Def.Name, side, t.opts.Name, host, side)
				}
			}
		}
	}
	return nil
}
