package local

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
)

// Hostname is the host name of the local platforms' containers (LXC's
// lxc.uts.name, the OCI spec's hostname; nspawn uses the machine name,
// the instance id, which the hosts file names too).
const Hostname = "isobench"

// NoResolver is guestenv.NoResolver.
const NoResolver = guestenv.NoResolver

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
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		return err
	}
	if err := hostos.ReplaceFile(filepath.Join(root, "etc", "hosts"), []byte(guestHosts(addr, names))); err != nil {
		return err
	}
	return hostos.ReplaceFile(filepath.Join(root, "etc", "resolv.conf"), []byte(NoResolver))
}
