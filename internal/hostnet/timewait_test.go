package hostnet

import (
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// timeWaitServer accepts n connections on loopback and closes each first,
// so each leaves a TIME_WAIT socket on the server's side, as Apache does
// to ab's connections.
func timeWaitServer(t *testing.T, n int) netip.AddrPort {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			c, err := l.Accept()
			if err != nil {
				done <- err
				return
			}
			c.Write([]byte("bye"))
			c.Close()
		}
		done <- nil
	}()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(c) // until the server's FIN
		c.Close()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return netip.MustParseAddrPort(l.Addr().String())
}

func timeWaitCount(t *testing.T, ep netip.AddrPort) int {
	t.Helper()
	out, err := exec.Command("ss", "-H", "-t", "-a", "-n", "state", "time-wait", "( src "+ep.String()+" or dst "+ep.String()+" )").Output()
	if err != nil {
		t.Fatal(err)
	}
	return len(strings.Fields(strings.TrimSpace(string(out)))) / 4 // Recv-Q Send-Q local peer
}

// TestResetTimeWait: the sockets of one server's connections are
// destroyed, another server's are left alone.
func TestResetTimeWait(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("destroying sockets needs root")
	}
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("ss is not installed (apt-get install iproute2)")
	}
	ours := timeWaitServer(t, 40)
	theirs := timeWaitServer(t, 15)
	if n := timeWaitCount(t, ours); n != 40 {
		t.Fatalf("%d TIME_WAIT sockets of the test's server before the reset, want 40", n)
	}
	n, err := ResetTimeWait(context.Background(), ours, netip.AddrPort{})
	if err != nil && strings.Contains(err.Error(), "CONFIG_INET_DIAG_DESTROY") && n == 0 {
		t.Skipf("this kernel cannot destroy sockets: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n != 40 {
		t.Errorf("ResetTimeWait destroyed %d, want 40", n)
	}
	if left := timeWaitCount(t, ours); left != 0 {
		t.Errorf("%d TIME_WAIT sockets of the reset server left", left)
	}
	if other := timeWaitCount(t, theirs); other != 15 {
		t.Errorf("another server's TIME_WAIT sockets: %d, want its 15 untouched", other)
	}
	if n, err := ResetTimeWait(context.Background()); n != 0 || err != nil {
		t.Errorf("no endpoints: %d, %v; want 0, nil", n, err)
	}
}
