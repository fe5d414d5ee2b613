package hostnet

import "syscall"

// holderAttr starts a ClientNet's holder in a network namespace of its
// own, killed when this process dies.
func holderAttr() (*syscall.SysProcAttr, error) {
	return &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}, nil
}
