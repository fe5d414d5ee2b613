package local

import (
	"context"
	"fmt"
	"maps"
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
	"github.com/isobench/isobench/internal/platform/instguard"
)

// This file is the skeleton the platforms that run a root file system
// directory on this host (runc, crun, gVisor, systemd-nspawn, LXC) embed,
// the way containerd's snapshotters leave bookkeeping to a shared storage
// package: Host is the platform half (environment, root file system cache,
// Prepare, option checks) and Instance the instance half (id, instance
// directory, overlay, volume, network, phase FIFO, the closed guard, Wait,
// Address, CopyIn and the whole of Close). A platform keeps only its own
// start and exec code and says, through Engine, how to stop an instance
// and what of the engine's own to remove.

// CFSPeriod is the CFS period (µs) of these platforms' CPU quotas.
const CFSPeriod = 100000

// Host is what a local platform embeds: its name, the letter its host
// objects carry after Prefix, the environment and the root file system
// cache.
type Host struct {
	name   string
	code   string
	env    platform.Env
	rootfs *Rootfs
}

// NewHost checks that env has an agent binary and a state directory.
func NewHost(name, code string, env platform.Env) (*Host, error) {
	if env.AgentBinary == "" || env.StateDir == "" {
		return nil, fmt.Errorf("%s: needs an agent binary and a state directory", name)
	}
	return &Host{name: name, code: code, env: env, rootfs: &Rootfs{Env: env}}, nil
}

// NewNetHost is NewHost for a platform that takes its options' network
// as it is: it also checks that the base spec's network is one of
// CheckNetwork's.
func NewNetHost(name, code string, o platform.Options, env platform.Env) (*Host, error) {
	h, err := NewHost(name, code, env)
	if err != nil {
		return nil, err
	}
	if err := h.CheckNetwork(o.Base.Network); err != nil {
		return nil, err
	}
	return h, nil
}

// Name implements platform.Platform.
func (h *Host) Name() string { return h.name }

// Code is the letter this platform's host objects carry after Prefix.
func (h *Host) Code() string { return h.code }

// Env is the environment the platform was made with.
func (h *Host) Env() platform.Env { return h.env }

// Prepare builds the profile's root file system (once per content digest).
func (h *Host) Prepare(ctx context.Context, profile string) error {
	_, err := h.rootfs.Dir(ctx, profile)
	return err
}

// Close implements platform.Platform; instances are closed by their owner.
func (h *Host) Close(ctx context.Context) error { return nil }

// HostFacts are the platform facts these platforms share (cgroup version,
// overlay storage) and key: the first line of what the version command
// prints, trimmed of prefix (an "error" fact when it fails).
func (h *Host) HostFacts(ctx context.Context, key, prefix string, version ...string) map[string]string {
	f := map[string]string{"cgroup_version": strconv.Itoa(cgroup.Version()), "storage_driver": "overlay"}
	out, err := exec.CommandContext(ctx, version[0], version[1:]...).Output()
	if err != nil {
		f["error"] = fmt.Sprintf("%s: %v", strings.Join(version, " "), err)
		return f
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	f[key] = strings.TrimSpace(strings.TrimPrefix(line, prefix))
	return f
}

// CheckNetwork accepts the network modes these platforms offer: the
// default, none, host and bridge.
func (h *Host) CheckNetwork(n string) error {
	switch n {
	case platform.NetDefault, platform.NetNone, platform.NetHost, platform.NetBridge:
		return nil
	}
	return fmt.Errorf("%s: network=%q is %w (use none, host or bridge)", h.name, n, platform.ErrUnsupported)
}

// EngineNetwork maps a spec's network to the mode a container engine
// (Docker, Podman) names: bridge (also for the default and nat: the bridge
// with the spec's ports published), host or none; false for any other.
func EngineNetwork(n string) (string, bool) {
	switch n {
	case platform.NetDefault, platform.NetBridge, platform.NetNAT:
		return "bridge", true
	case platform.NetHost:
		return "host", true
	case platform.NetNone:
		return "none", true
	}
	return "", false
}

// EngineName is name with every character a container engine (Docker,
// Podman) refuses in a container name, anything but ASCII letters, digits,
// '_', '.' and '-', replaced by '-'.
func EngineName(name string) string {
	var sb strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			sb.WriteRune(r)
		default:
			sb.WriteByte('-')
		}
	}
	return sb.String()
}

// CheckStorage accepts the storage modes these platforms offer.
func (h *Host) CheckStorage(s string) error {
	switch s {
	case "", platform.StorageRootfs, platform.StorageVolume:
		return nil
	}
	return fmt.Errorf("%s: storage=%q is %w (use rootfs or volume)", h.name, s, platform.ErrUnsupported)
}

// CheckTools fails, saying which Debian package to install, when one of
// bins is not in $PATH or the probe command (when given) does not run.
func (h *Host) CheckTools(ctx context.Context, pkg string, probe []string, bins ...string) error {
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%s: %s is not installed: apt-get install -y %s", h.name, b, pkg)
		}
	}
	if len(probe) > 0 {
		if out, err := exec.CommandContext(ctx, probe[0], probe[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s does not run here (%s: %v: %s): apt-get install -y %s", h.name, strings.Join(probe, " "), err, strings.TrimSpace(string(out)), pkg)
		}
	}
	return nil
}

// CheckOverlay fails when the kernel has no overlay file system.
func (h *Host) CheckOverlay() error {
	b, _ := os.ReadFile("/proc/filesystems")
	if !strings.Contains(string(b), "\toverlay\n") {
		return fmt.Errorf("%s: the kernel has no overlay file system (modprobe overlay)", h.name)
	}
	return nil
}

// Engine is what a platform adds to the shared Instance: its exec, how to
// stop the main process and what of the engine's own to remove.
type Engine interface {
	// Exec runs a command in the instance (the platform's Exec).
	Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error
	// Stop tells the engine to kill the instance's main process. Close
	// calls it only while a started main process runs, then waits up to
	// 10 s for it and kills its host process tree.
	Stop(ctx context.Context)
	// Remove deletes what the engine keeps for the instance (its state,
	// cgroup, veth, config), after the main process has ended; the shared
	// teardown of network, overlay and instance directory follows.
	Remove(ctx context.Context) error
}

// Setup says what Begin makes for an instance besides its directory and
// overlay.
type Setup struct {
	// DefaultNetwork is the mode used when the spec names none.
	DefaultNetwork string
	// Netns: with network=bridge, a named network namespace with a veth on
	// the isobench bridge (for engines that join a namespace by path).
	Netns bool
	// Lease: with network=bridge, only a leased address on a bridge that
	// exists (for engines that make their own veth, like LXC).
	Lease bool
	// PhaseFIFO: a FIFO the engine's hooks write phase names to, one a
	// line (see WaitPhase).
	PhaseFIFO bool
}

// Instance is the bookkeeping every local instance shares; platforms
// embed it and fill in Main (with Start or their own start code).
type Instance struct {
	Host    *Host
	Spec    platform.Spec
	Dir     string   // StateDir/instances/<id>
	Network string   // the network mode in force
	Overlay *Overlay // the root file system
	Volume  string   // storage=volume: the host directory to mount at guestenv.ScratchDir
	Netns   *Netns   // network=bridge with Setup.Netns
	Bridge  *hostnet.Bridge
	Addr    netip.Addr // the bridge lease (Setup.Netns or Setup.Lease)
	// PhaseFIFO is the FIFO's path (Setup.PhaseFIFO); it is held open
	// read-write until WaitPhase returns, so neither side blocks on open.
	PhaseFIFO string
	phases    *os.File

	Main    *exec.Cmd // the engine's foreground command, once started
	MainErr error     // its Wait error, set before Done is closed
	Stderr  TailBuffer
	Done    chan struct{} // closed once Main was reaped (or by Close)

	id     string
	engine Engine
	mu     sync.Mutex
	closed bool
}

// Begin does what starts every Create: checks the network and storage modes, builds the
// root file system, picks the id, makes the instance directory, mounts the
// overlay, makes the volume directory, the network (Setup) and the phase
// FIFO. On error it has undone all of it. The caller must close the
// instance when its own start fails: defer in.Undo(ctx, &err).
func (h *Host) Begin(ctx context.Context, s platform.Spec, su Setup, e Engine) (_ *Instance, err error) {
	if err := h.CheckNetwork(s.Network); err != nil {
		return nil, err
	}
	if err := h.CheckStorage(s.Storage); err != nil {
		return nil, err
	}
	network := s.Network
	if network == platform.NetDefault {
		network = su.DefaultNetwork
	}
	lower, err := h.rootfs.Dir(ctx, s.Image)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.name, err)
	}
	id := NewID(h.code)
	dir := InstanceDir(h.env.StateDir, id)
	if err := PrivateDir(filepath.Dir(dir)); err != nil {
		return nil, fmt.Errorf("%s: %w", h.name, err)
	}
	if err := FreshDir(dir); err != nil {
		return nil, fmt.Errorf("%s: %w", h.name, err)
	}
	in := &Instance{Host: h, Spec: s, Dir: dir, Network: network, Done: make(chan struct{}), id: id}
	defer in.Undo(ctx, &err) // the engine has nothing to stop or remove yet
	if in.Overlay, err = MountOverlay(lower, in.Dir); err != nil {
		return nil, fmt.Errorf("%s: %w", h.name, err)
	}
	if s.Storage == platform.StorageVolume {
		in.Volume = filepath.Join(in.Dir, "volume")
		// private like the instance directory: the instance's root is
		// the host's root, which owns it
		if err := FreshDir(in.Volume); err != nil {
			return nil, fmt.Errorf("%s: volume: %w", h.name, err)
		}
	}
	if in.Network == platform.NetBridge && (su.Netns || su.Lease) {
		in.Bridge = hostnet.Default(h.env.StateDir)
		if su.Netns {
			if in.Netns, err = NewBridgeNetns(ctx, in.Bridge, id); err != nil {
				return nil, fmt.Errorf("%s: %w", h.name, err)
			}
			in.Addr = in.Netns.Addr
		} else {
			if in.Addr, err = in.Bridge.Lease(id, VethName(id)); err != nil {
				return nil, fmt.Errorf("%s: %w", h.name, err)
			}
			// lease first, then the bridge: a live lease keeps other
			// processes' Release from deleting the bridge under us
			if err := EnsureBridge(ctx, in.Bridge); err != nil {
				return nil, fmt.Errorf("%s: %w", h.name, err)
			}
		}
	}
	// the names and resolver an instance on the bridge or without a
	// network can use (names.go)
	if err := WriteNames(in.Overlay.Merged, in.Network, in.Addr, Hostname, id); err != nil {
		return nil, fmt.Errorf("%s: %w", h.name, err)
	}
	if su.PhaseFIFO {
		in.PhaseFIFO = filepath.Join(in.Dir, "phases")
		if err := syscall.Mkfifo(in.PhaseFIFO, 0o600); err != nil {
			return nil, fmt.Errorf("%s: phase fifo: %w", h.name, err)
		}
		if in.phases, err = os.OpenFile(in.PhaseFIFO, os.O_RDWR, 0); err != nil {
			return nil, fmt.Errorf("%s: phase fifo: %w", h.name, err)
		}
	}
	in.engine = e
	return in, nil
}

// Undo closes the instance when *err is set; Create defers it.
func (in *Instance) Undo(ctx context.Context, err *error) {
	if *err != nil {
		in.Close(context.WithoutCancel(ctx))
	}
}

// ID is the instance's id: Prefix, the platform's code and 8 hex digits.
func (in *Instance) ID() string { return in.id }

// Closed reports whether Close was called.
func (in *Instance) Closed() bool { return instguard.Closed(&in.mu, &in.closed) }

// Ended reports whether the main process has ended.
func (in *Instance) Ended() bool {
	select {
	case <-in.Done:
		return true
	default:
		return false
	}
}

// CheckExec is the guard every Exec starts with: a command, and an
// instance that is neither closed nor stopped.
func (in *Instance) CheckExec(argv []string) error {
	switch {
	case len(argv) == 0:
		return fmt.Errorf("%s: empty command", in.Host.name)
	case in.Closed():
		return fmt.Errorf("%s: instance %s is closed", in.Host.name, in.id)
	case in.Main != nil && in.Ended():
		return fmt.Errorf("%s: instance %s has stopped", in.Host.name, in.id)
	}
	return nil
}

// Start starts cmd, the engine's foreground command running the main
// process with the engine's own stdio (see StartMain).
func (in *Instance) Start(cmd *exec.Cmd) error {
	if err := StartMain(cmd, in.Spec.MainStdout, &in.Stderr, &in.MainErr, in.Done); err != nil {
		return fmt.Errorf("%s: start: %w", in.Host.name, err)
	}
	in.Main = cmd
	return nil
}

// WaitPhase reads the phase FIFO, telling Spec.Phase each phase, until the
// hooks wrote until (true), the main process ended first (false) or ctx
// ended (its error). It closes the FIFO.
func (in *Instance) WaitPhase(ctx context.Context, until string) (bool, error) {
	defer in.phases.Close()
	got := make(chan string, 2)
	go ReadPhases(in.phases, in.Spec.Phase, got)
	for {
		select {
		case ph := <-got:
			if ph == until {
				return true, nil
			}
		case <-in.Done:
			return false, nil
		case <-ctx.Done():
			return false, fmt.Errorf("%s: %s: %w", in.Host.name, in.id, ctx.Err())
		}
	}
}

// EndedAtOnce is the error for an idle instance whose main process ended
// during Create, with the engine's stderr and extra (a log excerpt).
func (in *Instance) EndedAtOnce(extra string) error {
	return fmt.Errorf("%s %s ended at once: %v: %s%s", in.Host.name, in.id, in.MainErr, in.Stderr.String(), extra)
}

// CopyIn writes the host file into the instance through the platform's
// exec (so it also lands in a volume mounted there).
func (in *Instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	return CopyIn(ctx, in.engine.Exec, in.Host.name, hostPath, guestPath, mode)
}

// Address is the bridge lease, loopback with the host network, "" for none.
func (in *Instance) Address(ctx context.Context) (string, error) {
	switch {
	case in.Addr.IsValid():
		return in.Addr.String(), nil
	case in.Network == platform.NetHost:
		return "127.0.0.1", nil
	}
	return "", nil
}

// Facts are the facts every local instance has: network, storage and the
// limits; platforms add their own.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"network": in.Network, "storage": "overlay", "id": in.id}
	if in.Spec.Storage == platform.StorageVolume {
		f["storage"] = "overlay+bind-volume"
	}
	if in.Spec.CPUs > 0 {
		f["cpus"] = strconv.FormatFloat(in.Spec.CPUs, 'f', -1, 64)
		f["cpu_quota_us"] = strconv.FormatInt(int64(in.Spec.CPUs*CFSPeriod), 10)
		f["cpu_period_us"] = strconv.Itoa(CFSPeriod)
	}
	if in.Spec.Memory > 0 {
		f["memory"] = strconv.FormatInt(in.Spec.Memory, 10)
		cgroup.SwapFacts(f, in.Spec.Memory) // every local platform allows no swap beyond it
	}
	return f
}

// ConfinementFacts adds to f what /proc says of pid's confinement
// (ProcConfinement: cap_eff, cap_bnd, seccomp, no_new_privs): pid is the
// instance's init or main process, whose confinement the engine's exec
// gives the commands it runs (the conformance suite checks that they
// agree). Nothing is added once the main process has ended.
func (in *Instance) ConfinementFacts(f map[string]string, pid int) {
	if pid <= 0 || in.Ended() || Confining(pid) {
		return
	}
	if c, err := ProcConfinement(pid); err == nil {
		maps.Copy(f, c)
	}
}

// InitConfinementFacts adds to f, as init_cap_eff, init_cap_bnd,
// init_seccomp and init_no_new_privs, the confinement of pid, the
// instance's init, where it is not the workloads' (a booted system's
// init, or the engine's small init, which "isobench agent confine" does
// not wrap).
func (in *Instance) InitConfinementFacts(f map[string]string, pid int) {
	if pid <= 0 || in.Ended() {
		return
	}
	if c, err := ProcConfinement(pid); err == nil {
		for k, v := range c {
			f["init_"+k] = v
		}
	}
}

// Confining reports whether pid is still "isobench agent confine", not yet
// the workload it execs (whose confinement is then not yet in force).
func Confining(pid int) bool {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.Contains(string(b), "\x00agent\x00confine\x00")
}

// Wait waits for the main process's exit status; an idle instance that
// was closed returns 0.
func (in *Instance) Wait(ctx context.Context) (int, error) {
	closedIdle := func() bool { return in.Closed() && len(in.Spec.Main) == 0 }
	return WaitExit(ctx, in.Done, &in.MainErr, closedIdle, in.Host.name)
}

// Close stops the main process (Engine.Stop, then its host process tree
// after 10 s), removes the engine's state (Engine.Remove) and then the
// network, overlay and instance directory. It cleans up also when ctx is
// already cancelled, and a second call does nothing.
func (in *Instance) Close(ctx context.Context) error {
	if !instguard.First(&in.mu, &in.closed) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if in.Main != nil {
		if !in.Ended() && in.engine != nil {
			in.engine.Stop(ctx)
		}
		AwaitExit(in.Done, in.Main.Process.Pid, 10*time.Second)
	} else {
		close(in.Done)
	}
	if in.phases != nil {
		in.phases.Close()
	}
	return Teardown(
		func() error {
			if in.engine == nil {
				return nil
			}
			return in.engine.Remove(ctx)
		},
		func() error { return in.Netns.Close(ctx) },
		func() error {
			if in.Netns != nil || in.Bridge == nil || !in.Addr.IsValid() {
				return nil
			}
			return ReleaseLease(ctx, in.Bridge, in.Addr)
		},
		in.Overlay.Unmount,
		RemoveAll(in.Dir),
	)
}
