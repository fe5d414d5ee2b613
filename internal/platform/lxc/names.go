package lxc

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"

	"github.com/isobench/isobench/internal/platform"
)

// Hostname is the containers' host name (lxc.uts.name).
const Hostname = "isobench"

// NoResolver is the /etc/resolv.conf of a container on the isobench
// bridge or without a network. The bridge is private, with no route out
// and no DNS server on it (isobench runs no lxc-net dnsmasq), so the
// host's nameservers, which an image tree copies at build time, cannot be
// reached from it: every lookup of a name or address not in /etc/hosts
// would wait for the resolver's timeout (glibc: 5 s a try, 2 tries), where
// a Docker container on docker0 reaches the host's nameservers through
// NAT and an lxc-net container asks dnsmasq on lxcbr0, both in
// milliseconds. Spark, for one, looks up its peers' addresses: the
// standalone cluster's jobs took 10 s longer on LXC than on Docker. The
// loopback nameserver, which nothing serves in the container, makes such
// lookups fail at once instead.
const NoResolver = "# isobench: no DNS server is reachable from this container (the isobench bridge\n" +
	"# has no route out): lookups of names not in /etc/hosts fail at once\n" +
	"nameserver 127.0.0.1\n"

// guestHosts is the /etc/hosts of a container with address addr (the
// bridge lease; invalid without one): the host name maps to the lease, as
// Docker's hosts file and lxc-net's dnsmasq map a container's name to its
// address (without one, the loopback address, as in the images).
func guestHosts(addr netip.Addr) string {
	if !addr.IsValid() {
		return "127.0.0.1 localhost " + Hostname + "\n::1 localhost\n"
	}
	return "127.0.0.1 localhost\n::1 localhost\n" + addr.String() + " " + Hostname + "\n"
}

// writeNames writes /etc/hosts and /etc/resolv.conf into the instance's
// root file system (the overlay's merged directory: the files land in the
// instance's own upper layer, never in the shared tree) for the bridge and
// none networks. network=host shares the host's network, whose
// nameservers the image's resolv.conf names, and is left alone.
func writeNames(root, network string, addr netip.Addr) error {
	if network == platform.NetHost {
		return nil
	}
	if err := replaceFile(filepath.Join(root, "etc", "hosts"), guestHosts(addr)); err != nil {
		return err
	}
	return replaceFile(filepath.Join(root, "etc", "resolv.conf"), NoResolver)
}

// replaceFile replaces path with a new regular file holding content; a
// symbolic link there (an image's resolv.conf often is one) is removed,
// not followed, so nothing outside the root is written.
func replaceFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("lxc: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("lxc: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("lxc: %w", err)
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return fmt.Errorf("lxc: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("lxc: %w", err)
	}
	return nil
}
