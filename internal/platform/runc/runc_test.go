package runc

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
)

func conformanceFor(t *testing.T, runtime string) {
	agent := conformance.BuildAgent(t)
	state := local.TestStateDir()
	conformance.Run(t, func(t *testing.T) platform.Platform {
		o, err := platform.ParseOptions(runtime)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(t.Context(), runtime, o, platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, conformance.Opts{
		Leftovers: func(ctx context.Context) ([]string, error) { return Leftovers(ctx, runtime, state) },
	})
}

// TestConformanceRunc runs the shared platform suite against runc.
func TestConformanceRunc(t *testing.T) { conformanceFor(t, "runc") }

// TestConformanceCrun runs the shared platform suite against crun.
func TestConformanceCrun(t *testing.T) { conformanceFor(t, "crun") }

// TestStartup times create → agent hello → exit, for the report.
func TestStartup(t *testing.T) {
	agent := conformance.BuildAgent(t)
	for _, rt := range []string{"runc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			p, err := New(t.Context(), rt, platform.Options{}, platform.Env{AgentBinary: agent, StateDir: local.TestStateDir()})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Available(t.Context()); err != nil {
				conformance.SkipUnlessRequired(t, rt, err)
			}
			if err := p.Prepare(t.Context(), "minimal"); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				var out strings.Builder
				start := time.Now()
				var phases []string
				inst, err := p.Create(t.Context(), platform.Spec{Image: "minimal", Main: []string{platform.AgentPlaceholder, "agent", "hello"}, MainStdout: &out,
					Phase: func(n string, at time.Time) {
						phases = append(phases, n+"@"+at.Sub(start).Round(time.Microsecond).String())
					}})
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
				t.Logf("%s create→hello→exit %v (phases %v), with close %v", rt, total, phases, time.Since(start))
			}
		})
	}
}

func TestOCIConfig(t *testing.T) {
	s := platform.Spec{CPUs: 1.5, Memory: 256 << 20, Main: []string{platform.AgentPlaceholder, "agent", "hello"}}
	c := ociConfig(s, bundleConfig{id: "isob-rabc", rootfs: "/x/rootfs", volume: "/x/volume", netnsPath: "/run/netns/isob-rabc"})
	if c.Linux.Resources.CPU == nil || c.Linux.Resources.CPU.Quota != 150000 || c.Linux.Resources.CPU.Period != 100000 {
		t.Errorf("cpu %+v", c.Linux.Resources.CPU)
	}
	if c.Linux.Resources.Memory == nil || c.Linux.Resources.Memory.Limit != 256<<20 {
		t.Errorf("memory %+v", c.Linux.Resources.Memory)
	}
	if c.Linux.CgroupsPath != "/isobench/isob-rabc" || c.Root.Path != "/x/rootfs" || c.Process.Terminal {
		t.Errorf("config %+v", c)
	}
	if strings.Join(c.Process.Args, " ") != "/usr/local/bin/isobench agent hello" {
		t.Errorf("args %q", c.Process.Args)
	}
	if !slices.Contains(c.Process.Env, "ISOBENCH_SCRATCH=/isobench-scratch") {
		t.Errorf("env %q", c.Process.Env)
	}
	var netns string
	for _, n := range c.Linux.Namespaces {
		if n.Type == "network" {
			netns = n.Path
		}
	}
	if netns != "/run/netns/isob-rabc" {
		t.Errorf("namespaces %+v", c.Linux.Namespaces)
	}
	last := c.Mounts[len(c.Mounts)-1]
	if last.Destination != platform.ScratchDir || last.Source != "/x/volume" || last.Type != "bind" {
		t.Errorf("volume mount %+v", last)
	}
	b, err := json.Marshal(c)
	if err != nil || !strings.Contains(string(b), `"ociVersion":"1.0.2"`) {
		t.Errorf("json %s, %v", b, err)
	}

	c = ociConfig(platform.Spec{}, bundleConfig{id: "i", hostNet: true})
	if c.Linux.Resources.CPU != nil || c.Linux.Resources.Memory != nil {
		t.Errorf("unlimited spec has resources %+v", c.Linux.Resources)
	}
	for _, n := range c.Linux.Namespaces {
		if n.Type == "network" {
			t.Errorf("host network has a network namespace")
		}
	}
	if strings.Join(c.Process.Args, " ") != "/usr/local/bin/isobench agent idle" {
		t.Errorf("idle args %q", c.Process.Args)
	}
}

func TestNewRejects(t *testing.T) {
	env := platform.Env{AgentBinary: "/a", StateDir: filepath.Join(t.TempDir())}
	if _, err := New(t.Context(), "youki", platform.Options{}, env); err == nil {
		t.Error("unknown runtime accepted")
	}
	o := platform.Options{Base: platform.Spec{Network: "weird"}}
	if _, err := New(t.Context(), "runc", o, env); err == nil {
		t.Error("unknown network accepted")
	}
	reg := platform.NewRegistry(RuncFactory, CrunFactory)
	if _, o, err := reg.Parse("crun:cpus=1,network=bridge"); err != nil || o.Base.Network != "bridge" {
		t.Errorf("parse crun options: %+v, %v", o, err)
	}
}
