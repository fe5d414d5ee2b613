//go:build !linux

package hoststate

import "syscall"

// syncAll writes every dirty page back (sync(2)); its error on these
// systems says nothing a repetition could act on.
func syncAll() { _ = syscall.Sync() }
