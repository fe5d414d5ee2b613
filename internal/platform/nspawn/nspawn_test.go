package nspawn

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
)

// TestConformance runs the shared platform suite against systemd-nspawn.
func TestConformance(t *testing.T) {
	agent := conformance.BuildAgent(t)
	state := local.TestStateDir()
	conformance.Run(t, func(t *testing.T) platform.Platform {
		o, err := platform.ParseOptions("nspawn")
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(t.Context(), o, platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, conformance.Opts{
		Leftovers: func(ctx context.Context) ([]string, error) { return Leftovers(ctx, state) },
	})
}

// TestStartup times create → agent hello → exit, for the report.
func TestStartup(t *testing.T) {
	agent := conformance.BuildAgent(t)
	p, err := New(t.Context(), platform.Options{}, platform.Env{AgentBinary: agent, StateDir: local.TestStateDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "nspawn", err)
	}
	if err := p.(platform.Preparer).Prepare(t.Context(), "minimal"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		var out strings.Builder
		start := time.Now()
		inst, err := p.Create(t.Context(), platform.Spec{Image: "minimal", Main: []string{platform.AgentPlaceholder, "agent", "hello"}, MainStdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		code, err := inst.Wait(t.Context())
		total := time.Since(start)
		if err != nil || code != 0 || !strings.Contains(out.String(), "hello") {
			t.Fatalf("Wait = %d, %v; stdout %q", code, err, out.String())
		}
		if err := inst.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Logf("nspawn create→hello→exit %v, with close %v", total, time.Since(start))
	}
}

func TestNewRejects(t *testing.T) {
	o := platform.Options{Base: platform.Spec{Network: "weird"}}
	if _, err := New(t.Context(), o, platform.Env{AgentBinary: "/a", StateDir: t.TempDir()}); err == nil {
		t.Error("unknown network accepted")
	}
	if _, err := New(t.Context(), platform.Options{}, platform.Env{}); err == nil {
		t.Error("missing agent binary accepted")
	}
}
