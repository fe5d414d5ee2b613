//go:build !linux

package hostos

import "errors"

// SocketPeerPID needs SO_PEERCRED, which only Linux has (engines' daemons
// are found this way for footprints on Linux hosts only).
func SocketPeerPID(path string) (int, error) {
	return 0, errors.New("peer credentials of a unix socket: Linux only")
}
