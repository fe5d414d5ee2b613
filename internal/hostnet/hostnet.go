// Package hostnet manages the one bridge isobench creates on the host for
// platforms that need one (LXC, QEMU): its creation, IP leases for the
// instances on it, tap and veth clean-up, and its removal once no lease is
// left. Leases are files, so concurrent isobench processes agree.
//
// Only this bridge and the devices isobench attaches to it are ever
// addressed by isobench's network workloads.
package hostnet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Bridge defaults. The subnet is private and exists only on this bridge.
const (
	DefaultBridge = "isobr0"
	DefaultPrefix = "10.199.0.0/24"
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

// Ensure creates the bridge with the gateway address if it does not exist
// (or completes one another process left half made), and brings it up.
func (b *Bridge) Ensure(ctx context.Context) error {
	unlock, err := b.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat("/sys/class/net/" + b.Name); err != nil {
		if err := ip(ctx, "link", "add", b.Name, "type", "bridge"); err != nil && !strings.Contains(err.Error(), "File exists") {
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

// forward adds (or removes) the rule that lets instances on the bridge
// reach each other: bridged traffic passes iptables' FORWARD chain, whose
// policy Docker sets to DROP. Docker has the same rule for docker0. Hosts
// without iptables need nothing.
func (b *Bridge) forward(ctx context.Context, add bool) error {
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil
	}
	rule := []string{"FORWARD", "-i", b.Name, "-o", b.Name, "-j", "ACCEPT"}
	present := exec.CommandContext(ctx, "iptables", append([]string{"-C"}, rule...)...).Run() == nil
	var args []string
	switch {
	case add && !present:
		args = append([]string{"-I"}, rule...)
	case !add && present:
		args = append([]string{"-D"}, rule...)
	default:
		return nil
	}
	if out, err := exec.CommandContext(ctx, "iptables", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("hostnet: iptables %s: %s: %w", strings.Join(args, " "), strings.TrimSpace(string(out)), err)
	}
	return nil
}

// Lease reserves a free address on the bridge; release it with Release.
func (b *Bridge) Lease(owner string) (netip.Addr, error) {
	unlock, err := b.lock()
	if err != nil {
		return netip.Addr{}, err
	}
	defer unlock()
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
		fmt.Fprintf(f, "%s pid=%d\n", owner, os.Getpid())
		f.Close()
		return a, nil
	}
	return netip.Addr{}, fmt.Errorf("hostnet: no free address left on %s (%s)", b.Name, b.Prefix)
}

// Release frees a lease. When it was the last one, the bridge is removed.
func (b *Bridge) Release(ctx context.Context, a netip.Addr) error {
	unlock, err := b.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(filepath.Join(b.LeaseDir, a.String())); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("hostnet: release: %w", err)
	}
	return b.removeIfUnused(ctx)
}

// RemoveIfUnused deletes the bridge when no live lease remains (leases of
// dead processes are stale and removed).
func (b *Bridge) RemoveIfUnused(ctx context.Context) error {
	unlock, err := b.lock()
	if err != nil {
		return err
	}
	defer unlock()
	return b.removeIfUnused(ctx)
}

func (b *Bridge) removeIfUnused(ctx context.Context) error {
	entries, _ := os.ReadDir(b.LeaseDir)
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(b.LeaseDir, e.Name()))
		var pid int
		if i := strings.Index(string(data), "pid="); i >= 0 {
			fmt.Sscanf(string(data)[i+4:], "%d", &pid)
		}
		if pid > 0 && syscall.Kill(pid, 0) == nil {
			return nil // a live lease
		}
		os.Remove(filepath.Join(b.LeaseDir, e.Name()))
	}
	if _, err := os.Stat("/sys/class/net/" + b.Name); err != nil {
		return nil
	}
	if err := ip(ctx, "link", "del", b.Name); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
		return err
	}
	return b.forward(ctx, false)
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
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("hostnet: ip %s: %s: %w", strings.Join(args, " "), strings.TrimSpace(string(out)), err)
	}
	return nil
}
