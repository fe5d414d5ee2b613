// Package nspawn runs instances with systemd-nspawn on an overlay of the
// image profile's root file system, without needing systemd as PID 1.
//
// How it is run, and why:
//
//   - --register=no --keep-unit: no machined registration and no transient
//     scope unit; both need a systemd manager on the bus, which hosts
//     without systemd as PID 1 (containers, firecracker VMs) lack.
//   - --as-pid2: nspawn's stub init is PID 1 and reaps; the main process
//     (the agent) is PID 2 and nspawn exits with its status.
//   - nspawn keeps per-machine state under /run/systemd/nspawn and refuses
//     to remove it unless it is on a tmpfs. Each nspawn runs in a private
//     mount namespace (unshare -m) with a tmpfs mounted there, so nothing
//     stays on the host.
//   - Limits: nspawn's --property= needs systemd. Instead isobench creates a
//     cgroup of its own (cpu/memory limits, plus name=systemd and unified
//     directories on a hybrid host so nspawn's own "payload"/"supervisor"
//     sub-cgroups land inside it) and starts nspawn in it through
//     "isobench agent cgexec". nspawn gives the container a cgroup
//     namespace rooted there, so the container sees its own limits.
//   - Exec: nspawn has no exec; `machinectl shell` needs machined. Exec is
//     `nsenter -t <leader> -a` (all namespaces of the container's PID 1, the
//     stub init, which is nspawn's child), run inside the instance's cgroup.
package nspawn

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// Code is the letter nspawn's host objects carry after local.Prefix.
const Code = "n"

// Factory registers the systemd-nspawn platform.
var Factory = platform.Factory{
	Name: "nspawn",
	Help: "systemd-nspawn on an overlay rootfs (no systemd needed); network=host (default), none or bridge",
	New:  New,
}

// Platform runs systemd-nspawn containers.
type Platform struct {
	env    platform.Env
	rootfs *local.Rootfs
}

// New checks the options.
func New(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
	if env.AgentBinary == "" || env.StateDir == "" {
		return nil, errors.New("nspawn: needs an agent binary and a state directory")
	}
	if err := checkNetwork(o.Base.Network); err != nil {
		return nil, err
	}
	return &Platform{env: env, rootfs: &local.Rootfs{Env: env}}, nil
}

func checkNetwork(n string) error {
	switch n {
	case platform.NetDefault, platform.NetNone, platform.NetHost, platform.NetBridge:
		return nil
	}
	return fmt.Errorf("nspawn: network=%q is %w (use host, none or bridge)", n, platform.ErrUnsupported)
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "nspawn" }

// Available checks that systemd-nspawn, nsenter and unshare exist and that
// nspawn runs.
func (p *Platform) Available(ctx context.Context) error {
	if _, err := exec.LookPath("systemd-nspawn"); err != nil {
		return errors.New("systemd-nspawn is not installed: apt-get install -y systemd-container")
	}
	for _, b := range []string{"nsenter", "unshare"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("nspawn: %s is missing: apt-get install -y util-linux", b)
		}
	}
	if out, err := exec.CommandContext(ctx, "systemd-nspawn", "--version").CombinedOutput(); err != nil {
		return fmt.Errorf("systemd-nspawn does not run here (%v: %s): apt-get install -y systemd-container", err, strings.TrimSpace(string(out)))
	}
	b, _ := os.ReadFile("/proc/filesystems")
	if !strings.Contains(string(b), "\toverlay\n") {
		return errors.New("nspawn: the kernel has no overlay file system (modprobe overlay)")
	}
	return nil
}

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"cgroup_version": strconv.Itoa(cgroup.Version()), "storage_driver": "overlay", "systemd_pid1": strconv.FormatBool(systemdPID1())}
	out, err := exec.CommandContext(ctx, "systemd-nspawn", "--version").Output()
	if err != nil {
		f["error"] = fmt.Sprintf("systemd-nspawn --version: %v", err)
		return f
	}
	f["nspawn_version"] = strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
	return f
}

// systemdPID1 reports whether the host runs systemd as init.
func systemdPID1() bool {
	b, _ := os.ReadFile("/proc/1/comm")
	return strings.TrimSpace(string(b)) == "systemd"
}

// Prepare builds the profile's root file system (once per content digest).
func (p *Platform) Prepare(ctx context.Context, profile string) error {
	_, err := p.rootfs.Dir(ctx, profile)
	return err
}

// Close implements platform.Platform.
func (p *Platform) Close(ctx context.Context) error { return nil }

// Create starts systemd-nspawn and returns once the container's init runs
// (or the main process already ended).
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	if err := checkNetwork(s.Network); err != nil {
		return nil, err
	}
	switch s.Storage {
	case "", platform.StorageRootfs, platform.StorageVolume:
	default:
		return nil, fmt.Errorf("nspawn: storage=%q is %w", s.Storage, platform.ErrUnsupported)
	}
	lower, err := p.rootfs.Dir(ctx, s.Image)
	if err != nil {
		return nil, fmt.Errorf("nspawn: %w", err)
	}
	id := local.NewID(Code)
	in := &Instance{p: p, id: id, spec: s, dir: local.InstanceDir(p.env.StateDir, id), done: make(chan struct{}), network: s.Network}
	if in.network == "" {
		in.network = platform.NetHost
	}
	defer func() {
		if err != nil {
			in.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := os.MkdirAll(in.dir, 0o755); err != nil {
		return nil, fmt.Errorf("nspawn: %w", err)
	}
	if in.overlay, err = local.MountOverlay(lower, in.dir); err != nil {
		return nil, fmt.Errorf("nspawn: %w", err)
	}
	if in.cg, err = newGroup(id, cgroup.Limits{CPUs: s.CPUs, Memory: s.Memory}); err != nil {
		return nil, fmt.Errorf("nspawn: %w", err)
	}
	args := []string{"-q", "-D", in.overlay.Merged, "--machine=" + id, "--register=no", "--keep-unit", "--as-pid2",
		"--console=pipe", "--setenv=" + local.Env()[2], "--chdir=/"}
	switch in.network {
	case platform.NetNone:
		args = append(args, "--private-network")
	case platform.NetBridge:
		if in.netns, err = local.NewBridgeNetns(ctx, hostnet.Default(p.env.StateDir), id); err != nil {
			return nil, fmt.Errorf("nspawn: %w", err)
		}
		args = append(args, "--network-namespace-path="+in.netns.Path())
	}
	if s.Storage == platform.StorageVolume {
		vol := filepath.Join(in.dir, "volume")
		if err := os.Mkdir(vol, 0o777); err != nil {
			return nil, fmt.Errorf("nspawn: volume: %w", err)
		}
		args = append(args, "--bind="+vol+":"+platform.ScratchDir)
	}
	args = append(append(args, "--"), local.MainArgv(s)...)
	argv := in.hostArgv(append([]string{"unshare", "-m", "sh", "-c",
		`mkdir -p /run/systemd/nspawn && mount -t tmpfs -o mode=0755 isobench-nspawn /run/systemd/nspawn && exec "$0" "$@"`,
		"systemd-nspawn"}, args...))

	stdout := s.MainStdout
	if stdout == nil {
		stdout = io.Discard
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, &in.stderr
	cmd.Env = local.Env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if s.Phase != nil {
		s.Phase("created", time.Now())
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("nspawn: start: %w", err)
	}
	in.main = cmd
	go func() {
		in.mainErr = cmd.Wait()
		close(in.done)
	}()
	leader, err := in.waitLeader(ctx)
	if err != nil {
		return nil, err
	}
	in.leader = leader
	if s.Phase != nil {
		s.Phase("started", time.Now())
	}
	return in, nil
}

// hostArgv prefixes argv with "isobench agent cgexec" into the instance's
// cgroup.
func (in *Instance) hostArgv(argv []string) []string {
	w := append([]string{in.p.env.AgentBinary, "agent", "cgexec"}, in.cg.procsFiles()...)
	return append(append(w, "--"), argv...)
}

// waitLeader polls for the container's PID 1 (nspawn's stub init, a child
// of the nspawn process in a mount namespace of its own) until it exists
// or nspawn ended. It returns 0 when a main process ended first.
func (in *Instance) waitLeader(ctx context.Context) (int, error) {
	pid := in.main.Process.Pid
	myPidNS, _ := os.Readlink("/proc/self/ns/pid")
	for delay := 500 * time.Microsecond; ; delay = min(delay*2, 20*time.Millisecond) {
		// nspawn's short-lived helper children are copies of nspawn; the
		// stub init renames itself and lives in the new PID namespace
		for _, c := range children(pid) {
			comm, _ := os.ReadFile("/proc/" + strconv.Itoa(c) + "/comm")
			pidNS, _ := os.Readlink("/proc/" + strconv.Itoa(c) + "/ns/pid")
			if strings.TrimSpace(string(comm)) == stubInit && pidNS != "" && pidNS != myPidNS {
				return c, nil
			}
		}
		select {
		case <-in.done:
			if len(in.spec.Main) > 0 {
				return 0, nil // Wait reports the status
			}
			return 0, fmt.Errorf("nspawn %s ended at once: %v: %s", in.id, in.mainErr, in.stderr.String())
		case <-ctx.Done():
			return 0, fmt.Errorf("nspawn %s: %w", in.id, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// stubInit is the comm of nspawn's --as-pid2 init.
const stubInit = "(sd-stubinit)"

// children lists pid's child processes.
func children(pid int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// Instance is one systemd-nspawn container.
type Instance struct {
	p       *Platform
	id      string
	spec    platform.Spec
	dir     string
	network string
	overlay *local.Overlay
	netns   *local.Netns
	cg      *group
	main    *exec.Cmd
	mainErr error
	leader  int
	stderr  local.TailBuffer
	done    chan struct{}

	mu     sync.Mutex
	closed bool
}

// ID is the machine name ("isob-n...").
func (in *Instance) ID() string { return in.id }

// Exec runs argv in the container's namespaces and cgroup via nsenter.
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if len(argv) == 0 {
		return errors.New("nspawn: empty command")
	}
	in.mu.Lock()
	closed := in.closed
	in.mu.Unlock()
	if closed || in.leader == 0 {
		return fmt.Errorf("nspawn: instance %s is not running", in.id)
	}
	select {
	case <-in.done:
		return fmt.Errorf("nspawn: instance %s has stopped", in.id)
	default:
	}
	full := in.hostArgv(append([]string{"nsenter", "-t", strconv.Itoa(in.leader), "-a", "--wd=/"}, local.GuestArgv(argv)...))
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Env = local.Env()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	return local.Run(ctx, cmd, argv, "nspawn exec")
}

// CopyIn writes the host file into the container through exec.
func (in *Instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	return local.CopyIn(ctx, in.Exec, "nspawn", hostPath, guestPath, mode)
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
	f := map[string]string{"network": in.network, "storage": "overlay", "machine": in.id, "leader_pid": strconv.Itoa(in.leader)}
	if in.spec.Storage == platform.StorageVolume {
		f["storage"] = "overlay+bind-volume"
	}
	if in.spec.CPUs > 0 {
		f["cpus"] = strconv.FormatFloat(in.spec.CPUs, 'f', -1, 64)
	}
	if in.spec.Memory > 0 {
		f["memory"] = strconv.FormatInt(in.spec.Memory, 10)
	}
	if in.cg != nil && len(in.cg.dirs) > 0 {
		f["cgroup"] = in.cg.dirs[0]
	}
	return f
}

// Wait waits for nspawn to exit and returns the main process's status.
func (in *Instance) Wait(ctx context.Context) (int, error) {
	return local.WaitExit(ctx, in.done, &in.mainErr, in.closedIdle, "nspawn")
}

// closedIdle reports an idle instance (no Spec.Main) that was closed.
func (in *Instance) closedIdle() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.closed && len(in.spec.Main) == 0
}

// Close kills the container (its PID 1 takes the whole PID namespace with
// it), waits for nspawn, and removes the cgroup, netns, overlay and files.
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
		if in.leader > 0 {
			syscall.Kill(in.leader, syscall.SIGKILL)
		}
		local.AwaitExit(in.done, in.main.Process.Pid, 5*time.Second)
	} else {
		close(in.done)
	}
	return local.Teardown(
		in.cg.remove,
		func() error { return in.netns.Close(ctx) },
		in.overlay.Unmount,
		local.RemoveAll(in.dir),
	)
}

// Leftovers lists what nspawn instances left on this host (see
// local.Leftovers): network namespaces, veths, leases, instance
// directories, mounts under stateDir and cgroups, plus nspawn's per-machine
// state under /run/systemd/nspawn.
func Leftovers(ctx context.Context, stateDir string) ([]string, error) {
	out := local.Leftovers(stateDir, Code)
	for _, d := range []string{"/run/systemd/nspawn/propagate", "/run/systemd/nspawn/locks"} {
		es, _ := os.ReadDir(d)
		for _, e := range es {
			if strings.Contains(e.Name(), local.Prefix+Code) {
				out = append(out, "nspawn-state "+filepath.Join(d, e.Name()))
			}
		}
	}
	return out, nil
}
