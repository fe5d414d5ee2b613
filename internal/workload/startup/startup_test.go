package startup

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/docker"
	"github.com/isobench/isobench/internal/platform/local"
	"github.com/isobench/isobench/internal/platform/local/localtest"
	"github.com/isobench/isobench/internal/platform/lxc"
	"github.com/isobench/isobench/internal/platform/native"
	"github.com/isobench/isobench/internal/workload"
)

var agentBin string

func TestMain(m *testing.M) { os.Exit(conformance.AgentTestMain(m, &agentBin)) }

var seq atomic.Int64

// check runs startup with n instances at once on p and checks every
// instance's phases; phased says the platform reports created/started.
func check(t *testing.T, p platform.Platform, n int, phased bool, label string) {
	t.Helper()
	params, err := Def.Resolve(map[string]string{"timeout": "2m"})
	if err != nil {
		t.Fatal(err)
	}
	env := workload.HostEnv{
		Platform:  p,
		Base:      platform.Spec{Image: "minimal", Labels: map[string]string{platform.Label: "1", "isobench.test": label}},
		Instances: n,
		NewName:   func() string { return fmt.Sprintf("sutest-%s-%d", label, seq.Add(1)) },
	}
	ctx, cancel := context.WithTimeout(t.Context(), Def.Timeout(params))
	defer cancel()
	res, err := Def.Host(ctx, params, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != n {
		t.Fatalf("%d results for %d instances", len(res), n)
	}
	for i, r := range res {
		ms := map[string]float64{}
		for _, m := range r.Metrics {
			if err := m.Validate(); err != nil {
				t.Error(err)
			}
			ms[m.Name] = m.Value
		}
		t.Logf("instance %d: %v", i, ms)
		if r.Instance != i {
			t.Errorf("result %d is instance %d", i, r.Instance)
		}
		if ms["startup_ms"] <= 0 || ms["exit_ms"] < ms["startup_ms"] || ms["remove_ms"] < 0 {
			t.Errorf("instance %d: startup %v, exit %v, remove %v: want 0 < startup <= exit, remove >= 0", i, ms["startup_ms"], ms["exit_ms"], ms["remove_ms"])
		}
		_, hasCreate := ms["create_ms"]
		_, hasStart := ms["start_ms"]
		if phased != (hasCreate && hasStart) {
			t.Errorf("instance %d: create/start phases present = %v, want %v", i, hasCreate && hasStart, phased)
		}
		if phased {
			// the phases partition the time to the agent's first line
			sum := ms["create_ms"] + ms["start_ms"] + ms["first_instruction_ms"]
			if math.Abs(sum-ms["startup_ms"]) > 0.01 || ms["create_ms"] <= 0 || ms["start_ms"] < 0 || ms["first_instruction_ms"] < 0 {
				t.Errorf("instance %d: create %v + start %v + first instruction %v != startup %v", i, ms["create_ms"], ms["start_ms"], ms["first_instruction_ms"], ms["startup_ms"])
			}
		}
	}
}

func TestNative(t *testing.T) {
	p, err := native.New(t.Context(), platform.Options{}, platform.Env{AgentBinary: agentBin, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	check(t, p, 4, true, "native")
}

func TestDocker(t *testing.T) {
	p, err := docker.New(t.Context(), platform.Options{}, platform.Env{AgentBinary: agentBin, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if err := p.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	if err := p.(platform.Preparer).Prepare(t.Context(), "minimal"); err != nil {
		t.Fatal(err)
	}
	label := strconv.FormatInt(time.Now().UnixNano(), 10)
	check(t, p, 3, true, label)
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=isobench.test="+label).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v %s", err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("containers left behind: %s", s)
	}
}

func TestLXC(t *testing.T) {
	o, err := platform.ParseOptions("lxc")
	if err != nil {
		t.Fatal(err)
	}
	state := local.TestStateDir()
	p, err := lxc.New(t.Context(), o, platform.Env{AgentBinary: agentBin, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if err := p.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "lxc", err)
	}
	if err := p.(platform.Preparer).Prepare(t.Context(), "minimal"); err != nil {
		t.Fatal(err)
	}
	rec := &localtest.Recorder{Platform: p}
	check(t, rec, 3, true, "lxc")
	left, err := localtest.Leftovers(t.Context(), lxc.Factory, state)
	if err != nil {
		t.Fatal(err)
	}
	rec.CheckLeftovers(t, left)
}
