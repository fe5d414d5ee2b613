package service

import (
	"os"
	"strings"
	"testing"
)

// TestListenOverflows reads the counter from this host's /proc/net/netstat
// (captured after ab at 8,000 users against Apache) and refuses files
// without it.
func TestListenOverflows(t *testing.T) {
	f, err := os.Open("testdata/netstat.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, ok := listenOverflows(f); !ok || n != 445828 {
		t.Errorf("listenOverflows = %d, %v; want 445828, true", n, ok)
	}
	for _, bad := range []string{"", "TcpExt: SyncookiesSent\nTcpExt: 3\n", "TcpExt: ListenOverflows\nTcpExt: x\n", "IpExt: ListenOverflows\nIpExt: 4\n"} {
		if n, ok := listenOverflows(strings.NewReader(bad)); ok {
			t.Errorf("listenOverflows(%q) = %d, true; want not found", bad, n)
		}
	}
}
