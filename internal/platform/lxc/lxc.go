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
// Confinement: every workload process (the main process and each Exec)
// has Docker's default confinement. LXC applies one seccomp policy and
// capability set to the whole container, its init included, and a booted
// systemd does not run under Docker's (it mounts, unshares...); so, in
// both init modes, the container has no filter of LXC's and each workload
// runs under "isobench agent confine"
// (internal/confine), which installs Docker's filter and drops the
// capability bounding set to Docker's before it execs the workload. The
// container's init (LXC's init.lxc, or with init=system the image's
// systemd) keeps LXC's default capabilities (all but DropCaps, as
// common.conf gives) and has no filter: the init_* facts say so. Devices:
// deny all, then Docker's list (confine.DockerDevices), for the whole
// container. Memory: no swap beyond the memory limit (memsw = memory, or
// swappiness 0 without swap accounting), as Docker's --memory-swap.
//
// Names (names.go): on the bridge, which has no route out and no DNS
// server, the container's /etc/resolv.conf names only the loopback (the
// host's nameservers, copied into image trees, would make every lookup
// wait 10 s) and /etc/hosts maps its host name to its lease, as Docker's
// bridge and lxc-net's dnsmasq give a name lookup an answer at once.
//
// Cgroups: lxc.cgroup.* (v1) or lxc.cgroup2.* (v2) set the CFS quota and
// memory limit; lxc.mount.auto cgroup:ro:force mounts the container's
// cgroup namespace at /sys/fs/cgroup so it sees its own limits ("force":
// LXC otherwise skips the mount for a container that keeps CAP_SYS_ADMIN).
package lxc

import (
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
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/confine"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
)

// Code is the letter LXC's host objects carry after local.Prefix.
const Code = "l"

const cfsPeriod = local.CFSPeriod

// DropCaps are the capabilities LXC's common.conf drops, which every
// LXC template's containers include.
const DropCaps = "mac_admin mac_override sys_time sys_module sys_rawio"

// Factory registers the LXC platform.
var Factory = platform.Factory{
	Name: "lxc",
	Help: "LXC containers (lxc-execute/lxc-attach) on an overlay rootfs; network=bridge (default, veth on the isobench bridge), host or none; " +
		"init=system boots the image's systemd (image=debian) as a system container",
	Extra: []string{"init"},
	New:   New,
	Cost:  platform.Cost{Instance: 600 * time.Millisecond},
	// lxc-execute (lxc-start for init=system) and lxc-attach name the
	// container; its directory in the lxcpath (LXCPath), its cgroups
	// lxc.payload.<id> and lxc.monitor.<id>
	Sweep: local.Sweep(local.Traits{Code: Code, Engines: []string{"lxc-execute", "lxc-attach", "lxc-start"},
		StateSubdirs: []string{lxcDir}, CgroupPrefixes: []string{"lxc.payload.", "lxc.monitor."}}),
	Image: func(o platform.Options) string {
		if sys, _ := parseInit(o.Extra["init"]); sys {
			return image.Debian // systemd to boot
		}
		return ""
	},
}

// Platform runs LXC containers under StateDir/lxc.
type Platform struct {
	*local.Host
	lxcpath string
	system  bool // init=system: the image's own init at PID 1 (system.go)
}

// New checks the options.
func New(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
	h, err := local.NewNetHost("lxc", Code, o, env)
	if err != nil {
		return nil, err
	}
	system, err := parseInit(o.Extra["init"])
	if err != nil {
		return nil, err
	}
	return &Platform{Host: h, lxcpath: LXCPath(env.StateDir), system: system}, nil
}

// LXCPath is the lxcpath (-P) isobench's containers live in.
func LXCPath(stateDir string) string { return filepath.Join(stateDir, lxcDir) }

// lxcDir is the lxcpath's name in the state directory.
const lxcDir = "lxc"

// Available checks the lxc tools and that they run.
func (p *Platform) Available(ctx context.Context) error {
	if err := p.CheckTools(ctx, "lxc", []string{"lxc-execute", "--version"}, "lxc-execute", "lxc-attach", "lxc-stop"); err != nil {
		return err
	}
	return p.CheckOverlay()
}

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := p.HostFacts(ctx, "lxc_version", "", "lxc-execute", "--version")
	f["apparmor"] = strconv.FormatBool(apparmor())
	return f
}

func apparmor() bool {
	_, err := os.Stat("/sys/kernel/security/apparmor")
	return err == nil
}

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
	swap     bool // the kernel accounts swap (memsw) to cgroups
	apparmor bool
	system   bool // init=system
}

// config renders the LXC container configuration.
func config(s platform.Spec, c containerConfig) string {
	var b strings.Builder
	set := func(k, v string) { fmt.Fprintf(&b, "%s = %s\n", k, v) }
	set("lxc.uts.name", local.Hostname)
	set("lxc.rootfs.path", "dir:"+c.rootfs)
	set("lxc.autodev", "1")
	if c.system {
		// systemd makes its own cgroups below the container's
		set("lxc.mount.auto", "proc:mixed sys:mixed cgroup:rw:force")
	} else {
		set("lxc.mount.auto", "proc:mixed sys:ro cgroup:ro:force")
	}
	set("lxc.console.path", "none")
	set("lxc.tty.max", "0")
	set("lxc.pty.max", "16")
	// the init's capabilities: LXC's default (common.conf); workloads
	// get Docker's from "isobench agent confine", which needs
	// CAP_SYS_ADMIN to install Docker's filter without no_new_privs. No
	// seccomp filter of LXC's: the workloads' is Docker's alone
	set("lxc.cap.drop", DropCaps)
	devices := "lxc.cgroup.devices."
	if c.cgroupV2 {
		devices = "lxc.cgroup2.devices."
	}
	set(devices+"deny", "a")
	for _, r := range confine.DockerDevices {
		set(devices+"allow", r.String())
	}
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
		set("lxc.mount.entry", c.volume+" "+strings.TrimPrefix(guestenv.ScratchDir, "/")+" none bind,create=dir 0 0")
	}
	if c.cgroupV2 {
		if s.CPUs > 0 {
			set("lxc.cgroup2.cpu.max", fmt.Sprintf("%d %d", int64(s.CPUs*cfsPeriod), cfsPeriod))
		}
		if s.Memory > 0 {
			set("lxc.cgroup2.memory.max", strconv.FormatInt(s.Memory, 10))
			if c.swap {
				set("lxc.cgroup2.memory.swap.max", "0")
			}
		}
	} else {
		if s.CPUs > 0 {
			set("lxc.cgroup.cpu.cfs_period_us", strconv.Itoa(cfsPeriod))
			set("lxc.cgroup.cpu.cfs_quota_us", strconv.FormatInt(int64(s.CPUs*cfsPeriod), 10))
		}
		if s.Memory > 0 {
			// memory first: memsw may not be below it
			set("lxc.cgroup.memory.limit_in_bytes", strconv.FormatInt(s.Memory, 10))
			if c.swap {
				set("lxc.cgroup.memory.memsw.limit_in_bytes", strconv.FormatInt(s.Memory, 10))
			} else {
				set("lxc.cgroup.memory.swappiness", "0")
			}
		}
	}
	if c.hook != "" {
		set("lxc.hook.start-host", c.hook)
	}
	// documentation only: the command is given to lxc-execute, since this
	// key is split on blanks without quoting
	if c.system {
		set("lxc.init.cmd", SystemInit)
	} else {
		set("lxc.init.cmd", strings.Join(local.ConfinedArgv(local.MainArgv(s)), " "))
	}
	return b.String()
}

// Create writes the container config and starts lxc-execute, returning
// once the container's init is about to run (or already ended).
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	if err := p.checkSystem(s); err != nil {
		return nil, err
	}
	in := &Instance{p: p}
	in.Instance, err = p.Begin(ctx, s, local.Setup{DefaultNetwork: platform.NetBridge, Lease: true, PhaseFIFO: true}, in)
	if err != nil {
		return nil, err
	}
	defer in.Undo(ctx, &err)
	id := in.ID()
	c := containerConfig{rootfs: in.Overlay.Merged, volume: in.Volume, network: in.Network, cgroupV2: cgroup.Version() == 2,
		swap: cgroup.SwapAccounting(), apparmor: apparmor(), system: p.system}
	if in.Bridge != nil {
		c.addr = netip.PrefixFrom(in.Addr, in.Bridge.Prefix.Bits())
		c.gateway = in.Bridge.Gateway()
		c.bridge = in.Bridge.Name
		c.veth = local.VethName(id)
	}
	// LXC runs a hook as /bin/sh -c "HOOK NAME lxc start-host" (the words
	// are appended to the command string): ": " makes them a no-op, so
	// the line written is exactly "created"
	c.hook = "echo created >" + in.PhaseFIFO + "; :"
	cdir := filepath.Join(p.lxcpath, id)
	if err := local.PrivateDir(p.lxcpath); err != nil {
		return nil, fmt.Errorf("lxc: %w", err)
	}
	if err := local.FreshDir(cdir); err != nil {
		return nil, fmt.Errorf("lxc: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cdir, "config"), []byte(config(s, c)), 0o600); err != nil {
		return nil, fmt.Errorf("lxc: %w", err)
	}

	if p.system {
		if err := in.startSystem(ctx, s); err != nil {
			return nil, err
		}
		return in, nil
	}
	stdout := s.MainStdout
	if stdout == nil {
		stdout = io.Discard
	}
	args := []string{"-n", id, "-P", p.lxcpath, "-o", filepath.Join(in.Dir, "lxc.log"), "-l", "ERROR", "--"}
	cmd := exec.Command("lxc-execute", append(args, local.ConfinedArgv(local.MainArgv(s))...)...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = stdout, &in.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("lxc-execute: %w", err)
	}
	in.Main = cmd
	go func() {
		in.MainErr = cmd.Wait()
		close(in.Done)
	}()
	// LXC has no hook after the start-host one: "started" is now
	created, err := in.WaitPhase(ctx, "created")
	switch {
	case err != nil:
		return nil, err
	case created:
		in.running = true
		if s.Phase != nil {
			s.Phase("started", time.Now())
		}
	case len(s.Main) == 0:
		return nil, in.EndedAtOnce(in.log())
	}
	return in, nil // a short main process's status is Wait's
}

// Instance is one LXC container; its id ("isob-l...") is the container
// name.
type Instance struct {
	*local.Instance
	p         *Platform
	running   bool
	bootState string // init=system: systemd's state once booted
}

// log returns LXC's error log for messages.
func (in *Instance) log() string {
	b, _ := os.ReadFile(filepath.Join(in.Dir, "lxc.log"))
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	if s := strings.TrimSpace(string(b)); s != "" {
		return " (lxc log: " + s + ")"
	}
	return ""
}

// Exec runs argv in the container with lxc-attach and a clean environment,
// under "isobench agent confine" (Docker's filter and capabilities).
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if err := in.CheckExec(argv); err != nil {
		return err
	}
	if !in.running {
		return fmt.Errorf("lxc: instance %s is not running", in.ID())
	}
	args := []string{"-n", in.ID(), "-P", in.p.lxcpath, "--clear-env"}
	for _, e := range local.Env() {
		args = append(args, "-v", e)
	}
	args = append(append(args, "--"), local.ConfinedArgv(argv)...)
	cmd := exec.CommandContext(ctx, "lxc-attach", args...)
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	return local.Run(ctx, cmd, argv, "lxc-attach")
}

// Facts implements platform.Instance.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := in.Instance.Facts(ctx)
	f["container"] = in.ID()
	// the workloads' (isobench agent confine), see the package doc
	f["capabilities"] = "docker-default"
	f["seccomp_profile"] = "docker-default"
	f["devices"] = confine.DockerDevicesList()
	// the init's
	f["init_capabilities"] = "lxc-default (all but " + DropCaps + ")"
	f["init_seccomp_profile"] = "none"
	if in.p.system {
		f["init"] = "system (" + SystemInit + ")"
		f["system_state"] = in.bootState
	}
	if in.Main != nil && in.running {
		if !in.p.system {
			// the main process, the deepest under lxc-execute (below
			// LXC's init); lxc-attach's commands are confined alike
			if d := local.Descendants(in.Main.Process.Pid); len(d) > 0 {
				in.ConfinementFacts(f, d[len(d)-1])
			}
		}
		if out, err := exec.CommandContext(ctx, "lxc-info", "-n", in.ID(), "-P", in.p.lxcpath, "-p", "-H").Output(); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil {
				in.InitConfinementFacts(f, pid)
			}
		}
	}
	return f
}

// Stop implements local.Engine: lxc-stop -k.
func (in *Instance) Stop(ctx context.Context) {
	exec.CommandContext(ctx, "lxc-stop", "-n", in.ID(), "-P", in.p.lxcpath, "-k").Run()
}

// Remove implements local.Engine: the veth LXC made, the container
// directory (not lxc-destroy, which would empty the rootfs directory) and
// LXC's cgroups for the container when its monitor did not remove them.
func (in *Instance) Remove(ctx context.Context) error {
	return local.Teardown(
		func() error {
			if in.Bridge == nil {
				return nil
			}
			return hostnet.DeleteLink(ctx, local.VethName(in.ID()))
		},
		local.RemoveAll(filepath.Join(in.p.lxcpath, in.ID())),
		func() error { return removeCgroups(in.ID()) },
	)
}

// removeCgroups removes what is left of LXC's cgroups for container id
// (lxc.payload.ID, lxc.monitor.ID and the groups below them, on every
// hierarchy). LXC's monitor removes them when the container stops; one
// that was killed leaves them behind.
func removeCgroups(id string) error {
	var errs []error
	for _, pat := range []string{"/sys/fs/cgroup/*/lxc.*." + id, "/sys/fs/cgroup/lxc.*." + id} {
		m, _ := filepath.Glob(pat)
		for _, d := range m {
			if err := cgroup.RemoveDir(d); err != nil {
				errs = append(errs, fmt.Errorf("lxc: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}
