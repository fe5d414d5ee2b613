package lxc

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local/localtest"
)

func newSystem(t *testing.T, agent, state string) platform.Platform {
	t.Helper()
	o, err := platform.ParseOptions("lxc:init=system", Factory.Extra...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Factory.New(t.Context(), o, platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSystemRefusesMinimal: init=system with an image without an init
// system is one clear error.
func TestSystemRefusesMinimal(t *testing.T) {
	p := newSystem(t, "/bin/true", t.TempDir())
	_, err := p.Create(t.Context(), platform.Spec{Image: image.Minimal})
	if err == nil || !strings.Contains(err.Error(), "init=system") || !strings.Contains(err.Error(), "image=debian") {
		t.Fatalf("init=system on minimal: %v", err)
	}
	o, _ := platform.ParseOptions("lxc:init=bogus", Factory.Extra...)
	if _, err := Factory.New(t.Context(), o, platform.Env{AgentBinary: "/bin/true", StateDir: t.TempDir()}); err == nil {
		t.Error("init=bogus accepted")
	}
}

// TestSystemBoots boots a system container and checks that systemd is PID
// 1 with its usual services (journald, D-Bus, sshd) running, the masked
// servers not, and that the agent runs as a process among them.
func TestSystemBoots(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a system")
	}
	agent := conformance.BuildAgent(t)
	p := newSystem(t, agent, conformance.SystemStateDir())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	if err := p.Available(ctx); err != nil {
		conformance.SkipUnlessRequired(t, "lxc", err)
	}
	if err := p.(platform.Preparer).Prepare(ctx, image.Debian); err != nil {
		t.Fatal(err)
	}
	conformance.CheckSystemBoots(ctx, t, p, platform.Spec{}, conformance.SystemChecks{Processes: true})
}

// TestSystemConformance runs the platform suite on system containers.
func TestSystemConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("boots systems")
	}
	agent := conformance.BuildAgent(t)
	state := conformance.SystemStateDir()
	rec := &localtest.Recorder{}
	conformance.Run(t, func(t *testing.T) platform.Platform {
		rec.Platform = newSystem(t, agent, state)
		return rec
	}, conformance.Opts{
		Image: image.Debian,
		Leftovers: func(ctx context.Context) ([]string, error) {
			all, err := localtest.Leftovers(ctx, Factory, state)
			return rec.Mine(all), err
		},
		Timeout: 5 * time.Minute,
	})
}
