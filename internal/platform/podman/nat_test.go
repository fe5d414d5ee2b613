package podman

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
)

// TestNATHasBridgeAddress: network=nat is podman's bridge with the spec's
// ports published on loopback, so the instance has its bridge address too
// (the network workloads ask for it: "has no bridge address" failed every
// tcp-rr on podman:network=nat) as well as the published endpoint.
func TestNATHasBridgeAddress(t *testing.T) {
	probe, err := New(t.Context(), platform.Options{}, platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "podman", err)
	}
	agent := conformance.BuildAgent(t)
	p := newTestPlatform(t, agent, t.TempDir())
	if err := p.Prepare(t.Context(), "minimal"); err != nil {
		t.Fatal(err)
	}
	inst, err := p.Create(t.Context(), platform.Spec{Image: "minimal", Network: platform.NetNAT, Ports: []int{5201}})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(t.Context())
	addr, err := inst.Address(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	a, err := netip.ParseAddr(addr)
	if err != nil || a.IsLoopback() || a.IsUnspecified() {
		t.Fatalf("Address = %q, %v: want the container's bridge address", addr, err)
	}
	pub, ok, err := inst.(platform.Publisher).Published(t.Context(), 5201)
	if err != nil || !ok || !strings.HasPrefix(pub, "127.0.0.1:") {
		t.Fatalf("Published(5201) = %q, %v, %v: want a port on 127.0.0.1", pub, ok, err)
	}
	if err := inst.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}
