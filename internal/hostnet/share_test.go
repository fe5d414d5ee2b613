package hostnet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The tests below share one bridge between independent users, as two
// concurrent isobench runs do: this process and a child process (the test
// binary re-run as TestHelperBridgeUser), each with its own ports.

const (
	shareBridge = "isobtest2"
	sharePrefix = "10.198.9.0/28"
)

// port is a network namespace with a veth on the bridge, as the platforms
// make for their instances.
type port struct {
	ns, veth string
	addr     netip.Addr
}

// addPort creates namespace ns with eth0 at addr, its host side veth (with
// MAC mac) on the bridge, and a default route via the gateway.
func addPort(ctx context.Context, b *Bridge, ns, veth, mac string, addr netip.Addr) (*port, error) {
	p := &port{ns: ns, veth: veth, addr: addr}
	steps := [][]string{
		{"netns", "add", ns},
		{"link", "add", veth, "address", mac, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"link", "set", veth, "master", b.Name},
		{"link", "set", veth, "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "addr", "add", netip.PrefixFrom(addr, b.Prefix.Bits()).String(), "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "route", "add", "default", "via", b.Gateway().String()},
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			p.remove(ctx)
			return nil, err
		}
	}
	return p, nil
}

func (p *port) remove(ctx context.Context) {
	DeleteLink(ctx, p.veth)
	exec.CommandContext(ctx, "ip", "netns", "delete", p.ns).Run()
}

// ping sends one echo request from the port's namespace, waiting up to 2 s
// for the reply.
func (p *port) ping(ctx context.Context, to netip.Addr) error {
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", p.ns, "busybox", "ping", "-c", "1", "-W", "2", to.String()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ping %s from %s: %v: %s", to, p.ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func bridgeMAC(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("/sys/class/net/" + name + "/address")
	if err != nil {
		t.Fatalf("bridge %s is gone: %v", name, err)
	}
	return strings.TrimSpace(string(b))
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create bridges and namespaces")
	}
	for _, tool := range []string{"ip", "busybox"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
}

// helper is the child process: another holder of the bridge.
type helper struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// startHelper runs this test binary as TestHelperBridgeUser with the lease
// directory; it waits for commands on stdin.
func startHelper(t *testing.T, leaseDir string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBridgeUser$", "-test.v")
	cmd.Env = append(os.Environ(), "HOSTNET_HELPER_LEASES="+leaseDir)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	outR, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, in: in, out: bufio.NewScanner(outR)}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return h
}

// do sends a command and waits for its "ok" (or fails the test).
func (h *helper) do(t *testing.T, command string) {
	t.Helper()
	fmt.Fprintln(h.in, command)
	for h.out.Scan() {
		line := h.out.Text()
		switch {
		case line == "ok "+command:
			return
		case strings.HasPrefix(line, "error "):
			t.Fatalf("helper %s: %s", command, line)
		}
	}
	t.Fatalf("helper ended during %s", command)
}

// TestHelperBridgeUser is not a test: it is the other holder of the shared
// bridge, started by startHelper. Commands: "join" (lease, ensure, add a
// port with a MAC lower than any of the parent's), "leave" (remove the
// port, release).
func TestHelperBridgeUser(t *testing.T) {
	dir := os.Getenv("HOSTNET_HELPER_LEASES")
	if dir == "" {
		t.Skip("helper process only")
	}
	ctx := context.Background()
	b, err := New(shareBridge, sharePrefix, dir)
	if err != nil {
		fmt.Println("error", err)
		return
	}
	var p *port
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var err error
		switch cmd := sc.Text(); cmd {
		case "join":
			var a netip.Addr
			if a, err = b.Lease("helper", ""); err == nil {
				if err = b.Ensure(ctx); err == nil {
					p, err = addPort(ctx, b, "isobtest2-h", "isbt2h", "02:00:00:00:00:01", a)
				}
				if err != nil {
					b.Release(ctx, a)
				}
			}
		case "leave":
			p.remove(ctx)
			err = b.Release(ctx, p.addr)
		}
		if err != nil {
			fmt.Println("error", strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		fmt.Println("ok", sc.Text())
	}
}

// TestConcurrentUsersShareTheBridge reproduces two runs at once: while
// another process repeatedly joins and leaves the bridge (a veth with a
// lower MAC than ours), our instances keep reaching the gateway and each
// other, the bridge's MAC never changes, and neither another holder with
// separate lease state nor one that died deletes the bridge from under our
// ports.
func TestConcurrentUsersShareTheBridge(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	leases := filepath.Join(t.TempDir(), "leases", shareBridge)
	b, err := New(shareBridge, sharePrefix, leases)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, l := range Links("isbt2") {
			DeleteLink(ctx, l)
		}
		for _, ns := range []string{"isobtest2-a", "isobtest2-b", "isobtest2-h", "isobtest2-c"} {
			exec.Command("ip", "netns", "delete", ns).Run()
		}
		DeleteLink(ctx, shareBridge)
		b.forward(ctx, false)
	})
	var ours []*port
	for i, name := range []string{"a", "b"} {
		a, err := b.Lease("ours-"+name, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Ensure(ctx); err != nil {
			t.Fatal(err)
		}
		p, err := addPort(ctx, b, "isobtest2-"+name, "isbt2"+name, fmt.Sprintf("0a:00:00:00:00:%02x", 0x10+i), a)
		if err != nil {
			t.Fatal(err)
		}
		ours = append(ours, p)
	}
	mac := bridgeMAC(t, shareBridge)
	if mac != b.MAC().String() {
		t.Fatalf("bridge MAC %s, want the fixed %s", mac, b.MAC())
	}
	reach := func(when string) {
		t.Helper()
		if got := bridgeMAC(t, shareBridge); got != mac {
			t.Fatalf("%s: bridge MAC changed from %s to %s", when, mac, got)
		}
		if err := ours[0].ping(ctx, b.Gateway()); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if err := ours[0].ping(ctx, ours[1].addr); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	reach("before the other process joined")

	h := startHelper(t, leases)
	for round := 0; round < 3; round++ {
		h.do(t, "join")
		// forget the gateway's address so it is learnt while the other
		// process's port (with the lowest MAC) is on the bridge
		if err := ip(ctx, "-n", ours[0].ns, "neigh", "flush", "all"); err != nil {
			t.Fatal(err)
		}
		reach(fmt.Sprintf("round %d, with the other process's port", round))
		h.do(t, "leave")
		reach(fmt.Sprintf("round %d, after the other process left", round))
	}

	// a holder with separate lease state (another state directory, or an
	// older isobench) releases its last lease while our ports are on it
	other, _ := New(shareBridge, sharePrefix, filepath.Join(t.TempDir(), "leases", shareBridge))
	oa, err := other.Lease("other", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Release(ctx, oa); err != nil {
		t.Fatal(err)
	}
	if !b.Exists() {
		t.Fatal("bridge deleted while our ports were on it")
	}
	reach("after a holder with separate leases released its last")

	// a holder that dies with its port on the bridge (kill -9 of a run
	// leaves its containers running): our release must keep the bridge
	h.do(t, "join")
	h.cmd.Process.Signal(syscall.SIGKILL)
	h.cmd.Wait()
	for _, p := range ours {
		p.remove(ctx)
		if err := b.Release(ctx, p.addr); err != nil {
			t.Fatal(err)
		}
	}
	if !b.Exists() {
		t.Fatal("bridge deleted while a dead process's port was still on it")
	}
	var stale []LeaseInfo
	for _, l := range b.Leases() {
		if l.Live {
			t.Errorf("lease %v of a dead process counted live", l)
		}
		stale = append(stale, l)
	}
	if len(stale) != 1 || stale[0].Owner != "helper" {
		t.Fatalf("leases left %+v, want the dead helper's one (its port is still up)", stale)
	}
	// once its port is gone, nothing holds the bridge
	DeleteLink(ctx, "isbt2h")
	exec.Command("ip", "netns", "delete", "isobtest2-h").Run()
	if err := b.RemoveIfUnused(ctx); err != nil {
		t.Fatal(err)
	}
	if b.Exists() {
		t.Fatal("bridge left with no port and no live lease")
	}
	if ls := b.Leases(); len(ls) != 0 {
		t.Fatalf("stale leases left: %+v", ls)
	}
	if exec.Command("iptables", "-C", "FORWARD", "-i", shareBridge, "-o", shareBridge, "-j", "ACCEPT").Run() == nil {
		t.Error("FORWARD rule left after the bridge was removed")
	}
}

// TestReusedAddressIsReachableFromTheHost: an address released by one
// instance and leased to the next (another MAC) is reachable from the host
// at once, though the host had just talked to the previous holder.
func TestReusedAddressIsReachableFromTheHost(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	b, err := New("isobtest3", "10.198.10.0/29", filepath.Join(t.TempDir(), "leases", "isobtest3"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, l := range Links("isbt3") {
			DeleteLink(ctx, l)
		}
		exec.Command("ip", "netns", "delete", "isobtest3-a").Run()
		exec.Command("ip", "netns", "delete", "isobtest3-k").Run()
		DeleteLink(ctx, "isobtest3")
		b.forward(ctx, false)
	})
	// another instance stays on the bridge while the address changes
	// hands (a bridge with no port left loses its carrier, which flushes
	// the host's neighbour entries anyway)
	keep, err := b.Lease("keep", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	kp, err := addPort(ctx, b, "isobtest3-k", "isbt3k", "0a:00:00:00:03:00", keep)
	if err != nil {
		t.Fatal(err)
	}
	var prev netip.Addr
	for i, mac := range []string{"0a:00:00:00:03:01", "0a:00:00:00:03:02", "0a:00:00:00:03:03"} {
		a, err := b.Lease(fmt.Sprint("instance-", i), "")
		if err != nil {
			t.Fatal(err)
		}
		if prev.IsValid() && a != prev {
			t.Fatalf("lease %d got %s, not the released %s", i, a, prev)
		}
		prev = a
		if err := b.Ensure(ctx); err != nil {
			t.Fatal(err)
		}
		p, err := addPort(ctx, b, "isobtest3-a", "isbt3a", mac, a)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, "busybox", "ping", "-c", "1", "-W", "2", a.String()).CombinedOutput()
		if err != nil {
			t.Fatalf("instance %d (%s, host veth %s) unreachable from the host: %v: %s", i, a, mac, err, out)
		}
		p.remove(ctx)
		if err := b.Release(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	kp.remove(ctx)
	if err := b.Release(ctx, keep); err != nil {
		t.Fatal(err)
	}
	if b.Exists() {
		t.Fatal("bridge left after the last release")
	}
}
