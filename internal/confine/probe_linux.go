package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ProbeMain is "isobench agent probe": it prints Probe's facts as one JSON
// object.
func ProbeMain(stdout, stderr io.Writer) int {
	b, err := json.Marshal(Probe())
	if err != nil {
		fmt.Fprintln(stderr, "isobench agent probe:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return 0
}

// Probe measures this process's confinement and limits, under the fact
// names platforms report them with:
//
//   - cap_eff, cap_prm, cap_inh, cap_bnd, cap_amb (hex masks),
//     no_new_privs, seccomp (0 none, 2 filter) and seccomp_filters (how
//     many), from /proc/self/status;
//   - seccomp_probe: what three system calls Docker's filter refuses in
//     its own ways return ("clone3=ENOSYS keyctl=EPERM personality=EPERM"
//     under it, other errors or ok without it), and seccomp_probe_extra,
//     two on which Docker versions' profiles differ (io_uring_setup,
//     socket(AF_VSOCK));
//   - devices: dev_null (rw when /dev/null can be written); dev_block,
//     dev_kmsg and dev_fuse (denied, allowed or absent: a node made for a
//     block device of this machine, for /dev/kmsg and for /dev/fuse, and
//     opened for reading; what happened in dev_block_detail...);
//     devices_list (the own cgroup's devices.list, sorted,
//     comma-separated; cgroup v1);
//   - cwd (the working directory, as getcwd says it);
//   - memory_limit, memory_swap_limit (memory and swap together, as
//     Docker's --memory-swap; "max" or a huge number is none),
//     memory_swappiness and swap_accounting, from the own memory cgroup.
//
// A value it cannot find is left out, or says why.
func Probe() map[string]string {
	f := map[string]string{}
	status(f)
	f["seccomp_probe"] = strings.Join([]string{"clone3=" + probeClone3(), "keyctl=" + probeKeyctl(), "personality=" + probePersonality()}, " ")
	f["seccomp_probe_extra"] = "io_uring_setup=" + probeIOURing() + " socket_vsock=" + probeVsock()
	f["dev_null"] = probeNull()
	blk := blockDevice()
	f["dev_block"], f["dev_block_detail"] = probeDevice(unix.S_IFBLK, blk)
	f["dev_kmsg"], f["dev_kmsg_detail"] = probeDevice(unix.S_IFCHR, [2]uint32{1, 11})
	f["dev_fuse"], f["dev_fuse_detail"] = probeDevice(unix.S_IFCHR, [2]uint32{10, 229})
	if l, ok := devicesList(); ok {
		f["devices_list"] = l
	}
	buf := make([]byte, 4096)
	if n, err := unix.Getcwd(buf); err == nil && n > 0 {
		f["cwd"] = strings.TrimRight(string(buf[:n]), "\x00")
	} else {
		f["cwd"] = "error: " + errText(err)
	}
	memory(f)
	return f
}

// status reads the confinement lines of /proc/self/status.
func status(f map[string]string) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		f["status_error"] = err.Error()
		return
	}
	keys := map[string]string{"CapInh": "cap_inh", "CapPrm": "cap_prm", "CapEff": "cap_eff", "CapBnd": "cap_bnd", "CapAmb": "cap_amb",
		"NoNewPrivs": "no_new_privs", "Seccomp": "seccomp", "Seccomp_filters": "seccomp_filters"}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && keys[k] != "" {
			f[keys[k]] = strings.TrimSpace(v)
		}
	}
}

func errText(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		if n := unix.ErrnoName(errno); n != "" {
			return n
		}
	}
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func result(_, _ uintptr, errno unix.Errno) string {
	if errno != 0 {
		return errText(errno)
	}
	return "ok"
}

// probeClone3 calls clone3 with no arguments: the kernel refuses it
// (EINVAL) before anything is made; Docker's filter answers ENOSYS to a
// process without CAP_SYS_ADMIN, so that the C library falls back to
// clone.
func probeClone3() string {
	return result(unix.Syscall(unix.SYS_CLONE3, 0, 0, 0))
}

// probeKeyctl asks for the session keyring's id (without creating one),
// which Docker's filter refuses (EPERM).
func probeKeyctl() string {
	const getKeyringID, sessionKeyring = 0, ^uintptr(2) // KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING (-3)
	return result(unix.Syscall6(unix.SYS_KEYCTL, getKeyringID, sessionKeyring, 0, 0, 0, 0))
}

const addrNoRandomize = 0x0040000 // ADDR_NO_RANDOMIZE

// probePersonality sets ADDR_NO_RANDOMIZE, a personality Docker's filter
// refuses (EPERM; it allows only a few), and puts the old one back.
func probePersonality() string {
	old, _, errno := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
	if errno != 0 {
		return "query " + errText(errno)
	}
	_, _, errno = unix.Syscall(unix.SYS_PERSONALITY, old|addrNoRandomize, 0, 0)
	if errno != 0 {
		return errText(errno)
	}
	unix.Syscall(unix.SYS_PERSONALITY, old, 0, 0)
	return "ok"
}

// probeIOURing calls io_uring_setup with no entries: EINVAL from the
// kernel, EPERM from a filter that refuses io_uring (moby's since 25.0).
func probeIOURing() string {
	return result(unix.Syscall(unix.SYS_IO_URING_SETUP, 0, 0, 0))
}

// probeVsock makes an AF_VSOCK socket (refused by moby's profile since
// 28, allowed by older ones).
func probeVsock() string {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return errText(err)
	}
	unix.Close(fd)
	return "ok"
}

// probeNull writes a byte to /dev/null.
func probeNull() string {
	fd, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "open " + errText(err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte{0}); err != nil {
		return "write " + errText(err)
	}
	return "rw"
}

// blockDevice is a block device of this machine (the first in
// /sys/dev/block), or loop0.
func blockDevice() [2]uint32 {
	es, _ := os.ReadDir("/sys/dev/block")
	for _, e := range es {
		var maj, min uint32
		if _, err := fmt.Sscanf(e.Name(), "%d:%d", &maj, &min); err == nil {
			return [2]uint32{maj, min}
		}
	}
	return [2]uint32{7, 0}
}

// probeDevice makes a device node for dev in a private directory on a
// file system that allows device nodes and opens it for reading (never
// reads it): "denied" when making or opening it is not permitted (the
// devices cgroup, or no CAP_MKNOD), "allowed" when it opens, "absent"
// when the kernel has no such device; detail says what happened.
func probeDevice(kind uint32, dev [2]uint32) (verdict, detail string) {
	detail = fmt.Sprintf("%d:%d", dev[0], dev[1])
	dir, err := nodeDir()
	if err != nil {
		return "unknown", detail + " " + err.Error()
	}
	defer os.RemoveAll(dir)
	node := filepath.Join(dir, "dev")
	if err := unix.Mknod(node, kind|0o600, int(unix.Mkdev(dev[0], dev[1]))); err != nil {
		detail += " mknod=" + errText(err)
		if err == unix.EPERM || err == unix.EACCES {
			return "denied", detail
		}
		return "unknown", detail
	}
	detail += " mknod=ok"
	fd, err := unix.Open(node, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		detail += " open=" + errText(err)
		switch err {
		case unix.EPERM, unix.EACCES:
			return "denied", detail
		case unix.ENXIO, unix.ENODEV:
			return "absent", detail
		}
		return "unknown", detail
	}
	unix.Close(fd)
	return "allowed", detail + " open=ok"
}

// nodeDir makes a private directory for a device node on a file system
// not mounted nodev: in the temporary directory, the scratch directory or
// /dev.
func nodeDir() (string, error) {
	var tried []string
	for _, base := range []string{os.TempDir(), os.Getenv("ISOBENCH_SCRATCH"), "/dev"} {
		if base == "" {
			continue
		}
		var st unix.Statfs_t
		if err := unix.Statfs(base, &st); err != nil || st.Flags&unix.ST_NODEV != 0 {
			tried = append(tried, base)
			continue
		}
		d, err := os.MkdirTemp(base, ".isobench-probe-")
		if err == nil {
			return d, nil
		}
		tried = append(tried, base)
	}
	return "", fmt.Errorf("no directory for a device node (tried %s)", strings.Join(tried, ", "))
}

// ownCgroup returns the directories that can be this process's cgroup in
// hierarchy ctl ("" on v2), most specific first: its path from
// /proc/self/cgroup under the mount, then the mount itself (a container's
// own cgroup is often mounted at its root).
func ownCgroup(ctl string) []string {
	b, _ := os.ReadFile("/proc/self/cgroup")
	base := filepath.Join("/sys/fs/cgroup", ctl)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		match := parts[1] == "" && ctl == ""
		for _, c := range strings.Split(parts[1], ",") {
			match = match || (ctl != "" && c == ctl)
		}
		if match && parts[2] != "/" {
			out = append(out, filepath.Join(base, parts[2]))
		}
	}
	return append(out, base)
}

// cgroupFile reads file in the first of dirs that has it.
func cgroupFile(dirs []string, file string) (string, bool) {
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, file)); err == nil {
			return strings.TrimSpace(string(b)), true
		}
	}
	return "", false
}

// devicesList is the own cgroup's devices.list (v1), sorted.
func devicesList() (string, bool) {
	s, ok := cgroupFile(firstWith(ownCgroup("devices"), "devices.list"), "devices.list")
	if !ok {
		return "", false
	}
	return NormalizeDevices(s), true
}

// memory reads the own memory cgroup's limits.
func memory(f map[string]string) {
	if dirs := ownCgroup("memory"); hasFile(dirs, "memory.limit_in_bytes") {
		dirs = firstWith(dirs, "memory.limit_in_bytes")
		if v, ok := cgroupFile(dirs, "memory.limit_in_bytes"); ok {
			f["memory_limit"] = v
		}
		if v, ok := cgroupFile(dirs, "memory.memsw.limit_in_bytes"); ok {
			f["memory_swap_limit"] = v
			f["swap_accounting"] = "1"
		} else {
			f["swap_accounting"] = "0"
		}
		if v, ok := cgroupFile(dirs, "memory.swappiness"); ok {
			f["memory_swappiness"] = v
		}
		return
	}
	dirs := firstWith(ownCgroup(""), "memory.max")
	mem, ok := cgroupFile(dirs, "memory.max")
	if !ok {
		return
	}
	f["memory_limit"] = mem
	swap, ok := cgroupFile(dirs, "memory.swap.max")
	if !ok {
		f["swap_accounting"] = "0"
		return
	}
	f["swap_accounting"] = "1"
	m, err1 := strconv.ParseInt(mem, 10, 64)
	s, err2 := strconv.ParseInt(swap, 10, 64)
	if err1 == nil && err2 == nil {
		f["memory_swap_limit"] = strconv.FormatInt(m+s, 10)
	} else {
		f["memory_swap_limit"] = "max"
	}
}

func hasFile(dirs []string, file string) bool {
	_, ok := cgroupFile(dirs, file)
	return ok
}

// firstWith narrows dirs to the first that has file (all of them when
// none has).
func firstWith(dirs []string, file string) []string {
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, file)); err == nil {
			return []string{d}
		}
	}
	return dirs
}
