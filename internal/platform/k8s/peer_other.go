//go:build !linux

package k8s

import "errors"

// socketPeer needs SO_PEERCRED, which only Linux has; a node's footprint
// is read on Linux nodes only.
func socketPeer(path string) (int, error) {
	return 0, errors.New("peer credentials of a unix socket: Linux only")
}
