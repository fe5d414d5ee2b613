// Package cgroup creates and removes the cgroups isobench puts host
// processes in (the native platform's limits, A/B slowdown injection),
// on cgroup v1 (one directory per controller) and v2 (unified).
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Root is the cgroup file system mount point.
const Root = "/sys/fs/cgroup"

// Version returns 2 on a unified hierarchy, 1 otherwise.
func Version() int {
	var st syscall.Statfs_t
	if err := syscall.Statfs(Root, &st); err == nil && st.Type == 0x63677270 { // CGROUP2_SUPER_MAGIC
		return 2
	}
	return 1
}

// Limits for a group; zero means unlimited.
type Limits struct {
	CPUs   float64
	Memory int64
	// Devices, when not empty, are the device rules ("c 1:3 rwm") the
	// group's processes may use after a deny-all, on cgroup v1 (the
	// devices controller). v2 has no devices controller (a BPF program
	// instead, which isobench does not make): there they are not applied
	// and DevicesConfined says so.
	Devices []string
	// ReadIOPS and ReadBPS throttle the group's reads from the disk
	// IODisk ("major:minor", a whole disk): v1 blkio.throttle.read_*,
	// v2 io.max riops/rbps. 0 means no throttle.
	ReadIOPS, ReadBPS int64
	IODisk            string
}

// Group is a created cgroup (one directory per controller on v1).
type Group struct {
	dirs []string // v1: cpu, memory dirs; v2: one dir
	v    int
	// the directories charging memory and CPU time (v2: the one dir; v1:
	// the memory hierarchy's, and cpuacct's or, co-mounted, cpu's)
	mem, cpuacct string
	cpu          string // the cpu controller's directory (v2: the one dir)
	devices      bool   // Limits.Devices are in force
}

const period = 100000

// throttled says whether l limits disk reads.
func (l Limits) throttled() bool { return (l.ReadIOPS > 0 || l.ReadBPS > 0) && l.IODisk != "" }

// New creates the group isobench/<name> with limits.
func New(name string, l Limits) (*Group, error) {
	if strings.ContainsAny(name, "/.") || name == "" {
		return nil, fmt.Errorf("cgroup: invalid name %q", name)
	}
	g := &Group{v: Version()}
	fail := func(err error) (*Group, error) {
		g.Remove()
		return nil, err
	}
	if g.v == 2 {
		parent := filepath.Join(Root, "isobench")
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		os.WriteFile(filepath.Join(Root, "cgroup.subtree_control"), []byte("+cpu +memory"), 0)
		os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+cpu +memory"), 0)
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		g.dirs = []string{dir}
		g.mem, g.cpuacct, g.cpu = dir, dir, dir
		if l.CPUs > 0 {
			if err := g.setQuota(dir, l.CPUs); err != nil {
				return fail(err)
			}
		}
		if l.Memory > 0 {
			if err := write(dir, "memory.max", strconv.FormatInt(l.Memory, 10)); err != nil {
				return fail(err)
			}
			if err := noSwap(dir, l.Memory); err != nil {
				return fail(err)
			}
		}
		if l.throttled() {
			os.WriteFile(filepath.Join(Root, "cgroup.subtree_control"), []byte("+io"), 0)
			os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+io"), 0)
			v := l.IODisk
			if l.ReadIOPS > 0 {
				v += " riops=" + strconv.FormatInt(l.ReadIOPS, 10)
			}
			if l.ReadBPS > 0 {
				v += " rbps=" + strconv.FormatInt(l.ReadBPS, 10)
			}
			if err := write(dir, "io.max", v); err != nil {
				return fail(err)
			}
		}
		return g, nil
	}
	ctls := []string{"cpu", "memory", "cpuacct"}
	if len(l.Devices) > 0 {
		ctls = append(ctls, "devices")
	}
	if l.throttled() {
		ctls = append(ctls, "blkio")
	}
	for _, ctl := range ctls {
		base := filepath.Join(Root, ctl)
		if _, err := os.Stat(base); err != nil {
			if ctl == "cpuacct" {
				continue
			}
			return fail(fmt.Errorf("cgroup v1 controller %s is not mounted at %s", ctl, base))
		}
		if real, err := filepath.EvalSymlinks(base); err == nil && real != base && ctl == "cpuacct" {
			continue // cpu,cpuacct co-mounted: already covered by cpu
		}
		dir := filepath.Join(base, "isobench", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fail(fmt.Errorf("cgroup: %w", err))
		}
		g.dirs = append(g.dirs, dir)
		switch ctl {
		case "cpuacct": // mounted apart from cpu: it charges the CPU time
			g.cpuacct = dir
		case "cpu":
			g.cpuacct = dir // co-mounted as cpu,cpuacct, or until cpuacct's
			g.cpu = dir
			if l.CPUs > 0 {
				if err := g.setQuota(dir, l.CPUs); err != nil {
					return fail(err)
				}
			}
		case "blkio":
			if l.ReadIOPS > 0 {
				if err := write(dir, "blkio.throttle.read_iops_device", l.IODisk+" "+strconv.FormatInt(l.ReadIOPS, 10)); err != nil {
					return fail(err)
				}
			}
			if l.ReadBPS > 0 {
				if err := write(dir, "blkio.throttle.read_bps_device", l.IODisk+" "+strconv.FormatInt(l.ReadBPS, 10)); err != nil {
					return fail(err)
				}
			}
		case "devices":
			if err := write(dir, "devices.deny", "a"); err != nil {
				return fail(err)
			}
			for _, r := range l.Devices {
				if err := write(dir, "devices.allow", r); err != nil {
					return fail(err)
				}
			}
			g.devices = true
		case "memory":
			g.mem = dir
			if l.Memory > 0 {
				if err := write(dir, "memory.limit_in_bytes", strconv.FormatInt(l.Memory, 10)); err != nil {
					return fail(err)
				}
				if err := noSwap(dir, l.Memory); err != nil {
					return fail(err)
				}
			}
		}
	}
	return g, nil
}

// ThreadQuota puts threads tids (of the group's processes) in a child
// group sub of the group's CPU controller with a CFS quota of cpus host
// CPUs, leaving the group's other threads unlimited; the group's CPU time
// still counts the child's. It is how a VM's vCPUs alone are limited, as
// libvirt's vcpu_quota does: the quota then limits the guest's CPU and not
// the emulator's own threads (I/O, the main loop). v1 writes the threads
// into the child's tasks file; v2 makes the child a threaded cgroup and
// writes them into cgroup.threads.
func (g *Group) ThreadQuota(sub string, cpus float64, tids []int) error {
	if strings.ContainsAny(sub, "/.") || sub == "" {
		return fmt.Errorf("cgroup: invalid child name %q", sub)
	}
	if cpus <= 0 || len(tids) == 0 {
		return fmt.Errorf("cgroup: a thread quota needs a positive number of CPUs and at least one thread")
	}
	if g.cpu == "" {
		return errors.New("cgroup: the group has no directory in the cpu controller")
	}
	dir, threads := filepath.Join(g.cpu, sub), "tasks"
	if g.v == 2 {
		threads = "cgroup.threads"
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cgroup: %w", err)
	}
	if g.v == 2 {
		if err := write(dir, "cgroup.type", "threaded"); err != nil {
			return err
		}
		if err := write(g.cpu, "cgroup.subtree_control", "+cpu"); err != nil {
			return err
		}
	}
	if err := g.setQuota(dir, cpus); err != nil {
		return err
	}
	for _, t := range tids {
		if err := write(dir, threads, strconv.Itoa(t)); err != nil {
			return err
		}
	}
	return nil
}

// setQuota gives cgroup dir a CFS quota of cpus CPUs per period: v2's
// cpu.max, v1's cpu.cfs_period_us and cpu.cfs_quota_us.
func (g *Group) setQuota(dir string, cpus float64) error {
	quota := int64(cpus * period)
	if g.v == 2 {
		return write(dir, "cpu.max", fmt.Sprintf("%d %d", quota, period))
	}
	if err := write(dir, "cpu.cfs_period_us", strconv.Itoa(period)); err != nil {
		return err
	}
	return write(dir, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10))
}

// SwapUnavailable is the swap_limit fact of a memory limit on a kernel
// without swap accounting: memory+swap cannot be limited, so the group's
// swappiness is 0 instead.
const SwapUnavailable = "unavailable(no swap accounting)"

// SwapAccounting reports whether the kernel accounts swap to cgroups (v1:
// the memory controller has memory.memsw.* files; v2: groups have
// memory.swap.max).
func SwapAccounting() bool {
	if Version() == 2 {
		m, _ := filepath.Glob(filepath.Join(Root, "*", "memory.swap.max"))
		return len(m) > 0
	}
	m, _ := filepath.Glob(filepath.Join(Root, "memory", "memory.memsw.limit_in_bytes"))
	if len(m) == 0 {
		m, _ = filepath.Glob(filepath.Join(Root, "memory", "*", "memory.memsw.limit_in_bytes"))
	}
	return len(m) > 0
}

// noSwap gives the group in dir, whose memory limit is memory, Docker's
// meaning of a memory limit with --memory-swap of the same size: no swap
// beyond it (v1 memory.memsw.limit_in_bytes = memory; v2 memory.swap.max
// = 0). Without swap accounting it sets the group's swappiness to 0 (v1)
// instead; SwapFacts says which.
func noSwap(dir string, memory int64) error {
	if Version() == 2 {
		if _, err := os.Stat(filepath.Join(dir, "memory.swap.max")); err != nil {
			return nil // no swap accounting: v2 has no per-group swappiness
		}
		return write(dir, "memory.swap.max", "0")
	}
	if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err != nil {
		return write(dir, "memory.swappiness", "0")
	}
	return write(dir, "memory.memsw.limit_in_bytes", strconv.FormatInt(memory, 10))
}

// SwapFacts adds to f what a memory limit of memory bytes (none when 0)
// means for swap on this host, as Docker's facts say it:
// memory_swap_limit (memory and swap together) when the kernel accounts
// swap, else swap_limit=SwapUnavailable (and on v1 memory_swappiness=0).
func SwapFacts(f map[string]string, memory int64) {
	switch {
	case memory <= 0:
	case SwapAccounting():
		f["memory_swap_limit"] = strconv.FormatInt(memory, 10)
	default:
		f["swap_limit"] = SwapUnavailable
		if Version() == 1 {
			f["memory_swappiness"] = "0"
		}
	}
}

func write(dir, file, val string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0); err != nil {
		return fmt.Errorf("cgroup: set %s=%s: %w", file, val, err)
	}
	return nil
}

// ProcsFiles are the cgroup.procs files a process must write its pid into.
func (g *Group) ProcsFiles() []string {
	var out []string
	for _, d := range g.dirs {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// DevicesConfined reports whether Limits.Devices are in force (cgroup v1).
func (g *Group) DevicesConfined() bool { return g.devices }

// Dirs are the group's directories.
func (g *Group) Dirs() []string { return append([]string(nil), g.dirs...) }

// AccountingDirs are the directories whose files charge the group's memory
// (memory.stat, memory.usage_in_bytes or memory.current) and CPU time
// (cpuacct.usage, or v2's cpu.stat), for hostos.CgroupUsage.
func (g *Group) AccountingDirs() (mem, cpu string) { return g.mem, g.cpuacct }

// Pids lists the processes in the group.
func (g *Group) Pids() []int {
	seen := map[int]bool{}
	var out []int
	for _, f := range g.ProcsFiles() {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(s); err == nil && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// Remove kills what is left in the group and removes its directories
// (and any group made below them).
func (g *Group) Remove() error {
	if g == nil {
		return nil
	}
	var errs []error
	for _, d := range g.dirs {
		errs = append(errs, RemoveDir(d))
	}
	g.dirs = nil
	return errors.Join(errs...)
}

// RemoveDir removes the cgroup directory dir and the groups below it,
// deepest first, killing what still runs in each and retrying while the
// kernel says it is busy (a killed process leaves its group a moment
// later). A directory already gone is not an error.
func RemoveDir(dir string) error {
	var dirs []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		var err error
		for attempt := 0; attempt < 50; attempt++ {
			for _, f := range []string{"cgroup.procs", "tasks"} {
				b, _ := os.ReadFile(filepath.Join(dirs[i], f))
				for _, l := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(l); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			if err = syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			if !errors.Is(err, syscall.EBUSY) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cgroup: remove %s: %w", dirs[i], err))
		}
	}
	return errors.Join(errs...)
}
