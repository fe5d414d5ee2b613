package local

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/isobench/isobench/internal/platform"
)

// Hostname is the host name of the local platforms' containers (LXC's
// lxc.uts.name, the OCI spec's hostname; nspawn uses the machine name,
// the instance id, which the hosts file names too).
const Hostname = "isobench"

// NoResolver is platform.NoResolver.
const NoResolver = platform.NoResolver

// guestHosts is the /etc/hosts of a container with address addr (the
// bridge lease; invalid without one): its names map to the lease, as
// Docker's hosts file and lxc-net's dnsmasq map a container's name to its
// address (without one, to the loopback address, as in the images).
func guestHosts(addr netip.Addr, names []string) string {
	n := strings.Join(names, " ")
	if !addr.IsValid() {
		return "127.0.0.1 localhost " + n + "\n::1 localhost\n"
	}
	return "127.0.0.1 localhost\n::1 localhost\n" + addr.String() + " " + n + "\n"
}

// WriteNames writes /etc/hosts (names at addr) and /etc/resolv.conf into the instance's
// root file system (the overlay's merged directory: the files land in the
// instance's own upper layer, never in the shared tree) for the bridge and
// none networks. network=host shares the host's network, whose
// nameservers the image's resolv.conf names, and is left alone.
func WriteNames(root, network string, addr netip.Addr, names ...string) error {
	if network == platform.NetHost {
		return nil
	}
	if err := replaceFile(filepath.Join(root, "etc", "hosts"), guestHosts(addr, names)); err != nil {
		return err
	}
	return replaceFile(filepath.Join(root, "etc", "resolv.conf"), NoResolver)
}

// replaceFile replaces path with a new regular file holding content; a
// symbolic link there (an image's resolv.conf often is one) is removed,
// not followed, so nothing outside the root is written.
func replaceFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return nil
}
