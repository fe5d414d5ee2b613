package lxc

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
)

// TestCloseRemovesCgroupsOfAKilledMonitor: when LXC's monitor
// (lxc-execute) is killed, it cannot remove the container's cgroups;
// Close removes them.
func TestCloseRemovesCgroupsOfAKilledMonitor(t *testing.T) {
	if testing.Short() {
		t.Skip("creates a container")
	}
	agent := conformance.BuildAgent(t)
	p, err := Factory.New(t.Context(), platform.Options{}, platform.Env{AgentBinary: agent, StateDir: local.TestStateDir(), Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := p.Available(ctx); err != nil {
		conformance.SkipUnlessRequired(t, "lxc", err)
	}
	in, err := p.Create(ctx, platform.Spec{Image: "minimal", Network: platform.NetNone})
	if err != nil {
		t.Fatal(err)
	}
	id := in.ID()
	cgroups := func() []string {
		m, _ := filepath.Glob("/sys/fs/cgroup/*/lxc.*." + id)
		n, _ := filepath.Glob("/sys/fs/cgroup/lxc.*." + id)
		return append(m, n...)
	}
	if len(cgroups()) == 0 {
		in.Close(ctx)
		t.Fatalf("no LXC cgroups for %s while it runs", id)
	}
	// the container's processes, then its monitor, killed as a crash would
	for _, pid := range local.Descendants(in.(*Instance).Main.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	in.(*Instance).Main.Process.Kill()
	if _, err := in.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("left by the killed monitor: %v", cgroups())
	if err := in.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if left := cgroups(); len(left) > 0 {
		t.Errorf("cgroups left after Close: %v", left)
	}
}
