package hostos

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// CgroupRoot is where the cgroup file systems are mounted.
const CgroupRoot = "/sys/fs/cgroup"

// CgroupOOMKills returns how many processes the OOM killer killed in the
// memory cgroup at dir: "oom_kill" of memory.events on cgroup v2, of
// memory.oom_control on v1 (Linux 4.13 and later).
func CgroupOOMKills(dir string) (int64, error) {
	for _, f := range []string{"memory.events", "memory.oom_control"} {
		n, err := readCounter(filepath.Join(dir, f), "oom_kill")
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		return n, err
	}
	return 0, fmt.Errorf("no OOM kill counter in %s", dir)
}

func readCounter(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s: %w", path, key, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s has no %s counter", path, key)
}

// MemoryCgroupOf returns the directory of the memory cgroup process pid
// is in, read from /proc/PID/cgroup (the v1 memory controller's line, or
// the v2 unified line).
func MemoryCgroupOf(pid int) (string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	defer f.Close()
	unified := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				return filepath.Join(CgroupRoot, "memory", parts[2]), nil
			}
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if unified != "" {
		return filepath.Join(CgroupRoot, unified), nil
	}
	return "", fmt.Errorf("process %d is in no memory cgroup", pid)
}

// CgroupUsage reads the memory (CgroupMemory) and CPU (CgroupCPU) charged
// to an instance whose accounting cgroup directories are mem and cpu (the
// same directory on cgroup v2): a platform.Footprint's MemoryBytes and
// CPUSeconds. Both are 0 when either cannot be read.
func CgroupUsage(mem, cpu string) (memoryBytes int64, cpuSeconds float64, err error) {
	if memoryBytes, err = CgroupMemory(mem); err != nil {
		return 0, 0, err
	}
	if cpuSeconds, err = CgroupCPU(cpu); err != nil {
		return 0, 0, err
	}
	return memoryBytes, cpuSeconds, nil
}

// DisksUsage is the DiskUsage of every path together, empty paths and
// paths that do not exist (no volume, removed meanwhile) counting zero.
func DisksUsage(paths ...string) (int64, error) {
	var total int64
	for _, p := range paths {
		if p == "" {
			continue
		}
		n, err := DiskUsage(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// CgroupMemory reads the memory charged to the cgroup directory dir (v1:
// memory.usage_in_bytes less total_inactive_file; v2: memory.current less
// inactive_file).
func CgroupMemory(dir string) (int64, error) {
	usageFile, statKey := "memory.current", "inactive_file"
	if _, err := os.Stat(filepath.Join(dir, "memory.usage_in_bytes")); err == nil {
		usageFile, statKey = "memory.usage_in_bytes", "total_inactive_file"
	}
	usage, err := readInt(filepath.Join(dir, usageFile))
	if err != nil {
		return 0, fmt.Errorf("cgroup memory: %w", err)
	}
	stat, err := readKeyed(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, fmt.Errorf("cgroup memory: %w", err)
	}
	if inactive, ok := stat[statKey]; ok && inactive <= usage {
		usage -= inactive
	}
	return usage, nil
}

// ProcessCgroups finds the memory and CPU accounting cgroup directories of
// host process pid from /proc/PID/cgroup (v1: the memory and cpuacct
// hierarchies; v2: the unified one). Paths outside the caller's cgroup
// namespace are refused.
func ProcessCgroups(pid int) (mem, cpu string, err error) {
	const root = "/sys/fs/cgroup"
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", "", fmt.Errorf("cgroups of pid %d: %w", pid, err)
	}
	unified := ""
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || strings.Contains(parts[2], "..") {
			continue // outside our cgroup namespace
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = filepath.Join(root, parts[2])
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			switch ctl {
			case "memory":
				mem = filepath.Join(root, "memory", parts[2])
			case "cpuacct":
				cpu = filepath.Join(root, "cpuacct", parts[2])
			}
		}
	}
	if mem == "" && cpu == "" {
		mem, cpu = unified, unified
	}
	for _, d := range []string{mem, cpu} {
		if st, err := os.Stat(d); d == "" || err != nil || !st.IsDir() {
			return "", "", fmt.Errorf("cgroups of pid %d: no memory and cpu accounting directories (%q, %q)", pid, mem, cpu)
		}
	}
	return mem, cpu, nil
}

// CgroupCPU reads the CPU seconds the cgroup directory dir has used (v1:
// cpuacct.usage; v2: cpu.stat usage_usec).
func CgroupCPU(dir string) (float64, error) {
	if ns, err := readInt(filepath.Join(dir, "cpuacct.usage")); err == nil {
		return float64(ns) / 1e9, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("cgroup cpu: %w", err)
	}
	stat, err := readKeyed(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, fmt.Errorf("cgroup cpu: %w", err)
	}
	us, ok := stat["usage_usec"]
	if !ok {
		return 0, fmt.Errorf("cgroup cpu: %s has no usage_usec", filepath.Join(dir, "cpu.stat"))
	}
	return float64(us) / 1e6, nil
}

// DiskUsage is the space the files under dir occupy (allocated blocks, as
// du counts them; hard links counted once).
func DiskUsage(dir string) (int64, error) {
	var total int64
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if st.Nlink > 1 {
				if seen[st.Ino] {
					return nil
				}
				seen[st.Ino] = true
			}
			total += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return total, nil
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// readKeyed reads a "key value" per line file such as memory.stat.
func readKeyed(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, sc.Err()
}
