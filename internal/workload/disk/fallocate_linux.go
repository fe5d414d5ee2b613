package disk

import "golang.org/x/sys/unix"

// fallocate reserves size bytes for fd without writing them.
func fallocate(fd int, size int64) error { return unix.Fallocate(fd, 0, 0, size) }
