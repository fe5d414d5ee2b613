package hostinfo

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// fsNames maps statfs(2) f_type magic numbers (linux/magic.h) to names.
var fsNames = map[int64]string{
	0xEF53:     "ext4", // ext2, ext3 and ext4 share the magic
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x01021994: "tmpfs",
	0x858458F6: "ramfs",
	0x794C7630: "overlayfs",
	0x2FC12FC1: "zfs",
	0xCA451A4E: "bcachefs",
	0xF2F52010: "f2fs",
	0x6969:     "nfs",
	0xFF534D42: "cifs",
	0xFE534D42: "smb2",
	0x65735546: "fuse",
	0x01021997: "9p",
	0x73717368: "squashfs",
	0x4D44:     "vfat",
	0x2011BAB0: "exfat",
	0x5346544E: "ntfs",
	0x00C36400: "ceph",
	0x3153464A: "jfs",
	0x52654973: "reiserfs",
	0x6E736673: "nsfs",
	0x62656572: "sysfs",
}

// FSType names the file system holding path (the nearest existing
// ancestor when path does not exist yet), e.g. "ext4", "xfs", "tmpfs";
// an unknown magic is given in hex.
func FSType(path string) (string, error) {
	p, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("fs type of %s: %w", path, err)
	}
	for {
		var st syscall.Statfs_t
		err := syscall.Statfs(p, &st)
		if err == nil {
			t := int64(st.Type) & 0xFFFFFFFF
			if name, ok := fsNames[t]; ok {
				return name, nil
			}
			return fmt.Sprintf("0x%x", t), nil
		}
		parent := filepath.Dir(p)
		if !os.IsNotExist(err) || parent == p {
			return "", fmt.Errorf("fs type of %s: %w", path, err)
		}
		p = parent
	}
}

// AddStorage records in f, under key+"_fs", the file system holding dir
// and, under key, the directory itself; nothing is added when dir is empty
// or its file system cannot be found.
func AddStorage(f map[string]string, key, dir string) {
	if dir == "" {
		return
	}
	t, err := FSType(dir)
	if err != nil {
		return
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	f[key] = dir
	f[key+"_fs"] = t
}

// swapOn reports whether any swap area is active (/proc/swaps has a line
// after its header); ok is false when that cannot be read.
func swapOn() (on, ok bool) {
	b, err := os.ReadFile("/proc/swaps")
	if err != nil {
		return false, false
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return len(lines) > 1, true
}

// HighLoadPerCore is the 1-minute load average per core above which
// Warnings reports the host as busy at the start of a run.
const HighLoadPerCore = 0.5

// Warnings lists the settings recorded in a fingerprint (as made by
// Fingerprint, plus platform facts under "<label>.<fact>") that are known
// to distort benchmark results, one sentence each, in a stable order.
// Settings that were not recorded give no warning.
func Warnings(f map[string]string) []string {
	var w []string
	if g, ok := f["cpu_governor"]; ok && g != "performance" {
		w = append(w, fmt.Sprintf("CPU frequency governor is %q, not \"performance\": clock speed changes with load, so results drift and differ between light and heavy phases", g))
	}
	if s := f["smt"]; s == "on" || s == "forceon" {
		w = append(w, "SMT (hyper-threading) is on: two threads sharing a core slow each other, so results depend on where the scheduler puts them")
	}
	if t := selected(f["thp"]); t == "always" {
		w = append(w, "transparent huge pages are \"always\": memory-heavy workloads vary with khugepaged's compaction in the background")
	}
	if f["swap"] == "on" {
		w = append(w, "swap is on: memory pressure in one platform can page out another's memory and turn memory benchmarks into disk benchmarks")
	}
	if la, ok := f["loadavg"]; ok {
		if fields := strings.Fields(la); len(fields) > 0 {
			load, err1 := strconv.ParseFloat(fields[0], 64)
			cores, err2 := strconv.Atoi(f["cores"])
			if err1 == nil && err2 == nil && cores > 0 && load > HighLoadPerCore*float64(cores) {
				w = append(w, fmt.Sprintf("load average was %.2f on %d cores at the start: other processes competed for the CPU", load, cores))
			}
		}
	}
	for _, k := range []string{"state_dir_fs", "cwd_fs"} {
		switch t := f[k]; t {
		case "tmpfs", "ramfs":
			w = append(w, fmt.Sprintf("%s is %s: disk workloads there measure memory, not storage", strings.TrimSuffix(k, "_fs"), t))
		}
	}
	if lim := f["cpu_limited"]; lim != "" && f["cpuidle_halts"] == "yes" && f["cpu_idle"] != "poll" {
		w = append(w, fmt.Sprintf("this host's idle CPUs halt (cpuidle %s) and %s limit CPU, leaving CPUs idle while throttled: a CPU back from a halt runs slower for a while (on a VM most), so a limited instance can read below its limit; --cpu-idle poll holds the CPUs awake for the run", cmp.Or(f["cpuidle_driver"], "default idle"), lim))
	}
	var accel []string
	for k, v := range f {
		if strings.HasSuffix(k, ".accel") && strings.EqualFold(v, "tcg") {
			accel = append(accel, strings.TrimSuffix(k, ".accel"))
		}
	}
	sort.Strings(accel)
	for _, p := range accel {
		w = append(w, fmt.Sprintf("%s runs under TCG (software emulation), not KVM: its results measure the emulator, many times slower than a real VM", p))
	}
	return w
}

// selected returns the bracketed choice of a sysfs multiple-choice file
// such as "always [madvise] never", or the whole value when none is
// bracketed.
func selected(v string) string {
	if i := strings.IndexByte(v, '['); i >= 0 {
		if j := strings.IndexByte(v[i:], ']'); j > 0 {
			return v[i+1 : i+j]
		}
	}
	return strings.TrimSpace(v)
}
