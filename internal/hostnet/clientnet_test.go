package hostnet

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]uint64{"100mbit": 100e6, "1gbit": 1e9, "512kbit": 512e3, "9600bit": 9600, " 10MBIT ": 10e6} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "100", "100mb", "0mbit", "-1mbit", "fast", "101gbit", "1.5mbit"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
}

// A ClientNet is a namespace of its own on the bridge: its clients reach a
// server listening on the bridge's gateway address (native's address for
// them), both ends of its veth are shaped to the rate, and Close leaves
// no veth, lease or holder process behind.
func TestClientNet(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a namespace and a bridge")
	}
	for _, tool := range []string{"ip", "tc", "nsenter", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	ctx := context.Background()
	b, _ := New("isobtest2", "10.198.9.0/29", filepath.Join(t.TempDir(), "leases", "isobtest2"))
	defer b.RemoveIfUnused(ctx)
	c, err := NewClientNet(ctx, b, "clientnet-test", 100e6)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if !b.Prefix.Contains(c.Addr) || c.Addr == b.Gateway() {
		t.Errorf("client address %s not a lease in %s", c.Addr, b.Prefix)
	}
	for _, argv := range [][]string{
		{"tc", "qdisc", "show", "dev", c.veth},
		c.inside("tc", "qdisc", "show", "dev", "eth0"),
	} {
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "tbf") || !strings.Contains(string(out), "rate 100Mbit") {
			t.Errorf("%s: %s %v, want a tbf at 100Mbit", strings.Join(argv, " "), out, err)
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(b.Gateway().String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer conn.Close()
		line, _ := bufio.NewReader(conn).ReadString('\n')
		got <- strings.TrimSpace(line) + " from " + conn.RemoteAddr().(*net.TCPAddr).IP.String()
	}()
	port := l.Addr().(*net.TCPAddr).Port
	cmd := c.Command(ctx, "bash", "-c", "echo hello > /dev/tcp/"+b.Gateway().String()+"/"+itoa(port))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("client: %v: %s", err, out)
	}
	if want := "hello from " + c.Addr.String(); <-got != want {
		t.Errorf("the server did not read %q", want)
	}
	veth, addr, pid := c.veth, c.Addr, c.hold.Process.Pid
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if l := Links(veth); len(l) > 0 {
		t.Errorf("veth %v left", l)
	}
	for _, li := range b.Leases() {
		if li.Addr == addr {
			t.Errorf("lease %s left", addr)
		}
	}
	if _, err := os.Stat("/proc/" + itoa(pid)); err == nil {
		t.Errorf("holder %d still running", pid)
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
