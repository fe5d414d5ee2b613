// Package runc runs instances with an OCI runtime binary called directly,
// without a daemon: runc, or crun (two factories, one implementation
// parameterised by the binary).
//
// Each instance is an OCI bundle under StateDir/instances/<id>: a
// config.json generated here and an overlayfs root (the profile's shared
// root file system below, the instance's upper directory on top). The
// runtime's state lives under /run/isobench/<runtime>, so it is gone after
// a reboot like the containers themselves.
//
// The main process runs under `<runtime> run` in the foreground rather than
// `create` + `start`: a detached container's init is reparented away from
// isobench, and only its parent can learn its exit status (containerd and
// conmon are subreapers for that reason). The two phases are still
// observed: OCI hooks on the host (createRuntime, after the namespaces and
// cgroup exist and before the process is started; poststart, after it
// started) write to a FIFO isobench reads.
//
// crun 1.8 refuses a hybrid cgroup host (v1 controllers plus a cgroup2
// "unified" mount at /sys/fs/cgroup/unified). Every crun call therefore
// runs in a private mount namespace where that mount is unmounted
// (`unshare -m sh -c 'umount /sys/fs/cgroup/unified; exec crun ...'`);
// crun then sees and uses plain cgroup v1. The host's mounts are untouched.
package runc

import (
	"context"
	"encoding/json"
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
)

// RuncFactory registers the runc platform.
var RuncFactory = platform.Factory{
	Name: "runc",
	Help: "OCI bundles run by runc directly (no daemon); overlay rootfs; network=none (default), host or bridge",
	New: func(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
		return New(ctx, "runc", o, env)
	},
}

// CrunFactory registers the crun platform.
var CrunFactory = platform.Factory{
	Name: "crun",
	Help: "OCI bundles run by crun directly (no daemon); overlay rootfs; network=none (default), host or bridge",
	New: func(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
		return New(ctx, "crun", o, env)
	},
}

// Platform runs OCI bundles with one runtime binary.
type Platform struct {
	runtime string // "runc" or "crun"
	code    string // one letter in host object names
	root    string // the runtime's --root state directory
	env     platform.Env
	rootfs  *local.Rootfs
}

// New makes a platform for runtime ("runc" or "crun").
func New(ctx context.Context, runtime string, o platform.Options, env platform.Env) (*Platform, error) {
	code := map[string]string{"runc": "r", "crun": "c"}[runtime]
	if code == "" {
		return nil, fmt.Errorf("runc: unknown OCI runtime %q (known: runc, crun)", runtime)
	}
	if env.AgentBinary == "" || env.StateDir == "" {
		return nil, fmt.Errorf("%s: needs an agent binary and a state directory", runtime)
	}
	if err := checkNetwork(runtime, o.Base.Network); err != nil {
		return nil, err
	}
	return &Platform{
		runtime: runtime,
		code:    code,
		root:    filepath.Join("/run/isobench", runtime),
		env:     env,
		rootfs:  &local.Rootfs{Env: env},
	}, nil
}

func checkNetwork(runtime, n string) error {
	switch n {
	case platform.NetDefault, platform.NetNone, platform.NetHost, platform.NetBridge:
		return nil
	}
	return fmt.Errorf("%s: network=%q is %w (use none, host or bridge)", runtime, n, platform.ErrUnsupported)
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return p.runtime }

// Code is the letter this platform's host objects carry after local.Prefix.
func (p *Platform) Code() string { return p.code }

// hybridCgroups reports a cgroup v1 host with a cgroup2 "unified" mount.
func hybridCgroups() bool {
	var st syscall.Statfs_t
	return cgroup.Version() == 1 && syscall.Statfs("/sys/fs/cgroup/unified", &st) == nil && st.Type == 0x63677270
}

// command returns the argv that runs the runtime with args.
func (p *Platform) command(args ...string) []string {
	argv := append([]string{p.runtime, "--root", p.root}, args...)
	if p.runtime == "crun" && hybridCgroups() {
		return append([]string{"unshare", "-m", "sh", "-c", `umount /sys/fs/cgroup/unified 2>/dev/null; exec "$0" "$@"`}, argv...)
	}
	return argv
}

// Available checks the runtime binary (and, for crun, that it runs here).
func (p *Platform) Available(ctx context.Context) error {
	if _, err := exec.LookPath(p.runtime); err != nil {
		return fmt.Errorf("%s is not installed: apt-get install -y %s", p.runtime, p.runtime)
	}
	if !hasOverlay() {
		return fmt.Errorf("%s: the kernel has no overlay file system (modprobe overlay)", p.runtime)
	}
	if p.runtime == "crun" {
		if hybridCgroups() {
			if _, err := exec.LookPath("unshare"); err != nil {
				return errors.New("crun: the cgroup hierarchy is hybrid and unshare(1) is missing to hide cgroup2 from crun: apt-get install -y util-linux")
			}
		}
		if err := os.MkdirAll(p.root, 0o700); err != nil {
			return fmt.Errorf("crun: %w", err)
		}
		argv := p.command("list")
		if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("crun does not work here (%s: %v: %s); reinstall it with apt-get install -y crun", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

func hasOverlay() bool {
	b, _ := os.ReadFile("/proc/filesystems")
	return strings.Contains(string(b), "\toverlay\n")
}

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"runtime": p.runtime, "cgroup_version": strconv.Itoa(cgroup.Version()), "storage_driver": "overlay"}
	if hybridCgroups() {
		f["cgroup_hybrid"] = "true"
	}
	out, err := exec.CommandContext(ctx, p.runtime, "--version").Output()
	if err != nil {
		f["error"] = fmt.Sprintf("%s --version: %v", p.runtime, err)
		return f
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f[p.runtime+"_version"] = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(lines[0], p.runtime), " version"))
	return f
}

// Prepare builds the profile's root file system (once per content digest).
func (p *Platform) Prepare(ctx context.Context, profile string) error {
	_, err := p.rootfs.Dir(ctx, profile)
	return err
}

// Close implements platform.Platform; instances are closed by their owner.
func (p *Platform) Close(ctx context.Context) error { return nil }

// Create writes the bundle and starts `<runtime> run`, returning once the
// main process has started (or already ended).
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	if err := checkNetwork(p.runtime, s.Network); err != nil {
		return nil, err
	}
	switch s.Storage {
	case "", platform.StorageRootfs, platform.StorageVolume:
	default:
		return nil, fmt.Errorf("%s: storage=%q is %w", p.runtime, s.Storage, platform.ErrUnsupported)
	}
	lower, err := p.rootfs.Dir(ctx, s.Image)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.runtime, err)
	}
	id := local.NewID(p.code)
	in := &Instance{p: p, id: id, spec: s, dir: local.InstanceDir(p.env.StateDir, id), done: make(chan struct{}), network: s.Network}
	if in.network == "" {
		in.network = platform.NetNone
	}
	defer func() {
		if err != nil {
			in.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := os.MkdirAll(in.dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", p.runtime, err)
	}
	if in.overlay, err = local.MountOverlay(lower, in.dir); err != nil {
		return nil, fmt.Errorf("%s: %w", p.runtime, err)
	}
	b := bundleConfig{id: id, rootfs: in.overlay.Merged, hostNet: in.network == platform.NetHost}
	if s.Storage == platform.StorageVolume {
		b.volume = filepath.Join(in.dir, "volume")
		if err := os.Mkdir(b.volume, 0o777); err != nil {
			return nil, fmt.Errorf("%s: volume: %w", p.runtime, err)
		}
	}
	if in.network == platform.NetBridge {
		if in.netns, err = local.NewBridgeNetns(ctx, hostnet.Default(p.env.StateDir), id); err != nil {
			return nil, fmt.Errorf("%s: %w", p.runtime, err)
		}
		b.netnsPath = in.netns.Path()
	}
	// phases: the hooks write a line to a FIFO; opened read-write here so
	// that neither side blocks on open
	fifo := filepath.Join(in.dir, "phases")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return nil, fmt.Errorf("%s: phase fifo: %w", p.runtime, err)
	}
	phases, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: phase fifo: %w", p.runtime, err)
	}
	defer phases.Close()
	b.hooks = phaseHooks(fifo)
	cfg, err := json.MarshalIndent(ociConfig(s, b), "", "\t")
	if err != nil {
		return nil, fmt.Errorf("%s: config: %w", p.runtime, err)
	}
	if err := os.WriteFile(filepath.Join(in.dir, "config.json"), cfg, 0o644); err != nil {
		return nil, fmt.Errorf("%s: %w", p.runtime, err)
	}
	if err := os.MkdirAll(p.root, 0o700); err != nil {
		return nil, fmt.Errorf("%s: %w", p.runtime, err)
	}

	// the main process's stdout and stderr are the runtime's own (no
	// terminal: stdio is passed through); pipes we own end when it ends
	argv := p.command("run", "--bundle", in.dir, id)
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := local.StartMain(cmd, s.MainStdout, &in.stderr, &in.mainErr, in.done); err != nil {
		return nil, fmt.Errorf("%s run: %w", p.runtime, err)
	}
	in.main = cmd

	got := make(chan string, 2)
	go local.ReadPhases(phases, s.Phase, got)
	for {
		select {
		case ph := <-got:
			if ph == "started" {
				// both runtimes write their state before the poststart
				// hooks; checking that it reads back (normally one call)
				// makes an Exec right after Create safe regardless
				if err := in.waitState(ctx); err != nil {
					return nil, err
				}
				return in, nil
			}
		case <-in.done:
			if len(s.Main) == 0 {
				return nil, fmt.Errorf("%s run %s ended at once: %v: %s", p.runtime, id, in.mainErr, in.stderr.String())
			}
			return in, nil // a short main process; Wait reports its status
		case <-ctx.Done():
			return nil, fmt.Errorf("%s run %s: %w", p.runtime, id, ctx.Err())
		}
	}
}

// waitState polls "<runtime> state" until the container's state can be
// read (or the main process ended), so an Exec right after Create works.
func (in *Instance) waitState(ctx context.Context) error {
	var last []byte
	for i := 0; ; i++ {
		full := in.p.command("state", in.id)
		out, err := exec.CommandContext(ctx, full[0], full[1:]...).CombinedOutput()
		if err == nil {
			return nil
		}
		last = out
		select {
		case <-in.done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%s state %s: %w: %s", in.p.runtime, in.id, ctx.Err(), last)
		case <-time.After(time.Duration(min(i+1, 20)) * time.Millisecond):
		}
	}
}

// Instance is one OCI container.
type Instance struct {
	p       *Platform
	id      string
	spec    platform.Spec
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

// ID is the container id ("isob-r..." or "isob-c...").
func (in *Instance) ID() string { return in.id }

func (in *Instance) isClosed() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.closed
}

// Exec runs argv in the container with `<runtime> exec`, stdio passed
// through; cancelling ctx kills it.
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if len(argv) == 0 {
		return fmt.Errorf("%s: empty command", in.p.runtime)
	}
	if in.isClosed() {
		return fmt.Errorf("%s: instance %s is closed", in.p.runtime, in.id)
	}
	args := []string{"exec", "--cwd", "/"}
	for _, e := range local.Env() {
		args = append(args, "--env", e)
	}
	args = append(append(args, in.id), local.GuestArgv(argv)...)
	full := in.p.command(args...)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	return local.Run(ctx, cmd, argv, in.p.runtime+" exec")
}

// CopyIn writes the host file into the container through exec (so it
// also lands in a volume mounted in the container).
func (in *Instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	return local.CopyIn(ctx, in.Exec, in.p.runtime, hostPath, guestPath, mode)
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
	f := map[string]string{"runtime": in.p.runtime, "network": in.network, "storage": "overlay", "id": in.id}
	if in.spec.Storage == platform.StorageVolume {
		f["storage"] = "overlay+bind-volume"
	}
	if in.spec.CPUs > 0 {
		f["cpus"] = strconv.FormatFloat(in.spec.CPUs, 'f', -1, 64)
		f["cpu_quota_us"] = strconv.FormatInt(int64(in.spec.CPUs*cfsPeriod), 10)
		f["cpu_period_us"] = strconv.Itoa(cfsPeriod)
	}
	if in.spec.Memory > 0 {
		f["memory"] = strconv.FormatInt(in.spec.Memory, 10)
	}
	f["cgroup"] = "/isobench/" + in.id
	return f
}

// Wait waits for the main process's exit status.
func (in *Instance) Wait(ctx context.Context) (int, error) {
	return local.WaitExit(ctx, in.done, &in.mainErr, in.closedIdle, in.p.runtime+" run")
}

// closedIdle reports an idle instance (no Spec.Main) that was closed.
func (in *Instance) closedIdle() bool { return in.isClosed() && len(in.spec.Main) == 0 }

// Close kills the container, deletes it and removes its netns, overlay and
// directory.
func (in *Instance) Close(ctx context.Context) error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil
	}
	in.closed = true
	in.mu.Unlock()
	// clean up even when ctx is already cancelled
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if in.main != nil {
		kill := in.p.command("kill", in.id, "KILL")
		exec.CommandContext(ctx, kill[0], kill[1:]...).Run()
		local.AwaitExit(in.done, in.main.Process.Pid, 10*time.Second)
	}
	err := local.Teardown(
		func() error {
			return local.RemoveCommand(ctx, in.p.command("delete", "--force", in.id), in.p.runtime+" delete "+in.id)
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

// Leftovers lists what runtime instances left on this host: containers in
// the runtime's state, and (see local.Leftovers) network namespaces,
// veths, leases, instance directories, mounts and cgroups.
func Leftovers(ctx context.Context, runtime, stateDir string) ([]string, error) {
	p, err := New(ctx, runtime, platform.Options{}, platform.Env{AgentBinary: "-", StateDir: stateDir})
	if err != nil {
		return nil, err
	}
	out := local.Leftovers(stateDir, p.code)
	if _, err := os.Stat(p.root); err == nil {
		argv := p.command("list", "-q")
		b, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
		if err != nil {
			return nil, fmt.Errorf("%s list: %w", runtime, err)
		}
		for _, c := range strings.Fields(string(b)) {
			out = append(out, "container "+c)
		}
	}
	return out, nil
}
