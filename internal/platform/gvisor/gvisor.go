// Package gvisor runs instances in gVisor sandboxes: runsc called directly
// as an OCI runtime on a bundle, like the runc platform (same config.json,
// overlay root file system, volume and bridge network namespace), without
// Docker.
//
// runsc's own flags choose what differs from runc: --platform (systrap by
// default; ptrace and kvm by option) and --network: "none" for
// network=none (loopback only), "sandbox" (gVisor's netstack taking over
// the interfaces of a network namespace isobench wired to its bridge) for
// network=bridge, "host" for network=host.
//
// Confinement: the bundle has Docker's capability set, like runc's, but no
// seccomp profile. A sandboxed process's system calls are served by
// gVisor's own kernel (the Sentry) and never reach the host kernel; runsc
// applies an OCI linux.seccomp profile only with --oci-seccomp, and then
// inside the Sentry. What confines the sandbox on the host is runsc's own
// seccomp filters on the Sentry and the gofer, always on. Inside, the
// /proc/self/status gVisor emulates reports the capability sets and no
// seccomp filter (Seccomp: 0); the conformance suite records that.
//
// Docker can also run gVisor (docker:runtime=runsc) once runsc is
// registered in /etc/docker/daemon.json; see DockerRuntimeJSON.
package gvisor

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
	"github.com/isobench/isobench/internal/platform/runc"
)

// Factory registers the gvisor platform.
var Factory = platform.Factory{
	Name:  "gvisor",
	Help:  "gVisor sandboxes: runsc on OCI bundles (no daemon); overlay rootfs; network=bridge (default, so network workloads run), none or host; platform=systrap (default), ptrace or kvm",
	Extra: []string{"platform"},
	New: func(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
		return New(ctx, o, env)
	},
	// the sentry schedules the sandbox's tasks; sched_setaffinity inside is emulated
	OwnCPUs: true,
	Cost:    platform.Cost{Instance: 800 * time.Millisecond},
	// runsc run and its sandbox, gofer... processes (runsc-*); its state
	// under --root hostnet.RunDir/runsc
	Sweep: local.Sweep(local.Traits{Code: Code, Engines: []string{Binary + "*"}, Runtime: Binary}),
}

// Code is the letter gvisor's host objects carry after local.Prefix
// (containers, cgroups, network namespaces, instance directories).
const Code = "g"

// Binary is the runsc executable looked up in $PATH.
const Binary = "runsc"

// InstallHint says how to get runsc.
const InstallHint = "scripts/install-runsc.sh (builds runsc from gvisor.dev/gvisor with Go and installs it to /usr/local/bin)"

// DockerRuntimeJSON is the /etc/docker/daemon.json entry that registers
// runsc with dockerd (then restart dockerd) so that docker:runtime=runsc
// works.
const DockerRuntimeJSON = `{"runtimes": {"runsc": {"path": "/usr/local/bin/runsc"}}}`

// Platform runs gVisor sandboxes.
type Platform struct {
	*local.Host
	sandbox string // runsc --platform
	network string // default network mode
	root    string // runsc --root state directory
}

// New makes a gvisor platform from its options.
func New(ctx context.Context, o platform.Options, env platform.Env) (*Platform, error) {
	h, err := local.NewHost("gvisor", Code, env)
	if err != nil {
		return nil, err
	}
	sb := o.Extra["platform"]
	switch sb {
	case "":
		sb = "systrap"
	case "systrap", "ptrace", "kvm":
	default:
		return nil, fmt.Errorf("gvisor: platform=%q is %w (use systrap, ptrace or kvm)", sb, platform.ErrUnsupported)
	}
	if _, err := runscNetwork(o.Base.Network); err != nil {
		return nil, err
	}
	if err := h.CheckStorage(o.Base.Storage); err != nil {
		return nil, err
	}
	return &Platform{Host: h, sandbox: sb, network: o.Base.Network, root: filepath.Join(hostnet.RunDir, Binary)}, nil
}

// runscNetwork maps a network mode to runsc's --network.
func runscNetwork(n string) (string, error) {
	switch n {
	case platform.NetNone:
		return "none", nil
	case platform.NetDefault, platform.NetBridge: // bridge by default, like Docker: network workloads run

		return "sandbox", nil
	case platform.NetHost:
		return "host", nil
	}
	return "", fmt.Errorf("gvisor: network=%q is %w (use none, host or bridge)", n, platform.ErrUnsupported)
}

// command returns runsc's argv with the global flags for a network mode.
func (p *Platform) command(runscNet string, args ...string) []string {
	return append([]string{Binary, "--root", p.root, "--platform=" + p.sandbox, "--network=" + runscNet}, args...)
}

// Available checks runsc, overlayfs and, for platform=kvm, /dev/kvm.
func (p *Platform) Available(ctx context.Context) error {
	if _, err := exec.LookPath(Binary); err != nil {
		return fmt.Errorf("gvisor: runsc is not installed: run %s", InstallHint)
	}
	if err := p.CheckOverlay(); err != nil {
		return err
	}
	if p.sandbox == "kvm" {
		if _, err := os.Stat("/dev/kvm"); err != nil {
			return fmt.Errorf("gvisor: platform=kvm needs /dev/kvm: %w (use platform=systrap)", err)
		}
	}
	if err := os.MkdirAll(p.root, 0o700); err != nil {
		return fmt.Errorf("gvisor: %w", err)
	}
	argv := p.command("none", "list")
	if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("gvisor: runsc does not work here (%s: %v: %s); reinstall with %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)), InstallHint)
	}
	return nil
}

// Version is runsc's version: the gvisor.dev/gvisor module version it was
// built from (go install leaves `runsc --version` without one), else what
// runsc --version says.
func Version(ctx context.Context) (string, error) {
	path, err := exec.LookPath(Binary)
	if err != nil {
		return "", err
	}
	if bi, err := buildinfo.ReadFile(path); err == nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version, nil
	}
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("runsc --version: %w", err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(strings.TrimPrefix(line, "runsc version")), nil
}

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"runtime": Binary, "gvisor_platform": p.sandbox, "cgroup_version": strconv.Itoa(cgroup.Version()), "storage_driver": "overlay"}
	v, err := Version(ctx)
	if err != nil {
		f["error"] = err.Error()
		return f
	}
	f["runsc_version"] = v
	if out, err := exec.CommandContext(ctx, Binary, "--version").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if s, ok := strings.CutPrefix(l, "spec: "); ok {
				f["oci_spec"] = strings.TrimSpace(s)
			}
		}
	}
	return f
}

var _ platform.Preparer = (*Platform)(nil)

// Create writes the bundle and starts `runsc run`, returning once the main
// process has started (or already ended).
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	if s.Network == platform.NetDefault {
		s.Network = p.network
	}
	if s.Network == platform.NetDefault {
		s.Network = platform.NetBridge
	}
	rnet, err := runscNetwork(s.Network)
	if err != nil {
		return nil, err
	}
	in := &Instance{p: p, rnet: rnet}
	in.Instance, err = p.Begin(ctx, s, local.Setup{DefaultNetwork: platform.NetBridge, Netns: true, PhaseFIFO: true}, in)
	if err != nil {
		return nil, err
	}
	defer in.Undo(ctx, &err)
	b := runc.Bundle{ID: in.ID(), Rootfs: in.Overlay.Merged, Volume: in.Volume, HostNet: in.Network == platform.NetHost, PhaseFIFO: in.PhaseFIFO}
	if in.Netns != nil {
		b.NetnsPath = in.Netns.Path()
	}
	if err := b.Write(in.Dir, s); err != nil {
		return nil, fmt.Errorf("gvisor: %w", err)
	}
	if err := os.MkdirAll(p.root, 0o700); err != nil {
		return nil, fmt.Errorf("gvisor: %w", err)
	}
	argv := p.command(rnet, "run", "--bundle", in.Dir, in.ID())
	if err := in.Start(exec.Command(argv[0], argv[1:]...)); err != nil {
		return nil, err
	}
	started, err := in.WaitPhase(ctx, "started")
	switch {
	case err != nil:
		return nil, err
	case started:
	case len(s.Main) == 0:
		return nil, in.EndedAtOnce("")
	default:
		code, _ := local.ExitStatus(in.MainErr)
		if code != 0 && strings.Contains(in.Stderr.String(), "creating container") {
			return nil, fmt.Errorf("runsc run %s: %s", in.ID(), in.Stderr.String())
		}
	}
	return in, nil // a short main process's status is Wait's
}

// Instance is one gVisor sandbox ("isob-g...").
type Instance struct {
	*local.Instance
	p    *Platform
	rnet string // runsc --network
}

// Exec runs argv in the sandbox with `runsc exec`, stdio passed through;
// cancelling ctx kills runsc exec (and so the process in the sandbox).
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if err := in.CheckExec(argv); err != nil {
		return err
	}
	full := in.p.command(in.rnet, runc.ExecArgs(in.ID(), argv)...)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	return local.Run(ctx, cmd, argv, "runsc exec")
}

// Facts implements platform.Instance.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := in.Instance.Facts(ctx)
	f["runtime"] = Binary
	f["gvisor_platform"] = in.p.sandbox
	f["gvisor_network"] = in.rnet
	f["capabilities"] = "docker-default"
	f["seccomp_profile"] = "gvisor-sentry" // see the package doc
	f["cgroup"] = "/isobench/" + in.ID()
	return f
}

// Stop implements local.Engine: `runsc kill`.
func (in *Instance) Stop(ctx context.Context) {
	kill := in.p.command(in.rnet, "kill", in.ID(), "KILL")
	exec.CommandContext(ctx, kill[0], kill[1:]...).Run()
}

// Remove implements local.Engine: `runsc delete --force`.
func (in *Instance) Remove(ctx context.Context) error {
	return local.RemoveCommand(ctx, in.p.command(in.rnet, "delete", "--force", in.ID()), "runsc delete "+in.ID())
}
