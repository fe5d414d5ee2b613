package cleanup

import "syscall"

// mntDetach is a lazy unmount (MNT_DETACH).
const mntDetach = syscall.MNT_DETACH
