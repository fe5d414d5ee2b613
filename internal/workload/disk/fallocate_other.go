//go:build !linux && !freebsd

package disk

import "golang.org/x/sys/unix"

// fallocate is not available here: the caller lays the file out instead.
func fallocate(int, int64) error { return unix.ENOSYS }
