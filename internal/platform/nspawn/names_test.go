package nspawn

import (
	"bytes"
	"os"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
)

// TestResolver: on the bridge and without a network a container sees the
// resolver isobench wrote (nspawn's own default would copy the host's,
// unreachable from the bridge: every lookup then waited 10 s); with the
// host's network, the host's.
func TestResolver(t *testing.T) {
	if testing.Short() {
		t.Skip("creates containers")
	}
	agent := conformance.BuildAgent(t)
	p, err := Factory.New(t.Context(), platform.Options{}, platform.Env{AgentBinary: agent, StateDir: local.TestStateDir(), Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(t.Context())
	if err := p.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "nspawn", err)
	}
	for _, n := range []string{platform.NetBridge, platform.NetNone, platform.NetHost} {
		in, err := p.Create(t.Context(), platform.Spec{Image: "minimal", Network: n})
		if err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		err = in.Exec(t.Context(), []string{"cat", "/etc/resolv.conf"}, platform.ExecIO{Stdout: &out, Stderr: &errb})
		in.Close(t.Context())
		if err != nil {
			t.Fatalf("%s: cat /etc/resolv.conf: %v (%s)", n, err, errb.String())
		}
		if own := out.String() == local.NoResolver; own != (n != platform.NetHost) {
			t.Errorf("network=%s: resolv.conf is\n%s", n, out.String())
		}
	}
}
