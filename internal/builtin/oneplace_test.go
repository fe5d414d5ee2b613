package builtin_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/cleanup"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local/localtest"
	"github.com/isobench/isobench/internal/runner"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/study"
	"github.com/isobench/isobench/internal/workload"
)

// This file is the proof of CONTRIBUTING.md's "Adding a platform" and
// "Adding a workload": a platform is its package's Factory and a
// workload its package's Def, and one line in a registry's list (here the
// fresh registries of TestOnePlace, in the binary builtin's lists) is all
// the rest of isobench needs. Nothing below names "toy" or "toyload"
// outside their definitions and the registry lines: the sweep ('isobench
// clean' and the sweep before a run), the plan's estimate, the preflight
// and the conformance suite's leftover check all read the traits the
// definitions declare.

// The throw-away platform: a "box" is a directory toy-<token>-<n> in the
// state directory, labelled with its run's token as the real engines
// label their containers.
var toyFactory = platform.Factory{
	Name: "toy",
	Help: "a test's throw-away platform",
	New: func(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
		return &toyPlatform{env: env}, nil
	},
	Cost:  platform.Cost{Instance: 7 * time.Second, Once: time.Minute},
	Sweep: toySweep,
}

type toyPlatform struct {
	platform.Platform // what the test does not call
	env               platform.Env
	n                 int
}

func (p *toyPlatform) Create(ctx context.Context, s platform.Spec) (platform.Instance, error) {
	p.n++
	dir := filepath.Join(p.env.StateDir, "toy-"+s.Labels["isobench.run"]+"-"+strconv.Itoa(p.n))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	return &toyBox{dir: dir}, nil
}

type toyBox struct {
	platform.Instance
	dir string
}

func (b *toyBox) ID() string                      { return filepath.Base(b.dir) }
func (b *toyBox) Close(ctx context.Context) error { return os.RemoveAll(b.dir) }

// toySweep is the platform's one description of what it creates.
func toySweep(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error) {
	var out []platform.Leftover
	for _, sd := range env.StateDirs {
		m, _ := filepath.Glob(filepath.Join(sd, "toy-*"))
		for _, dir := range m {
			token, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), "toy-"), "-")
			out = append(out, platform.Leftover{Kind: "toy-box", Name: dir, Token: token,
				Remove: func(context.Context) error { return os.RemoveAll(dir) }})
		}
	}
	return out, nil
}

// The throw-away workload: it talks over the network and takes 3 s a
// repetition.
var toyDef = workload.Def{
	Name:     "toyload",
	Help:     "a test's throw-away workload",
	Agent:    func(context.Context, workload.Params, workload.Barrier) ([]sample.Metric, error) { return nil, nil },
	Needs:    workload.Needs{Network: true},
	Estimate: func(workload.Params) time.Duration { return 3 * time.Second },
}

// TestOnePlace registers the throw-away platform and workload in fresh
// registries, one line each, and checks that every part of isobench
// that reads traits picks them up.
func TestOnePlace(t *testing.T) {
	plats := platform.NewRegistry(toyFactory)  // the registry line
	works, err := workload.NewRegistry(toyDef) // the registry line
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("conformance leftover check", func(t *testing.T) {
		state := t.TempDir()
		f, o, err := plats.Parse("toy")
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.New(ctx, o, platform.Env{StateDir: state})
		if err != nil {
			t.Fatal(err)
		}
		before, err := localtest.Leftovers(ctx, f, state)
		if err != nil || len(before) != 0 {
			t.Fatalf("before: %v %v", before, err)
		}
		in, err := p.Create(ctx, platform.Spec{Name: "r1abcdef-1", Labels: map[string]string{"isobench.run": "abcdef"}})
		if err != nil {
			t.Fatal(err)
		}
		during, _ := localtest.Leftovers(ctx, f, state)
		if want := []string{"toy-box " + filepath.Join(state, in.ID())}; !slices.Equal(during, want) {
			t.Errorf("with an instance: %q, want %q", during, want)
		}
		in.Close(ctx)
		if after, _ := localtest.Leftovers(ctx, f, state); len(after) != 0 {
			t.Errorf("the closed instance left %q", after)
		}
	})

	t.Run("sweep", func(t *testing.T) {
		state, records := t.TempDir(), t.TempDir()
		box := filepath.Join(state, "toy-abcdef-1")
		os.Mkdir(box, 0o700)
		// the run of token abcdef died
		c := exec.Command("true")
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
		pid := strconv.Itoa(c.Process.Pid)
		os.WriteFile(filepath.Join(records, pid+".json"), []byte(`{"pid":`+pid+`,"start":1,"token":"abcdef","state_dir":"`+state+`"}`), 0o644)
		var out strings.Builder
		if err := cleanup.Clean(ctx, &out, cleanup.Options{Platforms: plats, StateDirs: []string{state}, RecordDir: records, TempDirs: []string{t.TempDir()}}, false); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "removed toy-box "+box+" (its run abcdef died") {
			t.Errorf("clean said:\n%s", out.String())
		}
		if _, err := os.Stat(box); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the dead run's box is still there: %v", err)
		}
	})

	t.Run("estimate", func(t *testing.T) {
		file := study.File{Platforms: []string{"toy"}, Workloads: []string{"toyload"}, Reps: "2"}
		own, err := study.NewPlan(file, works, plats)
		if err != nil {
			t.Fatal(err)
		}
		if len(own.Jobs) != 1 || own.Jobs[0].PerRep != 3*time.Second {
			t.Fatalf("jobs %+v, want toyload at its own 3 s a repetition", own.Jobs)
		}
		// the same plan with the platform's cost unknown (DefaultCost)
		unknown, err := study.NewPlan(file, works, nil)
		if err != nil {
			t.Fatal(err)
		}
		// two repetitions of one instance, 6 s more an instance, and the
		// platform's one-off minute
		if d := own.Estimate - unknown.Estimate; d < time.Minute+2*6*time.Second {
			t.Errorf("estimate %v with the toy's cost, %v without: the factory's Cost is not counted", own.Estimate, unknown.Estimate)
		}
	})

	t.Run("preflight", func(t *testing.T) {
		var plan runner.Plan
		for _, label := range []string{"toy", "toy:network=none"} {
			f, o, err := plats.Parse(label)
			if err != nil {
				t.Fatal(err)
			}
			plan.Targets = append(plan.Targets, runner.Target{Label: label, Name: f.Name, Base: o.Base, Host: f.IsHost})
		}
		def, err := works.Lookup("toyload")
		if err != nil {
			t.Fatal(err)
		}
		params, err := def.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		plan.Jobs = []runner.Job{{Def: def, Params: params}}
		cannot, err := runner.Preflight(plan)
		if err != nil {
			t.Fatal(err)
		}
		if len(cannot) != 1 || cannot[0].Target != "toy:network=none" || cannot[0].Workload != "toyload" {
			t.Errorf("cannot run %v, want toyload on toy:network=none alone (it declares Needs.Network)", cannot)
		}
	})
}
