package runc

import (
	"fmt"
	"syscall"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/confine"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
)

// ociVersion is the runtime-spec version config.json declares: what
// isobench writes is valid 1.0.2, which every runtime here (runc 1.1,
// crun 1.8, runsc) reads.
const ociVersion = "1.0.2"

// cfsPeriod is the CFS period isobench uses for CPU quotas, in µs.
const cfsPeriod = local.CFSPeriod

// defaultCaps is Docker's default capability set (moby's
// oci/caps.DefaultCapabilities), which `runc spec` and crun's defaults also
// start from.
var defaultCaps = confine.DockerCaps

// dockerDevices is the devices cgroup of a Docker container: deny all,
// then confine.DockerDevices. runc appends most of these itself, crun
// fewer (no tun), and Docker's spec adds the console: listing them all
// gives every runtime Docker's list.
func dockerDevices() []specs.LinuxDeviceCgroup {
	out := []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}
	for _, r := range confine.DockerDevices {
		d := specs.LinuxDeviceCgroup{Allow: true, Type: string(r.Type), Access: r.Access}
		if r.Major >= 0 {
			d.Major = &r.Major
		}
		if r.Minor >= 0 {
			d.Minor = &r.Minor
		}
		out = append(out, d)
	}
	return out
}

// nofile raises the container's open-files limit to the host's hard limit
// for isobench (a container may not exceed it).
func nofile() specs.POSIXRlimit {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Max == 0 {
		l.Max = 1024
	}
	return specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: l.Max, Soft: l.Max}
}

// phaseHooks returns hooks that write "created" (createRuntime) and
// "started" (poststart) lines to the FIFO at fifo.
//
// A hook receives the container's state as JSON on its stdin, and crun
// writes it only after it has started the hook. A hook that exits without
// reading it makes that write fail with EPIPE, which crun (1.8) treats as
// a failed hook: a failed createRuntime hook aborts `crun run` ("error
// executing hook ... writing to pipe: Broken pipe"), and a failed poststart
// hook makes crun kill and delete the container that was already reported
// started, so a later exec finds no state. So the hook reads the state to
// its end first (runc ignores EPIPE there, so it never showed there).
func phaseHooks(fifo string) *specs.Hooks {
	hook := func(name string) []specs.Hook {
		return []specs.Hook{{Path: "/bin/sh", Args: []string{"sh", "-c", `/bin/cat >/dev/null; echo ` + name + ` > "$0"`, fifo}}}
	}
	return &specs.Hooks{CreateRuntime: hook("created"), Poststart: hook("started")}
}

// bundleConfig is what ociConfig needs besides the spec.
type bundleConfig struct {
	id        string
	rootfs    string // the overlay mount
	volume    string // host dir bind-mounted at ScratchDir, or ""
	netnsPath string // network namespace to join, or "" for a new one
	hostNet   bool   // no network namespace at all
	hooks     *specs.Hooks
	seccomp   bool // Docker's default seccomp profile
}

// ociConfig builds config.json for s: the main process, namespaces, the
// usual /proc, /dev, /sys and cgroup mounts, a cgroup under /isobench and
// the CFS quota and memory limit.
func ociConfig(s platform.Spec, b bundleConfig) (*specs.Spec, error) {
	ns := []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.MountNamespace}}
	switch {
	case b.hostNet:
	case b.netnsPath != "":
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: b.netnsPath})
	default:
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace})
	}
	mounts := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
	}
	if b.hostNet {
		// sysfs can only be mounted afresh in a network namespace the
		// container owns; with the host's, bind the host's /sys read-only
		mounts[5] = specs.Mount{Destination: "/sys", Type: "bind", Source: "/sys", Options: []string{"rbind", "nosuid", "noexec", "nodev", "ro"}}
	}
	if b.volume != "" {
		mounts = append(mounts, specs.Mount{Destination: guestenv.ScratchDir, Type: "bind", Source: b.volume, Options: []string{"rbind", "rw"}})
	}
	res := &specs.LinuxResources{Devices: dockerDevices()}
	if s.CPUs > 0 {
		quota, period := int64(s.CPUs*cfsPeriod), uint64(cfsPeriod)
		res.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
	}
	if s.Memory > 0 {
		// Docker's meaning (isobench's docker platform sets --memory-swap
		// to the same size): no swap beyond the limit; without swap
		// accounting, swappiness 0 (cgroup.SwapFacts says which)
		limit := s.Memory
		res.Memory = &specs.LinuxMemory{Limit: &limit}
		if cgroup.SwapAccounting() {
			res.Memory.Swap = &limit
		} else if cgroup.Version() == 1 {
			var zero uint64
			res.Memory.Swappiness = &zero
		}
	}
	spec := &specs.Spec{
		Version: ociVersion,
		Process: &specs.Process{
			Args: local.MainArgv(s),
			Env:  local.Env(),
			Cwd:  "/",
			// no inheritable set, as Docker since 20.10.14 (CVE-2022-24769)
			Capabilities: &specs.LinuxCapabilities{Bounding: defaultCaps, Effective: defaultCaps, Permitted: defaultCaps},
			Rlimits:      []specs.POSIXRlimit{nofile()},
			// no no_new_privs: Docker sets it only when asked
			// (--security-opt no-new-privileges)
			NoNewPrivileges: false,
		},
		Root:     &specs.Root{Path: b.rootfs},
		Hostname: local.Hostname,
		Mounts:   mounts,
		Hooks:    b.hooks,
		Linux: &specs.Linux{
			CgroupsPath: "/isobench/" + b.id,
			Resources:   res,
			Namespaces:  ns,
			MaskedPaths: []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
				"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	if b.seccomp {
		// Docker's default profile for this architecture and the
		// capabilities above (the same filter dockerd writes into its
		// bundles): an allowlist, EPERM for the rest
		sc, err := seccomp.GetDefaultProfile(spec)
		if err != nil {
			return nil, fmt.Errorf("default seccomp profile: %w", err)
		}
		spec.Linux.Seccomp = sc
	}
	return spec, nil
}
