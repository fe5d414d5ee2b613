package runc

import (
	"syscall"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
)

// The subset of the OCI runtime spec (1.0) isobench writes.
type ociSpec struct {
	OCIVersion string     `json:"ociVersion"`
	Process    ociProcess `json:"process"`
	Root       ociRoot    `json:"root"`
	Hostname   string     `json:"hostname"`
	Mounts     []ociMount `json:"mounts"`
	Hooks      *ociHooks  `json:"hooks,omitempty"`
	Linux      ociLinux   `json:"linux"`
}

type ociProcess struct {
	Terminal        bool      `json:"terminal"`
	User            ociUser   `json:"user"`
	Args            []string  `json:"args"`
	Env             []string  `json:"env"`
	Cwd             string    `json:"cwd"`
	Capabilities    *ociCaps  `json:"capabilities,omitempty"`
	Rlimits         []ociRlim `json:"rlimits,omitempty"`
	NoNewPrivileges bool      `json:"noNewPrivileges"`
}

type ociUser struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

type ociCaps struct {
	Bounding    []string `json:"bounding"`
	Effective   []string `json:"effective"`
	Permitted   []string `json:"permitted"`
	Inheritable []string `json:"inheritable"`
}

type ociRlim struct {
	Type string `json:"type"`
	Hard uint64 `json:"hard"`
	Soft uint64 `json:"soft"`
}

type ociRoot struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
}

type ociMount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Source      string   `json:"source"`
	Options     []string `json:"options,omitempty"`
}

type ociHook struct {
	Path string   `json:"path"`
	Args []string `json:"args,omitempty"`
}

type ociHooks struct {
	CreateRuntime []ociHook `json:"createRuntime,omitempty"`
	Poststart     []ociHook `json:"poststart,omitempty"`
}

type ociLinux struct {
	CgroupsPath   string         `json:"cgroupsPath"`
	Resources     ociResources   `json:"resources"`
	Namespaces    []ociNamespace `json:"namespaces"`
	MaskedPaths   []string       `json:"maskedPaths"`
	ReadonlyPaths []string       `json:"readonlyPaths"`
}

type ociResources struct {
	Devices []ociDevice `json:"devices"`
	CPU     *ociCPU     `json:"cpu,omitempty"`
	Memory  *ociMemory  `json:"memory,omitempty"`
}

type ociDevice struct {
	Allow  bool   `json:"allow"`
	Access string `json:"access"`
}

type ociCPU struct {
	Quota  int64  `json:"quota"`
	Period uint64 `json:"period"`
}

type ociMemory struct {
	Limit int64 `json:"limit"`
}

type ociNamespace struct {
	Type string `json:"type"`
	Path string `json:"path,omitempty"`
}

// cfsPeriod is the CFS period isobench uses for CPU quotas, in µs.
const cfsPeriod = 100000

// defaultCaps is Docker's default capability set, which `runc spec` and
// crun's defaults also start from.
var defaultCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// nofile raises the container's open-files limit to the host's hard limit
// for isobench (a container may not exceed it).
func nofile() ociRlim {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Max == 0 {
		l.Max = 1024
	}
	return ociRlim{Type: "RLIMIT_NOFILE", Hard: l.Max, Soft: l.Max}
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
func phaseHooks(fifo string) *ociHooks {
	hook := func(name string) []ociHook {
		return []ociHook{{Path: "/bin/sh", Args: []string{"sh", "-c", `/bin/cat >/dev/null; echo ` + name + ` > "$0"`, fifo}}}
	}
	return &ociHooks{CreateRuntime: hook("created"), Poststart: hook("started")}
}

// bundleConfig is what ociConfig needs besides the spec.
type bundleConfig struct {
	id        string
	rootfs    string // the overlay mount
	volume    string // host dir bind-mounted at ScratchDir, or ""
	netnsPath string // network namespace to join, or "" for a new one
	hostNet   bool   // no network namespace at all
	hooks     *ociHooks
}

// ociConfig builds config.json for s: the main process, namespaces, the
// usual /proc, /dev, /sys and cgroup mounts, a cgroup under /isobench and
// the CFS quota and memory limit.
func ociConfig(s platform.Spec, b bundleConfig) ociSpec {
	ns := []ociNamespace{{Type: "pid"}, {Type: "ipc"}, {Type: "uts"}, {Type: "mount"}}
	switch {
	case b.hostNet:
	case b.netnsPath != "":
		ns = append(ns, ociNamespace{Type: "network", Path: b.netnsPath})
	default:
		ns = append(ns, ociNamespace{Type: "network"})
	}
	mounts := []ociMount{
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
		mounts[5] = ociMount{Destination: "/sys", Type: "bind", Source: "/sys", Options: []string{"rbind", "nosuid", "noexec", "nodev", "ro"}}
	}
	if b.volume != "" {
		mounts = append(mounts, ociMount{Destination: platform.ScratchDir, Type: "bind", Source: b.volume, Options: []string{"rbind", "rw"}})
	}
	res := ociResources{Devices: []ociDevice{{Allow: false, Access: "rwm"}}}
	if s.CPUs > 0 {
		res.CPU = &ociCPU{Quota: int64(s.CPUs * cfsPeriod), Period: cfsPeriod}
	}
	if s.Memory > 0 {
		res.Memory = &ociMemory{Limit: s.Memory}
	}
	return ociSpec{
		OCIVersion: "1.0.2",
		Process: ociProcess{
			Args:            local.MainArgv(s),
			Env:             local.Env(),
			Cwd:             "/",
			Capabilities:    &ociCaps{Bounding: defaultCaps, Effective: defaultCaps, Permitted: defaultCaps, Inheritable: defaultCaps},
			Rlimits:         []ociRlim{nofile()},
			NoNewPrivileges: true,
		},
		Root:     ociRoot{Path: b.rootfs},
		Hostname: "isobench",
		Mounts:   mounts,
		Hooks:    b.hooks,
		Linux: ociLinux{
			CgroupsPath: "/isobench/" + b.id,
			Resources:   res,
			Namespaces:  ns,
			MaskedPaths: []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
				"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
}
