package hostside

import (
	"strings"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.17.0.2", "192.168.1.5", "fe80::1", "::1"} {
		if err := CheckAddr("x", a); err != nil {
			t.Errorf("CheckAddr(%s) = %v, want nil", a, err)
		}
	}
	for _, a := range []string{"8.8.8.8", "", "example.com", "2001:4860::8888"} {
		err := CheckAddr("x", a)
		if err == nil || !strings.HasPrefix(err.Error(), "x: ") {
			t.Errorf("CheckAddr(%q) = %v, want a refusal prefixed x:", a, err)
		}
	}
}

func TestPort(t *testing.T) {
	if p, err := Port(5201); p != 5201 || err != nil {
		t.Fatalf("Port(5201) = %d, %v", p, err)
	}
	if p, err := Port(0); err != nil || p < 1 || p > 65535 {
		t.Fatalf("Port(0) = %d, %v; want a free port", p, err)
	}
}
