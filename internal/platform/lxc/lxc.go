// Package lxc runs instances as LXC system containers driven by the lxc-*
// tools, with a container configuration written by isobench under an
// lxcpath in the state directory (no lxc-net, no templates, no lxcbr0).
//
// The root file system is an overlay of the profile's shared tree, mounted
// by isobench and given to LXC as lxc.rootfs.path = dir:<mount>.
//
// The main process runs under `lxc-execute` in the foreground: like
// `lxc-start -F` it runs the container, but it puts LXC's small init
// (init.lxc.static, bind-mounted by LXC) at PID 1 and returns the main
// process's exit status, which lxc-start does not. The command is passed on
// the command line, since lxc.init.cmd is split on blanks without quoting.
// The "created" phase comes from an lxc.hook.start-host hook (run on the
// host once namespaces, cgroups and network are set up, immediately before
// the container's init is executed), which writes to a FIFO isobench reads;
// LXC has no hook after that, so "started" is taken right after.
//
// Exec is lxc-attach --clear-env with an explicit environment. Close is
// lxc-stop -k; the container directory is then removed by isobench rather
// than lxc-destroy, which would delete the rootfs directory's contents
// (isobench unmounts the overlay and removes its layers itself).
//
// Cgroups: lxc.cgroup.* (v1) or lxc.cgroup2.* (v2) set the CFS quota and
// memory limit; lxc.mount.auto cgroup:ro:force mounts the container's
// cgroup namespace at /sys/fs/cgroup so it sees its own limits ("force":
// LXC otherwise skips the mount for a container that keeps CAP_SYS_ADMIN).
package lxc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
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

// Code is the letter LXC's host objects carry after local.Prefix.
const Code = "l"

// cfsPeriod is the CFS period for CPU quotas, in µs.
const cfsPeriod = 100000

// Factory registers the LXC platform.
var Factory = platform.Factory{
	Name: "lxc",
	Help: "LXC containers (lxc-execute/lxc-attach) on an overlay rootfs; network=bridge (default, veth on the isobench bridge), host or none",
	New:  New,
}

// Platform runs LXC containers under StateDir/lxc.
type Platform struct {
	env     platform.Env
	rootfs  *local.Rootfs
	lxcpath string
}

// New checks the options.
func New(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
	if env.AgentBinary == "" || env.StateDir == "" {
		return nil, errors.New("lxc: needs an agent binary and a state directory")
	}
	if err := checkNetwork(o.Base.Network); err != nil {
		return nil, err
	}
	return &Platform{env: env, rootfs: &local.Rootfs{Env: env}, lxcpath: LXCPath(env.StateDir)}, nil
}

// LXCPath is the lxcpath (-P) isobench's containers live in.
func LXCPath(stateDir string) string { return filepath.Join(stateDir, "lxc") }

func checkNetwork(n string) error {
	switch n {
	case platform.NetDefault, platform.NetNone, platform.NetHost, platform.NetBridge:
		return nil
	}
	return fmt.Errorf("lxc: network=%q is %w (use bridge, host or none)", n, platform.ErrUnsupported)
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "lxc" }

// Available checks the lxc tools and that they run.
func (p *Platform) Available(ctx context.Context) error {
	for _, b := range []string{"lxc-execute", "lxc-attach", "lxc-stop"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%s is not installed: apt-get install -y lxc", b)
		}
	}
	if out, err := exec.CommandContext(ctx, "lxc-execute", "--version").CombinedOutput(); err != nil {
		return fmt.Errorf("lxc does not run here (lxc-execute --version: %v: %s): apt-get install -y lxc", err, strings.TrimSpace(string(out)))
	}
	b, _ := os.ReadFile("/proc/filesystems")
	if !strings.Contains(string(b), "\toverlay\n") {
		return errors.New("lxc: the kernel has no overlay file system (modprobe overlay)")
	}
	return nil
}

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"cgroup_version": strconv.Itoa(cgroup.Version()), "storage_driver": "overlay", "apparmor": strconv.FormatBool(apparmor())}
	out, err := exec.CommandContext(ctx, "lxc-execute", "--version").Output()
	if err != nil {
		f["error"] = fmt.Sprintf("lxc-execute --version: %v", err)
		return f
	}
	f["lxc_version"] = strings.TrimSpace(string(out))
	return f
}

func apparmor() bool {
	_, err := os.Stat("/sys/kernel/security/apparmor")
	return err == nil
}

// Prepare builds the profile's root file system (once per content digest).
func (p *Platform) Prepare(ctx context.Context, profile string) error {
	_, err := p.rootfs.Dir(ctx, profile)
	return err
}

// Close implements platform.Platform.
func (p *Platform) Close(ctx context.Context) error { return nil }

// containerConfig is what config needs besides the spec.
type containerConfig struct {
	rootfs   string
	volume   string
	network  string
	addr     netip.Prefix // bridge: the lease
	gateway  netip.Addr
	bridge   string
	veth     string
	hook     string // start-host hook command, or ""
	cgroupV2 bool
	apparmor bool
}

// config renders the LXC container configuration.
func config(s platform.Spec, c containerConfig) string {
	var b strings.Builder
	set := func(k, v string) { fmt.Fprintf(&b, "%s = %s\n", k, v) }
	set("lxc.uts.name", "isobench")
	set("lxc.rootfs.path", "dir:"+c.rootfs)
	set("lxc.autodev", "1")
	set("lxc.mount.auto", "proc:mixed sys:ro cgroup:ro:force")
	set("lxc.console.path", "none")
	set("lxc.tty.max", "0")
	set("lxc.pty.max", "16")
	set("lxc.cap.drop", "sys_module mac_admin mac_override sys_time")
	if !c.apparmor {
		set("lxc.apparmor.profile", "unconfined")
	}
	for _, e := range local.Env() {
		set("lxc.environment", e)
	}
	switch c.network {
	case platform.NetHost:
		set("lxc.net.0.type", "none")
	case platform.NetBridge:
		set("lxc.net.0.type", "veth")
		set("lxc.net.0.link", c.bridge)
		set("lxc.net.0.veth.pair", c.veth)
		set("lxc.net.0.name", "eth0")
		set("lxc.net.0.flags", "up")
		set("lxc.net.0.ipv4.address", c.addr.String())
		set("lxc.net.0.ipv4.gateway", c.gateway.String())
	default:
		set("lxc.net.0.type", "empty")
	}
	if c.volume != "" {
		set("lxc.mount.entry", c.volume+" "+strings.TrimPrefix(platform.ScratchDir, "/")+" none bind,create=dir 0 0")
	}
	if c.cgroupV2 {
		if s.CPUs > 0 {
			set("lxc.cgroup2.cpu.max", fmt.Sprintf("%d %d", int64(s.CPUs*cfsPeriod), cfsPeriod))
		}
		if s.Memory > 0 {
			set("lxc.cgroup2.memory.max", strconv.FormatInt(s.Memory, 10))
		}
	} else {
		if s.CPUs > 0 {
			set("lxc.cgroup.cpu.cfs_period_us", strconv.Itoa(cfsPeriod))
			set("lxc.cgroup.cpu.cfs_quota_us", strconv.FormatInt(int64(s.CPUs*cfsPeriod), 10))
		}
		if s.Memory > 0 {
			set("lxc.cgroup.memory.limit_in_bytes", strconv.FormatInt(s.Memory, 10))
		}
	}
	if c.hook != "" {
		set("lxc.hook.start-host", c.hook)
	}
	// documentation only: the command is given to lxc-execute, since this
	// key is split on blanks without quoting
	set("lxc.init.cmd", strings.Join(local.MainArgv(s), " "))
	return b.String()
}

// Create writes the container config and starts lxc-execute, returning
// once the container's init is about to run (or already ended).
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	if err := checkNetwork(s.Network); err != nil {
		return nil, err
	}
	switch s.Storage {
	case "", platform.StorageRootfs, platform.StorageVolume:
	default:
		return nil, fmt.Errorf("lxc: storage=%q is %w", s.Storage, platform.ErrUnsupported)
	}
	lower, err := p.rootfs.Dir(ctx, s.Image)
	if err != nil {
		return nil, fmt.Errorf("lxc: %w", err)
	}
	id := local.NewID(Code)
	in := &Instance{p: p, id: id, spec: s, dir: local.InstanceDir(p.env.StateDir, id), done: make(chan struct{}), network: s.Network}
	if in.network == "" {
		in.network = platform.NetBridge
	}
	defer func() {
		if err != nil {
			in.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := os.MkdirAll(in.dir, 0o755); err != nil {
		return nil, fmt.Errorf("lxc: %w", err)
	}
	if in.overlay, err = local.MountOverlay(lower, in.dir); err != nil {
		return nil, fmt.Errorf("lxc: %w", err)
	}
	c := containerConfig{rootfs: in.overlay.Merged, network: in.network, cgroupV2: cgroup.Version() == 2, apparmor: apparmor()}
	if s.Storage == platform.StorageVolume {
		c.volume = filepath.Join(in.dir, "volume")
		if err := os.Mkdir(c.volume, 0o777); err != nil {
			return nil, fmt.Errorf("lxc: volume: %w", err)
		}
	}
	if in.network == platform.NetBridge {
		in.bridge = hostnet.Default(p.env.StateDir)
		a, err := in.bridge.Lease(id)
		if err != nil {
			return nil, fmt.Errorf("lxc: %w", err)
		}
		in.addr = a
		if err := local.EnsureBridge(ctx, in.bridge); err != nil {
			return nil, fmt.Errorf("lxc: %w", err)
		}
		c.addr = netip.PrefixFrom(a, in.bridge.Prefix.Bits())
		c.gateway = in.bridge.Gateway()
		c.bridge = in.bridge.Name
		c.veth = local.VethName(id)
	}
	fifo := filepath.Join(in.dir, "phases")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return nil, fmt.Errorf("lxc: phase fifo: %w", err)
	}
	phases, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("lxc: phase fifo: %w", err)
	}
	defer phases.Close()
	// LXC runs hooks with /bin/sh -c, appending the name, "lxc" and the
	// hook type as words
	c.hook = "echo created >" + fifo
	cdir := filepath.Join(p.lxcpath, id)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return nil, fmt.Errorf("lxc: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cdir, "config"), []byte(config(s, c)), 0o644); err != nil {
		return nil, fmt.Errorf("lxc: %w", err)
	}

	stdout := s.MainStdout
	if stdout == nil {
		stdout = io.Discard
	}
	args := []string{"-n", id, "-P", p.lxcpath, "-o", filepath.Join(in.dir, "lxc.log"), "-l", "ERROR", "--"}
	cmd := exec.Command("lxc-execute", append(args, local.MainArgv(s)...)...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = stdout, &in.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("lxc-execute: %w", err)
	}
	in.main = cmd
	go func() {
		in.mainErr = cmd.Wait()
		close(in.done)
	}()
	got := make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(phases)
		if sc.Scan() {
			got <- time.Now()
		}
	}()
	select {
	case at := <-got:
		in.running = true
		if s.Phase != nil {
			s.Phase("created", at)
			s.Phase("started", time.Now())
		}
		return in, nil
	case <-in.done:
		if len(s.Main) == 0 {
			return nil, fmt.Errorf("lxc-execute %s ended at once: %v: %s%s", id, in.mainErr, in.stderr.String(), in.log())
		}
		return in, nil // Wait reports the status
	case <-ctx.Done():
		return nil, fmt.Errorf("lxc-execute %s: %w", id, ctx.Err())
	}
}

// Instance is one LXC container.
type Instance struct {
	p       *Platform
	id      string
	spec    platform.Spec
	dir     string
	network string
	overlay *local.Overlay
	bridge  *hostnet.Bridge
	addr    netip.Addr
	main    *exec.Cmd
	mainErr error
	running bool
	stderr  local.TailBuffer
	done    chan struct{}

	mu     sync.Mutex
	closed bool
}

// log returns LXC's error log for messages.
func (in *Instance) log() string {
	b, _ := os.ReadFile(filepath.Join(in.dir, "lxc.log"))
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	if s := strings.TrimSpace(string(b)); s != "" {
		return " (lxc log: " + s + ")"
	}
	return ""
}

// ID is the container name ("isob-l...").
func (in *Instance) ID() string { return in.id }

// Exec runs argv in the container with lxc-attach and a clean environment.
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if len(argv) == 0 {
		return errors.New("lxc: empty command")
	}
	in.mu.Lock()
	closed := in.closed
	in.mu.Unlock()
	if closed || !in.running {
		return fmt.Errorf("lxc: instance %s is not running", in.id)
	}
	select {
	case <-in.done:
		return fmt.Errorf("lxc: instance %s has stopped", in.id)
	default:
	}
	args := []string{"-n", in.id, "-P", in.p.lxcpath, "--clear-env"}
	for _, e := range local.Env() {
		args = append(args, "-v", e)
	}
	args = append(append(args, "--"), local.GuestArgv(argv)...)
	cmd := exec.CommandContext(ctx, "lxc-attach", args...)
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	return local.Run(ctx, cmd, argv, "lxc-attach")
}

// CopyIn writes the host file into the container through exec.
func (in *Instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	return local.CopyIn(ctx, in.Exec, "lxc", hostPath, guestPath, mode)
}

// Address is the bridge lease, loopback with the host network, "" for none.
func (in *Instance) Address(ctx context.Context) (string, error) {
	switch {
	case in.addr.IsValid():
		return in.addr.String(), nil
	case in.network == platform.NetHost:
		return "127.0.0.1", nil
	}
	return "", nil
}

// Facts implements platform.Instance.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"network": in.network, "storage": "overlay", "container": in.id}
	if in.spec.Storage == platform.StorageVolume {
		f["storage"] = "overlay+bind-volume"
	}
	if in.spec.CPUs > 0 {
		f["cpus"] = strconv.FormatFloat(in.spec.CPUs, 'f', -1, 64)
		f["cpu_quota_us"] = strconv.FormatInt(int64(in.spec.CPUs*cfsPeriod), 10)
	}
	if in.spec.Memory > 0 {
		f["memory"] = strconv.FormatInt(in.spec.Memory, 10)
	}
	return f
}

// Wait waits for lxc-execute and returns the main process's status.
func (in *Instance) Wait(ctx context.Context) (int, error) {
	return local.WaitExit(ctx, in.done, &in.mainErr, in.closedIdle, "lxc-execute")
}

// closedIdle reports an idle instance (no Spec.Main) that was closed.
func (in *Instance) closedIdle() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.closed && len(in.spec.Main) == 0
}

// Close stops the container (lxc-stop -k), waits for lxc-execute, and
// removes the container directory, veth, lease, overlay and files.
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
		select {
		case <-in.done:
		default:
			exec.CommandContext(ctx, "lxc-stop", "-n", in.id, "-P", in.p.lxcpath, "-k").Run()
		}
		local.AwaitExit(in.done, in.main.Process.Pid, 10*time.Second)
	} else {
		close(in.done)
	}
	return local.Teardown(
		func() error {
			if in.bridge == nil {
				return nil
			}
			return hostnet.DeleteLink(ctx, local.VethName(in.id))
		},
		func() error {
			if in.bridge == nil || !in.addr.IsValid() {
				return nil
			}
			return local.ReleaseLease(ctx, in.bridge, in.addr)
		},
		in.overlay.Unmount,
		local.RemoveAll(filepath.Join(in.p.lxcpath, in.id), in.dir),
	)
}

// Leftovers lists what LXC instances left on this host: container
// directories in the lxcpath, LXC's cgroups (lxc.payload.*, lxc.monitor.*)
// and, see local.Leftovers, veths, leases, instance directories and mounts.
func Leftovers(ctx context.Context, stateDir string) ([]string, error) {
	out := local.Leftovers(stateDir, Code)
	mine := local.Prefix + Code
	if es, err := os.ReadDir(LXCPath(stateDir)); err == nil {
		for _, e := range es {
			if strings.HasPrefix(e.Name(), mine) {
				out = append(out, "container "+e.Name())
			}
		}
	}
	for _, pat := range []string{"/sys/fs/cgroup/*/lxc.*." + mine + "*", "/sys/fs/cgroup/lxc.*." + mine + "*"} {
		m, _ := filepath.Glob(pat)
		for _, x := range m {
			out = append(out, "cgroup "+x)
		}
	}
	return out, nil
}
