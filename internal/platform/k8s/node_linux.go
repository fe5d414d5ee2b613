package k8s

import "syscall"

// unmountDetach unmounts path lazily (MNT_DETACH), as start-k8s.sh's umount -l.
func unmountDetach(path string) error { return syscall.Unmount(path, syscall.MNT_DETACH) }
