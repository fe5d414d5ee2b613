package hostnet

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestLeasesAreUniqueAcrossConcurrentCallers(t *testing.T) {
	b, err := New("isobtest0", "10.198.7.0/28", filepath.Join(t.TempDir(), "leases", "isobtest0"))
	if err != nil {
		t.Fatal(err)
	}
	// a /28 has 14 hosts: the gateway and 13 leases
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	errs := 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := b.Lease("t", "")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				return
			}
			if seen[a.String()] {
				t.Errorf("address %s leased twice", a)
			}
			seen[a.String()] = true
		}()
	}
	wg.Wait()
	if len(seen) != 13 || errs != 3 {
		t.Fatalf("leased %d, refused %d; want 13 and 3", len(seen), errs)
	}
	if seen[b.Gateway().String()] || seen["10.198.7.15"] {
		t.Fatal("gateway or broadcast leased")
	}
}

func TestBridgeLifecycle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a bridge")
	}
	ctx := context.Background()
	b, _ := New("isobtest1", "10.198.8.0/29", filepath.Join(t.TempDir(), "leases", "isobtest1"))
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ { // concurrent Ensure must all succeed
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Ensure(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if _, err := exec.LookPath("iptables"); err == nil {
		if exec.Command("iptables", "-C", "FORWARD", "-i", "isobtest1", "-o", "isobtest1", "-j", "ACCEPT").Run() != nil {
			t.Error("no FORWARD accept rule for the bridge")
		}
	}
	a1, _ := b.Lease("a", "")
	a2, _ := b.Lease("b", "isvtest2")
	// a lease names its owner's link, so a sweep needs no platform's naming
	ports := map[string]string{}
	for _, l := range b.Leases() {
		ports[l.Owner] = l.Port
	}
	if ports["a"] != "" || ports["b"] != "isvtest2" {
		t.Errorf("lease ports = %v, want a: none, b: isvtest2", ports)
	}
	if err := b.Release(ctx, a1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/sys/class/net/isobtest1"); err != nil {
		t.Fatal("bridge removed while a lease is still held")
	}
	if err := b.Release(ctx, a2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/sys/class/net/isobtest1"); err == nil {
		DeleteLink(ctx, "isobtest1")
		t.Fatal("bridge left after the last lease was released")
	}
	if _, err := exec.LookPath("iptables"); err == nil {
		if exec.Command("iptables", "-C", "FORWARD", "-i", "isobtest1", "-o", "isobtest1", "-j", "ACCEPT").Run() == nil {
			t.Error("FORWARD rule left after the bridge was removed")
		}
	}
}

// A copy of the FORWARD rule inserted twice (once by a check that a signal
// killed, so the rule read as absent) goes with the bridge: removal deletes
// every copy.
func TestRemovalDeletesEveryCopyOfTheRule(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a bridge")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("needs iptables")
	}
	ctx := context.Background()
	b, _ := New("isobtest3", "10.198.10.0/29", filepath.Join(t.TempDir(), "leases", "isobtest3"))
	if err := b.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		DeleteLink(ctx, b.Name)
		for range 4 {
			exec.Command("iptables", append([]string{"-w", "5", "-D"}, forwardRule(b.Name)...)...).Run()
		}
	})
	if err := iptables(ctx, append([]string{"-I"}, forwardRule(b.Name)...)...); err != nil {
		t.Fatal(err)
	}
	if err := b.Ensure(ctx); err != nil { // finds the rule: adds no third copy
		t.Fatal(err)
	}
	out, err := exec.Command("iptables", "-w", "5", "-S", "FORWARD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), "-i "+b.Name+" -o "+b.Name+" -j ACCEPT"); n != 2 {
		t.Fatalf("%d copies of the rule before removal, want the 2 made:\n%s", n, out)
	}
	if err := b.RemoveIfUnused(ctx); err != nil {
		t.Fatal(err)
	}
	if b.Exists() {
		t.Error("bridge left")
	}
	if ok, err := RuleExists(ctx, b.Name); ok || err != nil {
		t.Errorf("after removal: rule present %v (%v), want every copy gone", ok, err)
	}
}

// The bridge's set-up and removal steps run in a process group of their
// own, so a terminal's Ctrl-C, sent to isobench's group, does not stop one
// half way.
func TestStepsRunInTheirOwnProcessGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	// field 5 of /proc/PID/stat is the process group
	if err := command(context.Background(), "sh", "-c", `[ "$(cut -d' ' -f5 /proc/$$/stat)" = "$$" ]`); err != nil {
		t.Fatalf("the step is not the leader of its own group: %v", err)
	}
}

// FreeBlock's ports are consecutive, free on the address, and below the
// kernel's ephemeral range (no connection's source port can take one); a
// block that cannot fit below the range is refused.
func TestFreeBlock(t *testing.T) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		fmt.Sscan(string(b), &low)
	}
	start, err := FreeBlock("127.0.0.1", 6)
	if err != nil {
		t.Fatal(err)
	}
	if start < 20000 || start+6 > low {
		t.Fatalf("block %d-%d, want inside [20000, %d)", start, start+5, low)
	}
	for p := start; p < start+6; p++ {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d of the block: %v", p, err)
		}
		l.Close()
	}
	if _, err := FreeBlock("127.0.0.1", low); err == nil {
		t.Errorf("a block of %d ports below %d accepted", low, low)
	}
}
