package lxc

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
)

// TestContainerNames: a real container on the bridge sees the resolver
// and hosts file isobench wrote (its name at its own address).
func TestContainerNames(t *testing.T) {
	if testing.Short() {
		t.Skip("creates a container")
	}
	agent := conformance.BuildAgent(t)
	state := local.TestStateDir()
	p, err := Factory.New(t.Context(), platform.Options{}, platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := p.Available(ctx); err != nil {
		conformance.SkipUnlessRequired(t, "lxc", err)
	}
	if err := p.(platform.Preparer).Prepare(ctx, "minimal"); err != nil {
		t.Fatal(err)
	}
	in, err := p.Create(ctx, platform.Spec{Image: "minimal"})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.WithoutCancel(ctx))
	addr, err := in.Address(ctx)
	if err != nil || addr == "" {
		t.Fatalf("address %q: %v", addr, err)
	}
	cat := func(path string) string {
		var out, errb bytes.Buffer
		if err := in.Exec(ctx, []string{"cat", path}, platform.ExecIO{Stdout: &out, Stderr: &errb}); err != nil {
			t.Fatalf("cat %s: %v (%s)", path, err, errb.String())
		}
		return out.String()
	}
	if got := cat("/etc/resolv.conf"); got != local.NoResolver {
		t.Errorf("container's resolv.conf, want only the loopback as nameserver:\n%s", got)
	}
	if got := cat("/etc/hosts"); !strings.Contains(got, addr+" "+local.Hostname+" ") {
		t.Errorf("container's hosts lacks %s %s:\n%s", addr, local.Hostname, got)
	}
	var host bytes.Buffer
	if err := in.Exec(ctx, []string{"hostname"}, platform.ExecIO{Stdout: &host}); err != nil || strings.TrimSpace(host.String()) != local.Hostname {
		t.Errorf("hostname %q: %v", host.String(), err)
	}
}
