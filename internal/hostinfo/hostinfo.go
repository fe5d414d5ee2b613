// Package hostinfo records the environment a run happened in: what decides
// results (kernel, CPU, cores, memory, cgroup version, governor, SMT,
// mitigations, transparent huge pages, swap, load at start) and which
// isobench built it.
package hostinfo

import (
	"golang.org/x/sys/unix"

	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/cpuidle"
)

// Version is set at link time (-X); "dev" otherwise.
var Version = "dev"

// commit is set at link time (-X, the Makefile: git's revision, with
// -dirty for uncommitted changes); Go's own VCS stamp is used otherwise,
// which GOFLAGS=-buildvcs=false and builds outside a checkout lack.
var commit string

// Commit returns the VCS revision the binary was built from.
func Commit() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty && rev != "" {
			rev += "-dirty"
		}
		if rev != "" {
			return rev
		}
	}
	return "unknown"
}

func read(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Fingerprint describes this host now. Besides the keys above it records
// how its idle CPUs wait ("cpuidle_driver", "cpuidle_states",
// "cpuidle_halts": yes/no), "swap" (on/off, from /proc/swaps), "cwd" and
// "cwd_fs" (the file system of the working directory); AddStorage adds
// the state directory's.
func Fingerprint() map[string]string {
	f := map[string]string{
		"isobench_version": Version,
		"isobench_commit":  Commit(),
		"go_version":       runtime.Version(),
		"cores":            strconv.Itoa(runtime.NumCPU()),
		"cgroup_version":   strconv.Itoa(cgroup.Version()),
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		f["kernel"] = cstr(u.Release[:])
		f["hostname"] = cstr(u.Nodename[:])
	}
	if fh, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				f["cpu_model"] = strings.TrimSpace(v)
				break
			}
		}
		fh.Close()
	}
	if fh, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			switch k {
			case "MemTotal":
				f["memory_total"] = strings.TrimSpace(v)
			case "SwapTotal":
				f["swap_total"] = strings.TrimSpace(v)
			}
		}
		fh.Close()
	}
	set := func(k, v string) {
		if v != "" {
			f[k] = v
		}
	}
	set("cpu_governor", read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"))
	set("smt", read("/sys/devices/system/cpu/smt/control"))
	set("thp", read("/sys/kernel/mm/transparent_hugepage/enabled"))
	set("loadavg", read("/proc/loadavg"))
	// how idle CPUs wait: a CPU back from a halt runs slower for a while
	idle := cpuidle.Read(cpuidle.SysfsPath)
	set("cpuidle_driver", idle.Driver)
	set("cpuidle_states", strings.Join(idle.States, ","))
	f["cpuidle_halts"] = map[bool]string{true: "yes", false: "no"}[idle.Halts]
	if entries, err := os.ReadDir("/sys/devices/system/cpu/vulnerabilities"); err == nil {
		vulnerable := 0
		for _, e := range entries {
			if strings.HasPrefix(read("/sys/devices/system/cpu/vulnerabilities/"+e.Name()), "Vulnerable") {
				vulnerable++
			}
		}
		f["mitigations_vulnerable"] = strconv.Itoa(vulnerable)
	}
	if on, ok := swapOn(); ok {
		f["swap"] = map[bool]string{true: "on", false: "off"}[on]
	}
	if wd, err := os.Getwd(); err == nil {
		AddStorage(f, "cwd", wd)
	}
	if _, err := os.Stat("/dev/kvm"); err == nil {
		f["dev_kvm"] = "present"
	} else {
		f["dev_kvm"] = "absent"
	}
	return f
}

func cstr(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		s.WriteByte(c)
	}
	return s.String()
}
