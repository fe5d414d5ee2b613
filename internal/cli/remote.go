package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

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

// expandHosts runs every platform on every host of study.Hosts (from
// --host or hosts: in a study file): "docker" with hosts local and
// ssh://root@a becomes "docker" and "docker:host=ssh://root@a". A platform
// that names its own host= is kept as it is. The hosts are folded into
// the platforms, so the stored study says exactly what ran.
func expandHosts(study *Study) error {
	if len(study.Hosts) == 0 {
		return nil
	}
	seen := map[string]bool{}
	for _, h := range study.Hosts {
		if h != "local" {
			if _, err := remote.ParseHost(h); err != nil {
				return fmt.Errorf("--host: %w (or local for this machine)", err)
			}
		}
		if seen[h] {
			return fmt.Errorf("--host %s given twice", h)
		}
		seen[h] = true
	}
	var out []string
	for _, p := range study.Platforms {
		_, opts, hasOpts := strings.Cut(p, ":")
		if hasOpts && hasHostOption(opts) {
			out = append(out, p)
			continue
		}
		for _, h := range study.Hosts {
			switch {
			case h == "local":
				out = append(out, p)
			case hasOpts && strings.TrimSpace(opts) != "":
				out = append(out, p+",host="+h)
			default:
				out = append(out, strings.TrimSuffix(p, ":")+":host="+h)
			}
		}
	}
	study.Platforms = out
	study.Hosts = nil
	return nil
}

func hasHostOption(opts string) bool {
	for _, kv := range strings.Split(opts, ",") {
		if k, _, _ := strings.Cut(kv, "="); strings.TrimSpace(k) == "host" {
			return true
		}
	}
	return false
}

// doctorHosts runs "isobench doctor" on each host over SSH (after the
// local table) and says why a host cannot be asked.
func doctorHosts(ctx context.Context, st *State, hosts []string) {
	for _, h := range hosts {
		fmt.Fprintf(st.Stdout, "\nhost %s:\n", h)
		if err := remote.RunThere(ctx, h, st.Executable, st.Stdout, st.Stderr, "doctor"); err != nil {
			fmt.Fprintf(st.Stdout, "unreachable: %v\n", err)
		}
	}
}
