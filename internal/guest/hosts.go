package guest

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/hostos"
)

// HostsFile is the guest's hosts file, where init names the VM.
const HostsFile = "/etc/hosts"

// hostsEntry is the line of a hosts file naming host at addr.
func hostsEntry(addr, host string) string { return addr + "\t" + host + "\n" }

// hostsNames reports whether the hosts file content b already has host
// as a name (not as an address) on some line.
func hostsNames(b []byte, host string) bool {
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		for _, name := range f[min(1, len(f)):] {
			if strings.EqualFold(name, host) {
				return true
			}
		}
	}
	return false
}

// nameHost makes the VM's host name resolve locally, as container engines
// do with the /etc/hosts they write: it adds "addr host" to the hosts file
// at path unless host is already named there (addr is eth0's address, or
// 127.0.1.1, Debian's convention, with no network). Without it a lookup of
// the VM's own name goes to the name server of the image's resolv.conf
// (the host's), which a guest on the host-only isobench bridge cannot
// reach: every such lookup then waits for the resolver's timeouts (2 x 5
// s). Samba's smbd looks its own name up while it answers a client's
// NEGOTIATE (get_mydnsfullname, twice): 20 s, smbclient's own negotiation
// timeout, so every smb transfer to a VM failed with NT_STATUS_IO_TIMEOUT.
func nameHost(path, addr, host string) error {
	if host == "" {
		return nil
	}
	if addr == "" {
		addr = "127.0.1.1"
	}
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("hosts file: %w", err)
	}
	if hostsNames(b, host) {
		return nil
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	b = append(b, hostsEntry(addr, host)...)
	// a new file rather than a write through: the root may share the
	// image's file (hard links into a cached tree)
	if err := hostos.ReplaceFile(path, b); err != nil {
		return fmt.Errorf("hosts file: %w", err)
	}
	return nil
}

// hostAddr is the address of an isobench.ip prefix ("" when there is none
// or it is not one).
func hostAddr(prefix string) string {
	p, err := netip.ParsePrefix(prefix)
	if err != nil {
		return ""
	}
	return p.Addr().String()
}

// ResolvFile is the guest's resolver configuration.
const ResolvFile = "/etc/resolv.conf"

// noResolver replaces the resolver configuration at path with
// guestenv.NoResolver: a VM is on the host-only isobench bridge or has no
// network, so the nameservers an image copied from the host cannot be
// reached, and every lookup of a name not in /etc/hosts (a client's
// address, a peer's) would wait 2 x 5 s for them. A symbolic link there is
// replaced, not written through.
func noResolver(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("resolver: %w", err)
	}
	if err := hostos.ReplaceFile(path, []byte(guestenv.NoResolver)); err != nil {
		return fmt.Errorf("resolver: %w", err)
	}
	return nil
}
