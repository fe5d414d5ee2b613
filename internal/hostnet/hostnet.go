// Package hostnet manages the one bridge isobench creates on the host for
// platforms that need one (LXC, LXD, runc, nspawn, gVisor, QEMU): its
// creation, IP leases for the instances on it, tap and veth clean-up, and
// its removal once nobody uses it.
//
// Concurrent isobench processes share the bridge. Every step that changes
// it (creation, a lease, a release, removal) holds an flock on a file
// beside the lease directory, so processes agree. The bridge has a fixed
// MAC address, set when it is created: a bridge without one takes its
// lowest port's address, which changes as any process adds or removes a
// veth, and the instances of every other run keep the old gateway address
// in their neighbour caches and lose traffic until it expires. The bridge
// and its firewall rule are removed only when no port (veth, tap) is left
// on it and no live process holds a lease; a lease names the process (pid
// and start time) that took it, so one left by a process that died is
// recognised as stale.
//
// Only this bridge and the devices isobench attaches to it are ever
// addressed by isobench's network workloads.
package hostnet

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/hoststate"
	"github.com/isobench/isobench/internal/runrec"
)

// Bridge defaults. The subnet is private and exists only on this bridge.
// A /22 (1021 instance addresses): density on LXC, runc and crun stopped at
// 253 instances on a /24 with "no free address left".
const (
	DefaultBridge = "isobr0"
	DefaultPrefix = "10.199.0.0/22"
)

// Bridge is a host bridge with a lease directory.
type Bridge struct {
	Name     string
	Prefix   netip.Prefix
	LeaseDir string
}

// New describes the bridge; nothing is created until Ensure.
func New(name, prefix, leaseDir string) (*Bridge, error) {
	p, err := netip.ParsePrefix(prefix)
	if err != nil || !p.Addr().Is4() || p.Bits() > 30 {
		return nil, fmt.Errorf("hostnet: bridge prefix %q must be an IPv4 prefix of /30 or wider", prefix)
	}
	if len(name) == 0 || len(name) > 15 {
		return nil, fmt.Errorf("hostnet: bridge name %q must have 1..15 characters", name)
	}
	return &Bridge{Name: name, Prefix: p.Masked(), LeaseDir: leaseDir}, nil
}

// RunDir holds what isobench shares host-wide between processes: the
// bridge is one per host, so its leases and lock are too.
const RunDir = "/run/isobench"

// Default is the isobench bridge. Its leases live host-wide under RunDir
// whatever the caller's state directory, because every isobench process on
// the host shares the one bridge.
func Default(_ string) *Bridge {
	b, _ := New(DefaultBridge, DefaultPrefix, filepath.Join(RunDir, "leases", DefaultBridge))
	return b
}

// lock serialises bridge creation, leases and removal across processes.
func (b *Bridge) lock() (unlock func(), err error) {
	if err := os.MkdirAll(b.LeaseDir, 0o755); err != nil {
		return nil, fmt.Errorf("hostnet: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(filepath.Dir(b.LeaseDir), b.Name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("hostnet: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("hostnet: lock: %w", err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// Gateway is the host's address on the bridge (the prefix's first host).
func (b *Bridge) Gateway() netip.Addr { return b.Prefix.Addr().Next() }

// MAC is the bridge's fixed address: locally administered, unicast, and
// derived from its name, so every process sets the same one.
func (b *Bridge) MAC() net.HardwareAddr {
	h := sha256.Sum256([]byte("isobench bridge " + b.Name))
	return net.HardwareAddr{h[0]&0xfc | 0x02, h[1], h[2], h[3], h[4], h[5]}
}

// Ensure creates the bridge with its fixed MAC and the gateway address if
// it does not exist (or completes one another process left half made, and
// fixes the MAC of one made without it), and brings it up.
func (b *Bridge) Ensure(ctx context.Context) error {
	unlock, err := b.lock()
	if err != nil {
		return err
	}
	defer unlock()
	mac := b.MAC().String()
	if _, err := os.Stat("/sys/class/net/" + b.Name); err != nil {
		if err := ip(ctx, "link", "add", b.Name, "address", mac, "type", "bridge"); err != nil && !strings.Contains(err.Error(), "File exists") {
			return err
		}
	}
	if cur, _ := os.ReadFile("/sys/class/net/" + b.Name + "/address"); strings.TrimSpace(string(cur)) != mac || !b.macFixed() {
		if err := ip(ctx, "link", "set", "dev", b.Name, "address", mac); err != nil {
			return err
		}
	}
	gw := netip.PrefixFrom(b.Gateway(), b.Prefix.Bits()).String()
	if err := ip(ctx, "addr", "replace", gw, "dev", b.Name); err != nil {
		return err
	}
	if err := b.forward(ctx, true); err != nil {
		return err
	}
	return ip(ctx, "link", "set", b.Name, "up")
}

// macFixed reports whether the bridge's address was set explicitly
// (NET_ADDR_SET), so the kernel no longer replaces it with a port's.
func (b *Bridge) macFixed() bool {
	t, _ := os.ReadFile("/sys/class/net/" + b.Name + "/addr_assign_type")
	return strings.TrimSpace(string(t)) == "3"
}

// Ports lists the devices attached to the bridge (veths, taps), sorted;
// none when the bridge does not exist.
func (b *Bridge) Ports() []string {
	es, _ := os.ReadDir("/sys/class/net/" + b.Name + "/brif")
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// Exists reports whether the bridge device exists.
func (b *Bridge) Exists() bool {
	_, err := os.Stat("/sys/class/net/" + b.Name)
	return err == nil
}

// forward adds (or removes) the rule that lets instances on the bridge
// reach each other: bridged traffic passes iptables' FORWARD chain, whose
// policy Docker sets to DROP. Docker has the same rule for docker0. Hosts
// without iptables need nothing.
//
// Adding inserts the rule only when a check says it is absent; removing
// deletes every copy. A check that failed for another reason (a signal, a
// lock) is an error, not "absent": CI's e2e signal test once found the rule
// of a bridge that was gone, left by a Ctrl-C that reached an `iptables -C`
// (a terminal's SIGINT goes to the whole process group) so that the rule
// read as absent and was inserted a second time.
func (b *Bridge) forward(ctx context.Context, add bool) error {
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil
	}
	if add {
		present, err := RuleExists(ctx, b.Name)
		if err != nil || present {
			return err
		}
		return iptables(ctx, append([]string{"-I"}, forwardRule(b.Name)...)...)
	}
	for range 16 {
		present, err := RuleExists(ctx, b.Name)
		if err != nil || !present {
			return err
		}
		if err := iptables(ctx, append([]string{"-D"}, forwardRule(b.Name)...)...); err != nil {
			return err
		}
	}
	return fmt.Errorf("hostnet: the FORWARD rule of %s is still there after 16 deletions", b.Name)
}

func forwardRule(bridge string) []string {
	return []string{"FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"}
}

// RuleExists reports whether the FORWARD accept rule of the bridge named
// is in place: false without iptables, an error when the check itself
// failed (iptables exits 1 only for a rule that is not there).
func RuleExists(ctx context.Context, bridge string) (bool, error) {
	if _, err := exec.LookPath("iptables"); err != nil {
		return false, nil
	}
	err := iptables(ctx, append([]string{"-C"}, forwardRule(bridge)...)...)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false, nil
	}
	return false, err
}

// iptables runs iptables, waiting for the xtables lock rather than
// failing on it.
func iptables(ctx context.Context, args ...string) error {
	return command(ctx, append([]string{"iptables", "-w", "5"}, args...)...)
}

// Lease reserves a free address for owner (an instance id) whose link on
// the bridge is the device port (a veth or tap; "" when the owner has
// none it names); release it with Release. The lease records this process,
// so other processes know whether it is still held, and the port, so they
// know whether the owner's link is gone without knowing how any platform
// names its links.
func (b *Bridge) Lease(owner, port string) (netip.Addr, error) {
	unlock, err := b.lock()
	if err != nil {
		return netip.Addr{}, err
	}
	defer unlock()
	pid, start := runrec.Self()
	for a := b.Gateway().Next(); b.Prefix.Contains(a); a = a.Next() {
		if !b.Prefix.Contains(a.Next()) { // broadcast
			break
		}
		f, err := os.OpenFile(filepath.Join(b.LeaseDir, a.String()), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return netip.Addr{}, fmt.Errorf("hostnet: lease: %w", err)
		}
		line := fmt.Sprintf("%s pid=%d start=%d", owner, pid, start)
		if port != "" {
			line += " port=" + port
		}
		_, werr := fmt.Fprintln(f, line)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(f.Name())
			return netip.Addr{}, fmt.Errorf("hostnet: lease: %w", werr)
		}
		b.forgetNeighbour(a)
		return a, nil
	}
	return netip.Addr{}, fmt.Errorf("hostnet: no free address left on %s (%s)", b.Name, b.Prefix)
}

// LeaseInfo is one lease file.
type LeaseInfo struct {
	Addr  netip.Addr
	Owner string // the instance id given to Lease
	Pid   int
	Start uint64 // the process's start time; 0 in leases of older versions
	Port  string // the owner's link on the bridge given to Lease; "" for none
	Live  bool   // the process that took it is running
}

// Leases lists the bridge's leases, sorted by address.
func (b *Bridge) Leases() []LeaseInfo {
	entries, _ := os.ReadDir(b.LeaseDir)
	var out []LeaseInfo
	for _, e := range entries {
		a, err := netip.ParseAddr(e.Name())
		if err != nil {
			continue
		}
		data, _ := os.ReadFile(filepath.Join(b.LeaseDir, e.Name()))
		l := parseLease(string(data))
		l.Addr = a
		l.Live = runrec.Alive(l.Pid, l.Start)
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr.Less(out[j].Addr) })
	return out
}

// parseLease reads "OWNER pid=N start=T [port=NAME]".
func parseLease(s string) LeaseInfo {
	var l LeaseInfo
	f := strings.Fields(s)
	for i, w := range f {
		switch {
		case strings.HasPrefix(w, "pid="):
			l.Pid, _ = strconv.Atoi(w[4:])
		case strings.HasPrefix(w, "start="):
			l.Start, _ = strconv.ParseUint(w[6:], 10, 64)
		case strings.HasPrefix(w, "port="):
			l.Port = w[5:]
		case i == 0:
			l.Owner = w
		}
	}
	return l
}

// Release frees a lease. When nobody uses the bridge any more, it is
// removed (see RemoveIfUnused).
func (b *Bridge) Release(ctx context.Context, a netip.Addr) error {
	unlock, err := b.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(filepath.Join(b.LeaseDir, a.String())); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("hostnet: release: %w", err)
	}
	b.forgetNeighbour(a)
	return b.removeIfUnused(ctx)
}

// forgetNeighbour drops the host's neighbour (ARP) entry for a, so the
// next instance given the address is not sent frames for the previous
// one's MAC: the host keeps a reachable entry for 15-45 s and then probes
// the old MAC before asking anew, and a connection to the new instance
// fails meanwhile. Nothing to do when the bridge does not exist.
func (b *Bridge) forgetNeighbour(a netip.Addr) {
	if !b.Exists() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exec.CommandContext(ctx, "ip", "neigh", "flush", "to", a.String(), "dev", b.Name).Run()
}

// RemoveLease deletes a lease whatever its state: for clean-up of a lease
// whose process died and whose port is gone.
func (b *Bridge) RemoveLease(a netip.Addr) error {
	unlock, err := b.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(filepath.Join(b.LeaseDir, a.String())); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("hostnet: remove lease %s: %w", a, err)
	}
	return nil
}

// RemoveIfUnused deletes the bridge and its firewall rule when no port is
// left on it and no live process holds a lease. Stale leases (of processes
// that died) are then deleted too; while ports remain they are kept, since
// an instance left running by a dead process may still use the address.
func (b *Bridge) RemoveIfUnused(ctx context.Context) error {
	unlock, err := b.lock()
	if err != nil {
		return err
	}
	defer unlock()
	return b.removeIfUnused(ctx)
}

func (b *Bridge) removeIfUnused(ctx context.Context) error {
	if len(b.Ports()) > 0 {
		return nil // another instance, of this or another run, is on it
	}
	leases := b.Leases()
	for _, l := range leases {
		if l.Live {
			return nil // leased by a live process, maybe about to add its port
		}
	}
	for _, l := range leases {
		os.Remove(filepath.Join(b.LeaseDir, l.Addr.String()))
	}
	// once begun, the removal finishes: a Ctrl-C between deleting the
	// bridge and its FORWARD rule had left the rule of a bridge that is
	// gone (CI's e2e signal test)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if b.Exists() {
		if err := ip(ctx, "link", "del", b.Name); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
			return err
		}
	}
	return b.forward(ctx, false)
}

// Snapshot is the bridge's state as one consistent view.
type Snapshot struct {
	Exists bool     // the bridge device exists
	Rule   bool     // its FORWARD accept rule is in place
	Ports  []string // devices on it
	Leases []LeaseInfo
}

// Snapshot reads the bridge's state under the lock, so no other process
// is midway through creating, changing or removing it.
func (b *Bridge) Snapshot(ctx context.Context) (Snapshot, error) {
	unlock, err := b.lock()
	if err != nil {
		return Snapshot{}, err
	}
	defer unlock()
	s := Snapshot{Exists: b.Exists(), Ports: b.Ports(), Leases: b.Leases()}
	s.Rule, err = RuleExists(ctx, b.Name)
	return s, err
}

// DeleteLink removes a tap or veth device if it exists.
func DeleteLink(ctx context.Context, name string) error {
	if _, err := os.Stat("/sys/class/net/" + name); err != nil {
		return nil
	}
	return ip(ctx, "link", "del", name)
}

// AddTap creates a tap device attached to the bridge and brings it up.
func (b *Bridge) AddTap(ctx context.Context, name string) error {
	if err := ip(ctx, "tuntap", "add", "dev", name, "mode", "tap"); err != nil {
		return err
	}
	if err := ip(ctx, "link", "set", name, "master", b.Name); err != nil {
		DeleteLink(ctx, name)
		return err
	}
	if err := ip(ctx, "link", "set", name, "up"); err != nil {
		DeleteLink(ctx, name)
		return err
	}
	return nil
}

// Links lists network devices whose name starts with prefix (for leftover
// checks in tests).
func Links(prefix string) []string {
	entries, _ := os.ReadDir("/sys/class/net")
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func ip(ctx context.Context, args ...string) error {
	return command(ctx, append([]string{"ip"}, args...)...)
}

// command runs argv, its output in the error when it fails. It runs in a
// process group of its own, so a terminal's Ctrl-C (sent to isobench's
// whole group) does not kill a step of the bridge's set-up or removal
// half way: isobench stops it through ctx, where it chooses to.
func command(ctx context.Context, argv ...string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("hostnet: %s: %s: %w", strings.Join(argv, " "), strings.TrimSpace(string(out)), err)
	}
	return nil
}

// FreeBlock finds n consecutive TCP ports free on addr (an address of this
// host), below the kernel's ephemeral range: a block picked inside it (as
// FreePort's port and the ones above it) could be any connection's source
// port by the time an engine binds it (FTP's passive ports through
// Docker's published ports once failed with "address already in use"
// while a Kubernetes cluster's loopback connections ran). Like FreePort's,
// the ports are free when asked, not reserved.
func FreeBlock(addr string, n int) (int, error) {
	low := 32768 // the kernel's default ephemeral range starts here
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if lo, _, err := hoststate.ParsePortRange(string(b)); err == nil {
			low = lo
		}
	}
	const floor = 20000 // above the usual fixed service ports
	if n < 1 || low-n <= floor {
		return 0, fmt.Errorf("no block of %d ports below the ephemeral range (from %d) on %s", n, low, addr)
	}
	for range 100 {
		start := floor + rand.IntN(low-n-floor)
		ok := true
		for p := start; p < start+n && ok; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(p)))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return start, nil
		}
	}
	return 0, fmt.Errorf("no block of %d free ports below %d on %s", n, low, addr)
}

// FreePort asks the kernel for a TCP port free on addr (an address of this
// host), none of taken: the port is free when asked, not reserved.
func FreePort(addr string, taken ...int) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
		if err != nil {
			return 0, fmt.Errorf("a free port on %s: %w", addr, err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !slices.Contains(taken, p) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port on %s", addr)
}
