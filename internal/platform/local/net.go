package local

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/hostos"
)

// NetnsDir is where `ip netns` keeps named network namespaces.
const NetnsDir = "/run/netns"

// Netns is a named network namespace with a veth on the isobench bridge,
// a leased address on its eth0 and a default route via the bridge.
type Netns struct {
	Name     string     // "isob-<code><hex>", also the file under NetnsDir
	HostVeth string     // host side of the veth pair, on the bridge
	Addr     netip.Addr // the lease, on eth0 inside
	Bridge   *hostnet.Bridge
}

// Path is the namespace's bind-mounted file, for OCI configs and nsenter.
func (n *Netns) Path() string { return filepath.Join(NetnsDir, n.Name) }

// VethName is the host-side veth name for an instance id.
func VethName(id string) string { return VethPrefix + ShortID(id) }

// NewBridgeNetns leases an address on br, creates the namespace named id
// and wires it to br. On error nothing is left behind.
func NewBridgeNetns(ctx context.Context, br *hostnet.Bridge, id string) (*Netns, error) {
	addr, err := br.Lease(id, VethName(id))
	if err != nil {
		return nil, err
	}
	n := &Netns{Name: id, HostVeth: VethName(id), Addr: addr, Bridge: br}
	// lease first, then the bridge: a live lease keeps other processes'
	// Release from deleting the bridge under us
	if err := EnsureBridge(ctx, br); err != nil {
		n.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	pfx := netip.PrefixFrom(addr, br.Prefix.Bits()).String()
	steps := [][]string{
		{"netns", "add", n.Name},
		{"link", "add", n.HostVeth, "type", "veth", "peer", "name", "eth0", "netns", n.Name},
		{"link", "set", n.HostVeth, "master", br.Name},
		{"link", "set", n.HostVeth, "up"},
		{"-n", n.Name, "link", "set", "lo", "up"},
		{"-n", n.Name, "addr", "add", pfx, "dev", "eth0"},
		{"-n", n.Name, "link", "set", "eth0", "up"},
		{"-n", n.Name, "route", "add", "default", "via", br.Gateway().String()},
	}
	for _, s := range steps {
		if _, err := Output(ctx, "ip", s...); err != nil {
			n.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("bridge network: %w", err)
		}
	}
	return n, nil
}

// EnsureBridge is br.Ensure made safe for concurrent callers: Ensure
// treats an existing link as done, but a racing caller may fail adding the
// gateway address the other just added, or return before it is added. It
// retries until the bridge has its gateway address and is up.
func EnsureBridge(ctx context.Context, br *hostnet.Bridge) error {
	var err error
	for attempt := 0; attempt < 100; attempt++ {
		err = br.Ensure(ctx)
		if err == nil {
			out, _ := Output(ctx, "ip", "-o", "addr", "show", "dev", br.Name)
			if strings.Contains(out, " "+br.Gateway().String()+"/") {
				flags, _ := os.ReadFile("/sys/class/net/" + br.Name + "/flags")
				if f, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(string(flags), "0x")), 16, 32); f&1 == 1 { // IFF_UP
					return nil
				}
			}
			err = fmt.Errorf("bridge %s is not configured yet", br.Name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return err
}

// Close deletes the veth and the namespace and releases the lease (which
// removes the bridge when it was the last). A second call does nothing.
func (n *Netns) Close(ctx context.Context) error {
	if n == nil {
		return nil
	}
	var errs []error
	if err := hostnet.DeleteLink(ctx, n.HostVeth); err != nil {
		errs = append(errs, err)
	}
	if _, err := os.Stat(n.Path()); err == nil {
		if _, err := Output(ctx, "ip", "netns", "delete", n.Name); err != nil {
			errs = append(errs, err)
		}
	}
	if n.Addr.IsValid() {
		if err := ReleaseLease(ctx, n.Bridge, n.Addr); err != nil {
			errs = append(errs, err)
		}
		n.Addr = netip.Addr{}
	}
	return errors.Join(errs...)
}

// ReleaseLease releases addr on br. Release then deletes the bridge when
// no port is left on it and no live process holds a lease (see hostnet);
// a deletion that fails because the bridge is already gone is not an error
// here.
func ReleaseLease(ctx context.Context, br *hostnet.Bridge, addr netip.Addr) error {
	err := br.Release(ctx, addr)
	if err != nil {
		if _, serr := os.Stat("/sys/class/net/" + br.Name); serr != nil {
			return nil
		}
	}
	return err
}

// Leftovers lists what instances of the platform with code left on this
// host: network namespaces, veths, leases, instance directories, mounts
// under stateDir and cgroup directories named Prefix+code*. Names of other
// platforms' things are not listed, so packages may be tested in parallel.
// LXD's tests use it; the platforms built on this package list what their
// factory's Sweep does (localtest.Leftovers).
func Leftovers(stateDir, code string) []string {
	var out []string
	mine := Prefix + code
	if es, err := os.ReadDir(NetnsDir); err == nil {
		for _, e := range es {
			if strings.HasPrefix(e.Name(), mine) {
				out = append(out, "netns "+e.Name())
			}
		}
	}
	for _, l := range hostnet.Links(VethPrefix + code) {
		out = append(out, "veth "+l)
	}
	br := hostnet.Default(stateDir)
	if es, err := os.ReadDir(br.LeaseDir); err == nil {
		for _, e := range es {
			data, _ := os.ReadFile(filepath.Join(br.LeaseDir, e.Name()))
			if strings.HasPrefix(string(data), mine) {
				out = append(out, "lease "+e.Name()+" "+strings.TrimSpace(string(data)))
			}
		}
	}
	if es, err := os.ReadDir(filepath.Join(stateDir, "instances")); err == nil {
		for _, e := range es {
			if strings.HasPrefix(e.Name(), mine) {
				out = append(out, "dir "+filepath.Join(stateDir, "instances", e.Name()))
			}
		}
	}
	for _, m := range MountsUnder(filepath.Join(stateDir, "instances")) {
		if strings.Contains(m, "/"+mine) {
			out = append(out, "mount "+m)
		}
	}
	for _, pat := range []string{"/sys/fs/cgroup/*/isobench/" + mine + "*", "/sys/fs/cgroup/isobench/" + mine + "*", "/sys/fs/cgroup/unified/isobench/" + mine + "*"} {
		m, _ := filepath.Glob(pat)
		for _, x := range m {
			out = append(out, "cgroup "+x)
		}
	}
	sort.Strings(out)
	return out
}

// MountsUnder lists the mount points at or below dir, from
// /proc/self/mountinfo.
func MountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := hostos.UnescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out
}
