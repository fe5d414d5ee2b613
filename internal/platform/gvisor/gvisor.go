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
// Docker can also run gVisor (docker:runtime=runsc) once runsc is
// registered in /etc/docker/daemon.json; see DockerRuntimeJSON.
package gvisor

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
	Help:  "gVisor sandboxes: runsc on OCI bundles (no daemon); overlay rootfs; network=none (default), host or bridge; platform=systrap (default), ptrace or kvm",
	Extra: []string{"platform"},
	New: func(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
		return New(ctx, o, env)
	},
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
	sandbox string // runsc --platform
	network string // default network mode
	root    string // runsc --root state directory
	env     platform.Env
	rootfs  *local.Rootfs
}

// New makes a gvisor platform from its options.
func New(ctx context.Context, o platform.Options, env platform.Env) (*Platform, error) {
	if env.AgentBinary == "" || env.StateDir == "" {
		return nil, errors.New("gvisor: needs an agent binary and a state directory")
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
	if err := checkStorage(o.Base.Storage); err != nil {
		return nil, err
	}
	return &Platform{
		sandbox: sb,
		network: o.Base.Network,
		root:    filepath.Join(hostnet.RunDir, Binary),
		env:     env,
		rootfs:  &local.Rootfs{Env: env},
	}, nil
}

// runscNetwork maps a network mode to runsc's --network.
func runscNetwork(n string) (string, error) {
	switch n {
	case platform.NetDefault, platform.NetNone:
		return "none", nil
	case platform.NetBridge:
		return "sandbox", nil
	case platform.NetHost:
		return "host", nil
	}
	return "", fmt.Errorf("gvisor: network=%q is %w (use none, host or bridge)", n, platform.ErrUnsupported)
}

func checkStorage(s string) error {
	switch s {
	case "", platform.StorageRootfs, platform.StorageVolume:
		return nil
	}
	return fmt.Errorf("gvisor: storage=%q is %w (use rootfs or volume)", s, platform.ErrUnsupported)
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "gvisor" }

// command returns runsc's argv with the global flags for a network mode.
func (p *Platform) command(runscNet string, args ...string) []string {
	return append([]string{Binary, "--root", p.root, "--platform=" + p.sandbox, "--network=" + runscNet}, args...)
}

// Available checks runsc, overlayfs and, for platform=kvm, /dev/kvm.
func (p *Platform) Available(ctx context.Context) error {
	if _, err := exec.LookPath(Binary); err != nil {
		return fmt.Errorf("gvisor: runsc is not installed: run %s", InstallHint)
	}
	b, _ := os.ReadFile("/proc/filesystems")
	if !strings.Contains(string(b), "\toverlay\n") {
		return errors.New("gvisor: the kernel has no overlay file system (modprobe overlay)")
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

// Prepare builds the profile's root file system (once per content digest).
func (p *Platform) Prepare(ctx context.Context, profile string) error {
	_, err := p.rootfs.Dir(ctx, profile)
	return err
}

var _ platform.Preparer = (*Platform)(nil)

// Close implements platform.Platform; instances are closed by their owner.
func (p *Platform) Close(ctx context.Context) error { return nil }

// Create writes the bundle and starts `runsc run`, returning once the main
// process has started (or already ended).
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	if err := checkStorage(s.Storage); err != nil {
		return nil, err
	}
	if s.Network == platform.NetDefault {
		s.Network = p.network
	}
	rnet, err := runscNetwork(s.Network)
	if err != nil {
		return nil, err
	}
	lower, err := p.rootfs.Dir(ctx, s.Image)
	if err != nil {
		return nil, fmt.Errorf("gvisor: %w", err)
	}
	id := local.NewID(Code)
	in := &Instance{p: p, id: id, spec: s, rnet: rnet, dir: local.InstanceDir(p.env.StateDir, id), done: make(chan struct{}), network: s.Network}
	if in.network == platform.NetDefault {
		in.network = platform.NetNone
	}
	defer func() {
		if err != nil {
			in.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := os.MkdirAll(in.dir, 0o755); err != nil {
		return nil, fmt.Errorf("gvisor: %w", err)
	}
	if in.overlay, err = local.MountOverlay(lower, in.dir); err != nil {
		return nil, fmt.Errorf("gvisor: %w", err)
	}
	b := runc.Bundle{ID: id, Rootfs: in.overlay.Merged, HostNet: in.network == platform.NetHost}
	if s.Storage == platform.StorageVolume {
		b.Volume = filepath.Join(in.dir, "volume")
		if err := os.Mkdir(b.Volume, 0o777); err != nil {
			return nil, fmt.Errorf("gvisor: volume: %w", err)
		}
	}
	if in.network == platform.NetBridge {
		if in.netns, err = local.NewBridgeNetns(ctx, hostnet.Default(p.env.StateDir), id); err != nil {
			return nil, fmt.Errorf("gvisor: %w", err)
		}
		b.NetnsPath = in.netns.Path()
	}
	// phases: OCI hooks write a line to a FIFO, opened read-write here so
	// that neither side blocks on open
	b.PhaseFIFO = filepath.Join(in.dir, "phases")
	if err := syscall.Mkfifo(b.PhaseFIFO, 0o600); err != nil {
		return nil, fmt.Errorf("gvisor: phase fifo: %w", err)
	}
	phases, err := os.OpenFile(b.PhaseFIFO, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("gvisor: phase fifo: %w", err)
	}
	defer phases.Close()
	if err := b.Write(in.dir, s); err != nil {
		return nil, fmt.Errorf("gvisor: %w", err)
	}
	if err := os.MkdirAll(p.root, 0o700); err != nil {
		return nil, fmt.Errorf("gvisor: %w", err)
	}

	argv := p.command(rnet, "run", "--bundle", in.dir, id)
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := local.StartMain(cmd, s.MainStdout, &in.stderr, &in.mainErr, in.done); err != nil {
		return nil, fmt.Errorf("runsc run: %w", err)
	}
	in.main = cmd

	got := make(chan string, 2)
	go local.ReadPhases(phases, s.Phase, got)
	for {
		select {
		case ph := <-got:
			if ph == "started" {
				return in, nil
			}
		case <-in.done:
			if len(s.Main) == 0 {
				return nil, fmt.Errorf("runsc run %s ended at once: %v: %s", id, in.mainErr, in.stderr.String())
			}
			code, _ := local.ExitStatus(in.mainErr)
			if code != 0 && strings.Contains(in.stderr.String(), "creating container") {
				return nil, fmt.Errorf("runsc run %s: %s", id, in.stderr.String())
			}
			return in, nil // a short main process; Wait reports its status
		case <-ctx.Done():
			return nil, fmt.Errorf("runsc run %s: %w", id, ctx.Err())
		}
	}
}

// Instance is one gVisor sandbox.
type Instance struct {
	p       *Platform
	id      string
	spec    platform.Spec
	rnet    string // runsc --network
	dir     string
	network string
	overlay *local.Overlay
	netns   *local.Netns
	main    *exec.Cmd
	mainErr error
	stderr  local.TailBuffer
	done    chan struct{}

	mu     sync.Mutex
	closed bool
}

// ID is the container id ("isob-g...").
func (in *Instance) ID() string { return in.id }

func (in *Instance) isClosed() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.closed
}

// Exec runs argv in the sandbox with `runsc exec`, stdio passed through;
// cancelling ctx kills runsc exec (and so the process in the sandbox).
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if len(argv) == 0 {
		return errors.New("gvisor: empty command")
	}
	if in.isClosed() {
		return fmt.Errorf("gvisor: instance %s is closed", in.id)
	}
	args := []string{"exec", "--cwd", "/"}
	for _, e := range local.Env() {
		args = append(args, "--env", e)
	}
	args = append(append(args, in.id), local.GuestArgv(argv)...)
	full := in.p.command(in.rnet, args...)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	return local.Run(ctx, cmd, argv, "runsc exec")
}

// CopyIn writes the host file into the sandbox through exec (so it also
// lands in a volume mounted there).
func (in *Instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	return local.CopyIn(ctx, in.Exec, "gvisor", hostPath, guestPath, mode)
}

// Address is the bridge lease, loopback with the host network, "" for none.
func (in *Instance) Address(ctx context.Context) (string, error) {
	switch {
	case in.netns != nil:
		return in.netns.Addr.String(), nil
	case in.network == platform.NetHost:
		return "127.0.0.1", nil
	}
	return "", nil
}

// Facts implements platform.Instance.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"runtime": Binary, "gvisor_platform": in.p.sandbox, "gvisor_network": in.rnet,
		"network": in.network, "storage": "overlay", "id": in.id, "cgroup": "/isobench/" + in.id}
	if in.spec.Storage == platform.StorageVolume {
		f["storage"] = "overlay+bind-volume"
	}
	if in.spec.CPUs > 0 {
		f["cpus"] = strconv.FormatFloat(in.spec.CPUs, 'f', -1, 64)
		f["cpu_quota_us"] = strconv.FormatInt(int64(in.spec.CPUs*runc.CFSPeriod), 10)
		f["cpu_period_us"] = strconv.Itoa(runc.CFSPeriod)
	}
	if in.spec.Memory > 0 {
		f["memory"] = strconv.FormatInt(in.spec.Memory, 10)
	}
	return f
}

// Wait waits for the main process's exit status.
func (in *Instance) Wait(ctx context.Context) (int, error) {
	return local.WaitExit(ctx, in.done, &in.mainErr, in.closedIdle, "runsc run")
}

// closedIdle reports an idle instance (no Spec.Main) that was closed.
func (in *Instance) closedIdle() bool { return in.isClosed() && len(in.spec.Main) == 0 }

// Close kills the sandbox, deletes it and removes its netns, overlay and
// directory. It is safe to call more than once.
func (in *Instance) Close(ctx context.Context) error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil
	}
	in.closed = true
	in.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if in.main != nil {
		kill := in.p.command(in.rnet, "kill", in.id, "KILL")
		exec.CommandContext(ctx, kill[0], kill[1:]...).Run()
		local.AwaitExit(in.done, in.main.Process.Pid, 10*time.Second)
	}
	err := local.Teardown(
		func() error {
			return local.RemoveCommand(ctx, in.p.command(in.rnet, "delete", "--force", in.id), "runsc delete "+in.id)
		},
		func() error { return in.netns.Close(ctx) },
		in.overlay.Unmount,
		local.RemoveAll(in.dir),
	)
	if in.main == nil {
		close(in.done)
	}
	return err
}

// Leftovers lists what gvisor instances left on this host: containers in
// runsc's state, and (see local.Leftovers) network namespaces, veths,
// leases, instance directories, mounts and cgroups.
func Leftovers(ctx context.Context, stateDir string) ([]string, error) {
	out := local.Leftovers(stateDir, Code)
	root := filepath.Join(hostnet.RunDir, Binary)
	if _, err := os.Stat(root); err == nil {
		b, err := exec.CommandContext(ctx, Binary, "--root", root, "list", "-quiet").Output()
		if err != nil {
			return nil, fmt.Errorf("runsc list: %w", err)
		}
		for _, c := range strings.Fields(string(b)) {
			out = append(out, "container "+c)
		}
	}
	return out, nil
}
