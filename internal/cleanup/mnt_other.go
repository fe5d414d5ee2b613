//go:build !linux

package cleanup

import "golang.org/x/sys/unix"

// mntDetach: off Linux there is no lazy unmount; force instead.
const mntDetach = unix.MNT_FORCE
