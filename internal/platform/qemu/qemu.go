// Package qemu runs workloads in QEMU virtual machines booted straight
// from a kernel and an initramfs, with no disk image and no firmware
// configuration: the guest is the image profile's root file system (for
// "minimal", static busybox and the isobench binary) packed as a newc cpio
// with /init linked to the isobench binary, which the kernel starts as
// "isobench agent vm-init" (package internal/guest). Init mounts /proc,
// /sys and /dev, loads the virtio modules the host kernel package ships
// (taken from /lib/modules/VERSION into the initramfs), configures eth0
// from the kernel command line, mounts the scratch file system, and starts
// the exec server, which greets the host on a virtio-serial port.
//
// Root disk: the Debian profiles (debian, debian-docker; 600 MB and more)
// do not boot as an initramfs. Their tree, without the agent, is made into
// a raw ext4 image with mkfs.ext4 -d (no loop mount, no root-only tool),
// cached in STATE/qemu as root-PROFILE-KEY.img (KEY from the profile's
// Debian content; older ones unused for an hour are removed) and attached
// as the first virtio disk with snapshot=on: every VM writes to its own
// temporary copy-on-write overlay and the image is shared read-only. The
// initramfs is then only the agent and the virtio modules: its init
// (guest package, isobench.root=/dev/vda:ext4) loads the modules, mounts
// the disk, copies its agent onto the VM's root, switches root and runs
// that agent as init again; the scratch disk is then /dev/vdb. Boot to
// agent under TCG on a busy 2-core host: 6-11 s of guest time (9-21 s
// from qemu start), the same range as the minimal initramfs measured at
// the same time (8.8-10.5 s guest, 13-15 s from qemu start): the kernel's
// boot under emulation dominates, not the root disk.
//
// Control channel: a virtio-serial port backed by a unix socket on the
// host (no vhost-vsock is needed, and the guest need not share any network
// with the host). Exec, CopyIn and the main process are multiplexed over it
// by stream id; the frame format is documented in package guest.
//
// Accelerator: option accel=auto|kvm|tcg. With auto, KVM is used when
// /dev/kvm opens and a probe VM greets the host within 20 seconds under
// KVM (some hosts, e.g. nested PVM ones, expose /dev/kvm but hang guests);
// the verdict is cached in the state dir. Otherwise TCG (emulation) runs,
// which is much slower: results then measure the emulator, and the
// accelerator is recorded in every instance's and the platform's facts.
//
// Spec mapping: cpus → -smp (whole cores only; 0 means all host cores),
// memory → -m (default 512m), network=bridge (default) → a tap on the
// isobench bridge (package hostnet) with a leased address, network=none →
// no NIC, network=host is refused. Storage: the guest's root is in RAM (the
// initramfs), so the scratch dir is never on the root: storage=rootfs (the
// default) attaches a per-instance raw disk image formatted ext4 on the
// host (option disk=SIZE, default 4g, sparse; cache=none when the host
// file system takes O_DIRECT) and mounts it at /isobench-scratch;
// storage=volume shares a host directory with virtiofs (QEMU's virtiofsd)
// instead.
//
// Startup phases: "created" when the qemu process has started, "started"
// when the guest's exec server says hello: VM startup is kernel boot to
// agent ready (the guest's own boot clock at hello is in the instance
// facts as guest_uptime_ns).
//
// Footprint (platform.Footprinter): every VM's qemu (and virtiofsd) runs
// in a cgroup of its own, isobench/isoq-* named like its run dir, with no
// limits (accounting only); memory and CPU are that cgroup's, disk the
// VM's own files (scratch disk, volume, root disk overlay). See
// footprint.go.
//
// Running an engine inside the guest (a later docker-in-vm platform): use
// New, then set Platform.RootfsHook (with RootfsHookKey naming its content
// for the initramfs cache) to add the engine's files to the root before it
// is packed, or option initrd=PATH to boot a prebuilt initramfs whose /init
// serves "agent vm-init"; option kernel=PATH picks another kernel (its
// modules are taken from /lib/modules/VERSION when present, VERSION from
// the file name vmlinuz-VERSION). Such a platform then Execs the engine's
// daemon and client through the same control channel. A root in RAM is a
// poor place for an engine's image store: attach the scratch disk and
// point the engine at /isobench-scratch.
package qemu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/guest"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/privdir"
	"github.com/isobench/isobench/internal/spec"
)

// Factory registers the qemu platform.
var Factory = platform.Factory{
	Name:  "qemu",
	Help:  "QEMU VMs booted from kernel+initramfs; accel=auto|kvm|tcg, kernel=, initrd=, disk=SIZE, quota=CPUS (a CFS quota on each vCPU thread, as libvirt's vcpu_quota: the host CPU time each guest CPU may use; QEMU's own threads stay unlimited); network=bridge|none; storage=rootfs (ext4 disk) or volume (virtiofs)",
	Extra: []string{"accel", "kernel", "initrd", "disk", "quota"},
	New:   New,
	// guests schedule their own vCPUs
	OwnCPUs: true,
	// booting a kernel and initramfs per instance
	Cost: platform.Cost{Instance: 6 * time.Second},
	// run directories with owner records, what they name, orphans
	Sweep: Sweep,
	// quota= gives each vCPU that share of a host CPU; cpus= counts vCPUs
	PartCPU: func(o platform.Options) bool {
		q, err := parseQuota(o)
		return err == nil && q > 0 && q != math.Trunc(q)
	},
}

// Binary is the QEMU system emulator isobench runs.
const Binary = "qemu-system-x86_64"

// InstallHint says how to get what the platform needs on Debian.
const InstallHint = "apt-get install -y qemu-system-x86 linux-image-cloud-amd64 e2fsprogs"

// ProbeTimeout bounds the KVM probe boot.
const ProbeTimeout = 20 * time.Second

// Accelerators.
const (
	AccelAuto = "auto"
	AccelKVM  = "kvm"
	AccelTCG  = "tcg"
)

// DefaultMemory is the guest's RAM when the spec sets none.
const DefaultMemory = 512 << 20

// DefaultDisk is the scratch disk's size when option disk is not set.
const DefaultDisk = 4 << 30

// VirtiofsdCandidates are where virtiofsd is looked for.
var VirtiofsdCandidates = []string{"/usr/lib/qemu/virtiofsd", "/usr/libexec/virtiofsd", "/usr/bin/virtiofsd"}

// Platform is the qemu platform.
type Platform struct {
	env  platform.Env
	base platform.Spec

	accelOpt string
	kernel   string // option kernel=, "" to find one
	initrd   string // option initrd=, "" to build one
	disk     int64
	quota    float64 // option quota=: host CPUs the VM's cgroup may use, 0 for no limit

	// RootfsHook, when set, is called with the root directory of every
	// initramfs before it is packed (to add an engine, config...).
	// RootfsHookKey must change whenever what the hook adds changes: it
	// is part of the cached initramfs's name.
	RootfsHook    func(ctx context.Context, profile, dir string) error
	RootfsHookKey string

	buildMu  sync.Mutex
	bridgeMu sync.Mutex // hostnet.Ensure is not safe to run concurrently
	accelMu  sync.Mutex
	accel    string // resolved accelerator, "" until known
	accelWhy string
}

// New checks the options; nothing is started until Create.
func New(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
	return NewPlatform(o, env)
}

// parseQuota reads option quota= (host CPUs per vCPU); 0 when not given.
func parseQuota(o platform.Options) (float64, error) {
	v := o.Extra["quota"]
	if v == "" {
		return 0, nil
	}
	q, err := strconv.ParseFloat(v, 64)
	if err != nil || !(q >= 0.01) || q > 1024 {
		return 0, fmt.Errorf("qemu: quota=%q must be a number of host CPUs, at least 0.01 (e.g. quota=0.5)", v)
	}
	return q, nil
}

// NewPlatform is New with the concrete type, for platforms built on this one.
func NewPlatform(o platform.Options, env platform.Env) (_ *Platform, err error) {
	p := &Platform{env: env, base: o.Base, accelOpt: AccelAuto, disk: DefaultDisk}
	if v := o.Extra["accel"]; v != "" {
		switch v {
		case AccelAuto, AccelKVM, AccelTCG:
			p.accelOpt = v
		default:
			return nil, fmt.Errorf("qemu: accel=%q must be auto, kvm or tcg", v)
		}
	}
	p.kernel = o.Extra["kernel"]
	p.initrd = o.Extra["initrd"]
	if v := o.Extra["disk"]; v != "" {
		n, err := spec.ParseSize(v)
		if err != nil || n < 16<<20 {
			return nil, fmt.Errorf("qemu: disk=%q must be a size of at least 16m", v)
		}
		p.disk = n
	}
	if p.quota, err = parseQuota(o); err != nil {
		return nil, err
	}
	if err := checkSpec(o.Base); err != nil {
		return nil, err
	}
	if env.AgentBinary == "" && p.initrd == "" {
		return nil, errors.New("qemu: no agent binary")
	}
	// the state dir is where VMs' disks are: owner records name them by
	// absolute path (vmowner), and nothing is kept under a fixed name in
	// the temporary directory, which any user can create first
	if p.env.StateDir == "" {
		return nil, errors.New("qemu: no state directory")
	}
	abs, err := filepath.Abs(p.env.StateDir)
	if err != nil {
		return nil, fmt.Errorf("qemu: state directory: %w", err)
	}
	p.env.StateDir = abs
	return p, nil
}

// privateDir makes (or checks: privdir.Private) STATE/qemu and the
// directories below it named by sub, and returns the last: the caches,
// disks and volumes in them are believed only there.
func (p *Platform) privateDir(sub ...string) (string, error) {
	dir := filepath.Join(p.env.StateDir, "qemu")
	for i := 0; ; i++ {
		if err := privdir.Private(dir); err != nil {
			return "", fmt.Errorf("qemu: %w", err)
		}
		if i == len(sub) {
			return dir, nil
		}
		dir = filepath.Join(dir, sub[i])
	}
}

// checkSpec refuses what a VM here cannot do.
func checkSpec(s platform.Spec) error {
	switch s.Network {
	case platform.NetDefault, platform.NetBridge, platform.NetNone:
	case platform.NetHost:
		return fmt.Errorf("qemu: network=host is %w (a VM has its own kernel and network stack; use bridge or none)", platform.ErrUnsupported)
	case platform.NetNAT:
		return fmt.Errorf("qemu: network=nat is %w (the host reaches the guest on the isobench bridge; use bridge)", platform.ErrUnsupported)
	default:
		return fmt.Errorf("qemu: network=%q must be bridge or none", s.Network)
	}
	switch s.Storage {
	case "", platform.StorageRootfs, platform.StorageVolume:
	default:
		return fmt.Errorf("qemu: storage=%q must be rootfs or volume", s.Storage)
	}
	if s.CPUs < 0 || s.CPUs != float64(int(s.CPUs)) {
		return fmt.Errorf("qemu: cpus=%v is %w: a VM has whole virtual CPUs (use an integer)", s.CPUs, platform.ErrUnsupported)
	}
	if s.Memory < 0 || (s.Memory > 0 && s.Memory < 64<<20) {
		return fmt.Errorf("qemu: memory=%d must be at least 64m for a VM", s.Memory)
	}
	return nil
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "qemu" }

// kernel is a bootable kernel and its modules.
type kernel struct {
	Path, Version, ModDir string
}

// findKernel returns the kernel option, or the newest /boot/vmlinuz-*
// (cloud kernels first: they boot fastest).
func (p *Platform) findKernel() (kernel, error) {
	path := p.kernel
	if path == "" {
		c, _ := filepath.Glob("/boot/vmlinuz-*")
		if len(c) == 0 {
			return kernel{}, fmt.Errorf("qemu: no kernel in /boot: %s", InstallHint)
		}
		sort.Slice(c, func(i, j int) bool {
			ci, cj := strings.Contains(c[i], "cloud"), strings.Contains(c[j], "cloud")
			if ci != cj {
				return ci
			}
			return c[i] > c[j]
		})
		path = c[0]
	}
	if _, err := os.Stat(path); err != nil {
		return kernel{}, fmt.Errorf("qemu: kernel: %w", err)
	}
	k := kernel{Path: path, Version: strings.TrimPrefix(filepath.Base(path), "vmlinuz-")}
	if d := filepath.Join("/lib/modules", k.Version); k.Version != "" {
		if _, err := os.Stat(filepath.Join(d, "modules.dep")); err == nil {
			k.ModDir = d
		}
	}
	return k, nil
}

// Available needs qemu-system-x86_64, a kernel, mkfs.ext4 and an agent
// binary that can be a VM's init.
func (p *Platform) Available(ctx context.Context) error {
	if _, err := exec.LookPath(Binary); err != nil {
		return fmt.Errorf("qemu: %s not found: %s", Binary, InstallHint)
	}
	if _, err := p.findKernel(); err != nil {
		return err
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		return fmt.Errorf("qemu: mkfs.ext4 not found: %s", InstallHint)
	}
	if p.initrd == "" {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, p.env.AgentBinary, "agent", "vm-init", "probe").Output()
		if err != nil || strings.TrimSpace(string(out)) != guest.ProbeOutput {
			return fmt.Errorf("qemu: the agent binary %s cannot be a VM's init (\"agent vm-init probe\" gave %q, %v): internal/agent must dispatch vm-init to guest.Main", p.env.AgentBinary, strings.TrimSpace(string(out)), err)
		}
	}
	return nil
}

// Facts implements platform.Platform. It resolves the accelerator (which
// may boot the KVM probe VM once per state dir).
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"goarch": runtime.GOARCH, "control_channel": "virtio-serial"}
	if out, err := exec.CommandContext(ctx, Binary, "--version").Output(); err == nil {
		f["qemu_version"] = strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	} else {
		f["error"] = fmt.Sprintf("%s --version: %v", Binary, err)
		return f
	}
	k, err := p.findKernel()
	if err != nil {
		f["error"] = err.Error()
		return f
	}
	f["kernel"] = k.Path
	f["kernel_version"] = k.Version
	_, kvmErr := openKVM()
	f["kvm_device"] = strconv.FormatBool(kvmErr == nil)
	a, why, err := p.resolveAccel(ctx)
	if err != nil {
		f["error"] = err.Error()
		return f
	}
	f["accel"] = a
	f["accel_reason"] = why
	return f
}

// Prepare builds (or finds cached) the initramfs of profile and settles
// the accelerator, so neither is timed as an instance's startup.
func (p *Platform) Prepare(ctx context.Context, profile string) error {
	if profile == "" {
		profile = image.Minimal
	}
	if usesRootDisk(profile) {
		if _, err := p.buildRootDisk(ctx, profile); err != nil {
			return err
		}
	}
	if p.initrd == "" {
		k, err := p.findKernel()
		if err != nil {
			return err
		}
		if _, err := p.buildInitramfs(ctx, profile, k); err != nil {
			return err
		}
	}
	_, _, err := p.resolveAccel(ctx)
	return err
}

// Close implements platform.Platform; instances own all they create.
func (p *Platform) Close(ctx context.Context) error { return nil }
