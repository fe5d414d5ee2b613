package disk

import "golang.org/x/sys/unix"

// fallocate reserves size bytes for fd without writing them
// (posix_fallocate(2); 64-bit FreeBSD passes off_t in one register).
func fallocate(fd int, size int64) error {
	if _, _, e := unix.Syscall(unix.SYS_POSIX_FALLOCATE, uintptr(fd), 0, uintptr(size)); e != 0 {
		return e
	}
	return nil
}
