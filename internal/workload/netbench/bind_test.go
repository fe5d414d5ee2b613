package netbench

import (
	"net"
	"testing"
)

// TestServerBindIsOneAddress: the _net-server half listened on 0.0.0.0 by
// default and took any bind string; now its default is loopback and
// anything but one IP literal other than the unspecified one is refused.
func TestServerBindIsOneAddress(t *testing.T) {
	p, err := Server.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(p.Str("bind")); ip == nil || ip.IsUnspecified() {
		t.Errorf("default bind %q", p.Str("bind"))
	}
	for _, bad := range []string{"0.0.0.0", "::", "127.0.0.1;", "127.0.0.1 80", "127.0.0.1\n", `"127.0.0.1"`, "localhost"} {
		if _, err := Server.Resolve(map[string]string{"bind": bad}); err == nil {
			t.Errorf("bind=%q accepted", bad)
		}
	}
}
