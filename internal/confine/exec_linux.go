package confine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Main is "isobench agent confine [--seccomp=default|unconfined] -- ARGV":
// it runs ARGV (looked up in $PATH) as a process of a Docker container
// would run: with Docker's default seccomp filter (unless unconfined), the
// capability bounding set DockerCaps, no inheritable or ambient
// capabilities and its permitted and effective sets within DockerCaps. It
// leaves no_new_privs as it was (Docker does not set it). It returns an
// exit code only when it could not exec ARGV.
//
// It installs the filter first, while the process still has CAP_SYS_ADMIN
// (the engine's exec gives it), so that no_new_privs is not needed for
// it; the filter is built for DockerCaps, and allows the prctl, capset
// and execve that follow.
func Main(args []string, stderr io.Writer) int {
	sc := true
	for len(args) > 0 && args[0] != "--" {
		switch args[0] {
		case "--seccomp=default":
			sc = true
		case "--seccomp=unconfined":
			sc = false
		default:
			fmt.Fprintf(stderr, "isobench agent confine: unknown option %q\n", args[0])
			return 2
		}
		args = args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintln(stderr, "isobench agent confine: want [--seccomp=default|unconfined] -- ARGV")
		return 2
	}
	argv := args[1:]
	if err := execConfined(argv, sc); err != nil {
		fmt.Fprintf(stderr, "isobench agent confine: %s: %v\n", argv[0], err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	return 0 // not reached: exec replaced the process
}

// execConfined confines this thread and execs argv from it. The
// capability sets, bounding set and seccomp filter are per thread: the
// thread stays locked so that execve runs on the one confined here.
func execConfined(argv []string, sc bool) error {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	var prog []Insn
	if sc {
		p, err := DockerProfile(DockerCaps)
		if err != nil {
			return err
		}
		if prog, err = Compile(p); err != nil {
			return err
		}
	}
	runtime.LockOSThread()
	// never unlocked: a thread whose credentials changed must not run
	// other goroutines (and exec ends the process image anyway)
	if sc {
		if err := installFilter(prog); err != nil {
			return err
		}
	}
	if err := dropCaps(DockerCapBits); err != nil {
		return err
	}
	return syscall.Exec(path, argv, os.Environ())
}

// installFilter loads prog as this thread's seccomp filter.
func installFilter(prog []Insn) error {
	f := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		f[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(f)
	if errno != 0 {
		if errno == unix.EACCES {
			return fmt.Errorf("installing the seccomp filter: %w (the process has neither CAP_SYS_ADMIN nor no_new_privs)", errno)
		}
		return fmt.Errorf("installing the seccomp filter: %w", errno)
	}
	return nil
}

// dropCaps limits this thread's bounding set to keep, clears its ambient
// and inheritable sets and keeps only keep in its permitted and effective
// sets: as root, a program it execs then has exactly keep.
func dropCaps(keep uint64) error {
	last, err := lastCap()
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		if keep&(1<<c) != 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clearing the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for i := range data {
		k := uint32(keep >> (32 * i))
		data[i].Permitted &= k
		data[i].Effective &= k
		data[i].Inheritable = 0
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// lastCap is the highest capability number this kernel knows.
func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("cap_last_cap: %w", err)
	}
	return n, nil
}
