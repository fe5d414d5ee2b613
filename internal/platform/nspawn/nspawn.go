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
//     `nsenter -t <leader> -a -r -w` (all namespaces of the container's PID
//     1, the stub init or the booted systemd, which is nspawn's child, and
//     its root and working directory, so the command starts at / inside
//     the container, not in a host directory), run inside the instance's
//     cgroup.
//   - Confinement: every workload process (the main process and each
//     Exec) runs under "isobench agent confine" (internal/confine): Docker's
//     default seccomp filter and capability set, no no_new_privs, as a
//     Docker container's process. An Exec could not inherit nspawn's own
//     filter (a filter passes only from parent to child), and nspawn's
//     filter is not Docker's, so nspawn applies none (SYSTEMD_SECCOMP=0):
//     a workload pays for exactly Docker's filter. The container's PID 1
//     (the stub init, or with boot=true systemd) keeps nspawn's default
//     capabilities and no filter; the init_* facts say so. Devices: the
//     instance's cgroup allows only Docker's (confine.DockerDevices) after
//     a deny-all, on cgroup v1; on v2 nothing restricts them (nspawn's
//     DeviceAllow needs a systemd unit) and the devices fact says so.
package nspawn

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/confine"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
)

// Code is the letter nspawn's host objects carry after local.Prefix.
const Code = "n"

// Factory registers the systemd-nspawn platform.
var Factory = platform.Factory{
	Name: "nspawn",
	Help: "systemd-nspawn on an overlay rootfs (no systemd needed); network=host (default), none or bridge; " +
		"boot=true boots the image's systemd (image=debian) as a system container",
	Extra: []string{"boot"},
	New:   New,
	Cost:  platform.Cost{Instance: 700 * time.Millisecond},
	// systemd-nspawn names the machine, nsenter (Exec) enters it; nspawn
	// keeps per-machine files under /run/systemd/nspawn
	Sweep: local.Sweep(local.Traits{Code: Code, Engines: []string{"systemd-nspawn", "nsenter"},
		EngineFiles: []string{"/run/systemd/nspawn/propagate", "/run/systemd/nspawn/locks"}, EngineFilesKind: "nspawn-state"}),
	Image: func(o platform.Options) string {
		if boot, _ := parseBoot(o.Extra["boot"]); boot {
			return image.Debian // systemd to boot
		}
		return ""
	},
}

// Platform runs systemd-nspawn containers.
type Platform struct {
	*local.Host
	boot bool // boot=true: the image's init at PID 1 (system.go)
}

// New checks the options.
func New(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
	h, err := local.NewNetHost("nspawn", Code, o, env)
	if err != nil {
		return nil, err
	}
	boot, err := parseBoot(o.Extra["boot"])
	if err != nil {
		return nil, err
	}
	return &Platform{Host: h, boot: boot}, nil
}

// Available checks that systemd-nspawn, nsenter and unshare exist and that
// nspawn runs.
func (p *Platform) Available(ctx context.Context) error {
	if err := p.CheckTools(ctx, "systemd-container", []string{"systemd-nspawn", "--version"}, "systemd-nspawn"); err != nil {
		return err
	}
	if err := p.CheckTools(ctx, "util-linux", nil, "nsenter", "unshare", "setpriv"); err != nil {
		return err
	}
	return p.CheckOverlay()
}

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := p.HostFacts(ctx, "nspawn_version", "", "systemd-nspawn", "--version")
	f["systemd_pid1"] = strconv.FormatBool(systemdPID1())
	return f
}

// systemdPID1 reports whether the host runs systemd as init.
func systemdPID1() bool {
	b, _ := os.ReadFile("/proc/1/comm")
	return strings.TrimSpace(string(b)) == "systemd"
}

// Create starts systemd-nspawn and returns once the container's init runs
// (or the main process already ended).
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	if err := p.checkBoot(s); err != nil {
		return nil, err
	}
	in := &Instance{p: p}
	in.Instance, err = p.Begin(ctx, s, local.Setup{DefaultNetwork: platform.NetHost, Netns: true}, in)
	if err != nil {
		return nil, err
	}
	defer in.Undo(ctx, &err)
	var devices []string
	for _, r := range confine.DockerDevices {
		devices = append(devices, r.String())
	}
	if in.cg, err = newGroup(in.ID(), cgroup.Limits{CPUs: s.CPUs, Memory: s.Memory, Devices: devices}); err != nil {
		return nil, fmt.Errorf("nspawn: %w", err)
	}
	init := "--as-pid2"
	if p.boot {
		init = "--boot"
		if err := prepareSystem(in.Overlay.Merged); err != nil {
			return nil, err
		}
	}
	args := []string{"-q", "-D", in.Overlay.Merged, "--machine=" + in.ID(), "--register=no", "--keep-unit", init,
		"--console=pipe", "--setenv=" + local.Env()[2], "--chdir=/"}
	switch {
	case in.Network == platform.NetNone:
		args = append(args, "--private-network")
	case in.Netns != nil:
		args = append(args, "--network-namespace-path="+in.Netns.Path())
	}
	if in.Network != platform.NetHost {
		// the resolver the skeleton wrote (local.NoResolver): nspawn's
		// default copies the host's, unreachable from the bridge, over it
		args = append(args, "--resolv-conf=off")
	}
	if in.Volume != "" {
		args = append(args, "--bind="+in.Volume+":"+guestenv.ScratchDir)
	}
	if !p.boot {
		args = append(append(args, "--"), local.ConfinedArgv(local.MainArgv(s))...)
	}
	argv := in.hostArgv(append([]string{"unshare", "-m", "sh", "-c",
		`mkdir -p /run/systemd/nspawn && mount -t tmpfs -o mode=0755 isobench-nspawn /run/systemd/nspawn && exec "$0" "$@"`,
		"systemd-nspawn"}, args...))

	stdout := s.MainStdout
	if stdout == nil || p.boot {
		stdout = io.Discard // boot: the main process is started once the system is up
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, &in.Stderr
	// no seccomp filter of nspawn's (see the package doc); the container
	// does not inherit nspawn's environment
	cmd.Env = append(local.Env(), "SYSTEMD_SECCOMP=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if s.Phase != nil {
		s.Phase("created", time.Now())
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("nspawn: start: %w", err)
	}
	in.Main = cmd
	nspawnDone := make(chan struct{})
	go func() {
		err := cmd.Wait()
		if p.boot {
			in.nspawnErr = err
			close(nspawnDone)
			return
		}
		in.MainErr = err
		close(in.Done)
	}()
	if p.boot {
		go in.awaitSystem(nspawnDone)
	}
	leader, err := in.waitLeader(ctx)
	if err != nil {
		return nil, err
	}
	in.leader = leader
	if p.boot {
		if err := in.bootSystem(ctx, s); err != nil {
			return nil, err
		}
		return in, nil
	}
	if s.Phase != nil {
		s.Phase("started", time.Now())
	}
	return in, nil
}

// hostArgv prefixes argv with "isobench agent cgexec" into the instance's
// cgroup.
func (in *Instance) hostArgv(argv []string) []string {
	w := append([]string{in.p.Env().AgentBinary, "agent", "cgexec"}, in.cg.procsFiles()...)
	return append(append(w, "--"), argv...)
}

// waitLeader polls for the container's PID 1 (nspawn's stub init, a child
// of the nspawn process in a mount namespace of its own) until it exists
// or nspawn ended. It returns 0 when a main process ended first.
func (in *Instance) waitLeader(ctx context.Context) (int, error) {
	pid := in.Main.Process.Pid
	myPidNS, _ := os.Readlink("/proc/self/ns/pid")
	for delay := 500 * time.Microsecond; ; delay = min(delay*2, 20*time.Millisecond) {
		// nspawn's short-lived helper children are copies of nspawn; the
		// stub init renames itself and lives in the new PID namespace
		for _, c := range children(pid) {
			comm, _ := os.ReadFile("/proc/" + strconv.Itoa(c) + "/comm")
			pidNS, _ := os.Readlink("/proc/" + strconv.Itoa(c) + "/ns/pid")
			if name := strings.TrimSpace(string(comm)); (name == stubInit || (in.p.boot && name == "systemd")) && pidNS != "" && pidNS != myPidNS {
				return c, nil
			}
		}
		select {
		case <-in.Done:
			if len(in.Spec.Main) > 0 {
				return 0, nil // Wait reports the status
			}
			return 0, in.EndedAtOnce("")
		case <-ctx.Done():
			return 0, fmt.Errorf("nspawn %s: %w", in.ID(), ctx.Err())
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

// Instance is one systemd-nspawn container; its id ("isob-n...") is the
// machine name.
type Instance struct {
	*local.Instance
	p      *Platform
	cg     *group
	leader int // the container's PID 1, nspawn's stub init
	// boot=true (system.go)
	nspawnErr error
	mainExit  chan error
	bootState string
}

// Exec runs argv in the container's namespaces and cgroup via nsenter,
// under "isobench agent confine".
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	return in.exec(ctx, local.ConfinedArgv(argv), stdio)
}

// exec runs argv (a path inside the container) in the container's
// namespaces and cgroup via nsenter, with the host's capabilities: for
// isobench's own commands (systemctl), and under confine for workloads.
func (in *Instance) exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if err := in.CheckExec(argv); err != nil {
		return err
	}
	if in.leader == 0 {
		return fmt.Errorf("nspawn: instance %s is not running", in.ID())
	}
	full := in.hostArgv(append(in.nsenterArgv(), argv...))
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Env = local.Env()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	return local.Run(ctx, cmd, argv, "nspawn exec")
}

// Facts implements platform.Instance.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := in.Instance.Facts(ctx)
	f["machine"] = in.ID()
	f["leader_pid"] = strconv.Itoa(in.leader)
	// the workloads' (isobench agent confine) and the init's: see the
	// package doc
	f["capabilities"] = "docker-default"
	f["seccomp_profile"] = "docker-default"
	f["devices"] = "unconfined (cgroup v2: no device program)"
	if in.cg != nil && in.cg.g.DevicesConfined() {
		f["devices"] = confine.DockerDevicesList()
	}
	f["init_capabilities"] = "nspawn-default"
	f["init_seccomp_profile"] = "none"
	if in.leader > 0 {
		in.InitConfinementFacts(f, in.leader)
		if c := children(in.leader); !in.p.boot && len(c) > 0 {
			in.ConfinementFacts(f, c[0]) // the main process
		}
	}
	if in.cg != nil && len(in.cg.dirs) > 0 {
		f["cgroup"] = in.cg.dirs[0]
	}
	return f
}

// Stop implements local.Engine: killing the container's PID 1 takes the
// whole PID namespace with it.
func (in *Instance) Stop(ctx context.Context) {
	if in.leader > 0 {
		syscall.Kill(in.leader, syscall.SIGKILL)
	}
}

// Remove implements local.Engine: the instance's cgroup.
func (in *Instance) Remove(ctx context.Context) error { return in.cg.remove() }
