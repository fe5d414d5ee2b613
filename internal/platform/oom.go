package platform

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// OOMReporter is implemented by instances that can tell whether the
// kernel's OOM killer killed a process of theirs because the instance hit
// its memory limit, so a failure is reported as "out of memory" rather
// than as the bare exit status of a killed process.
type OOMReporter interface {
	OOMKilled(ctx context.Context) (bool, error)
}

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

// FormatSize writes a byte count the way options are given: 64m, 2g, 512k.
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		b int64
	}{{"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.b && n%u.b == 0 {
			return strconv.FormatInt(n/u.b, 10) + u.s
		}
	}
	if n >= 1<<20 {
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "m"
	}
	return strconv.FormatInt(n, 10)
}
