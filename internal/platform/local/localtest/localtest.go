// Package localtest holds the tests shared by the platforms built on
// platform/local (runc, crun, gvisor, systemd-nspawn, LXC): the conformance
// suite and the startup timing run with local.TestStateDir, and the
// rejection of bad options. It is imported by _test files only.
package localtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
)

// Leftovers lists what the factory's instances left on this host with
// stateDir searched, one "KIND NAME" a thing: what its Sweep lists (the
// description 'isobench clean' uses), and the bridge leases of its
// instances (which cleanup releases itself).
func Leftovers(ctx context.Context, f platform.Factory, stateDir string) ([]string, error) {
	if f.Sweep == nil {
		return nil, fmt.Errorf("%s: its factory has no Sweep", f.Name)
	}
	found, err := f.Sweep(ctx, platform.SweepEnv{StateDirs: []string{stateDir}})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range found {
		out = append(out, l.String())
	}
	for _, l := range hostnet.Default(stateDir).Leases() {
		for _, in := range found {
			if in.Owner == "" && in.Name == l.Owner {
				out = append(out, "lease "+l.Addr.String()+" "+l.Owner)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// Conformance runs the shared platform suite against the factory's
// platform (options: just its name), in local.TestStateDir, checking
// leftovers (Leftovers: what the factory's Sweep lists) after every
// instance. opts.Leftovers is set here: it lists what names an instance
// this suite created, since other packages' tests share the state
// directory (and the bridge) and their instances come and go meanwhile.
func Conformance(t *testing.T, f platform.Factory, opts conformance.Opts) {
	agent := conformance.BuildAgent(t)
	state := local.TestStateDir()
	rec := &Recorder{}
	opts.Leftovers = func(ctx context.Context) ([]string, error) {
		all, err := Leftovers(ctx, f, state)
		return rec.Mine(all), err
	}
	conformance.Run(t, func(t *testing.T) platform.Platform {
		o, err := platform.ParseOptions(f.Name, f.Extra...)
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.New(t.Context(), o, platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		rec.Platform = p
		return rec
	}, opts)
	t.Run("private_dirs", func(t *testing.T) { PrivateDirs(t, rec, state) })
}

// PrivateDirs creates an instance with storage=volume on p and checks that
// its directory and volume, and the state directory's parts they live in,
// are private: mode 0700 and owned by this user (no 0777 or 1777 volume).
func PrivateDirs(t *testing.T, p platform.Platform, state string) {
	if err := p.Available(t.Context()); err != nil {
		t.Skip(err)
	}
	inst, err := p.Create(t.Context(), platform.Spec{Image: "minimal", Storage: platform.StorageVolume})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.WithoutCancel(t.Context()))
	dir := local.InstanceDir(state, inst.ID())
	for _, d := range []string{filepath.Dir(dir), dir, filepath.Join(dir, "volume"), filepath.Join(state, "rootfs")} {
		st, err := os.Lstat(d)
		if err != nil {
			t.Errorf("%s: %v", d, err)
			continue
		}
		sys, _ := st.Sys().(*syscall.Stat_t)
		if !st.IsDir() || st.Mode().Perm() != 0o700 || st.Mode()&os.ModeSticky != 0 || sys == nil || int(sys.Uid) != os.Geteuid() {
			t.Errorf("%s is %v (uid %v), want a private directory (0700, uid %d)", d, st.Mode(), sys.Uid, os.Geteuid())
		}
	}
	// the volume is writable inside, though private on the host
	if err := inst.Exec(t.Context(), []string{"sh", "-c", `echo ok > "$ISOBENCH_SCRATCH/private-probe"`}, platform.ExecIO{}); err != nil {
		t.Errorf("writing into the private volume: %v", err)
	}
}

// Startup times create → agent hello → exit three times on the factory's
// platform with default options and logs it (with the phases the platform
// reports), for the report; it checks the agent's output and exit status.
func Startup(t *testing.T, f platform.Factory, agent string) {
	p, err := f.New(t.Context(), platform.Options{}, platform.Env{AgentBinary: agent, StateDir: local.TestStateDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, f.Name, err)
	}
	prep, ok := p.(platform.Preparer)
	if !ok {
		t.Fatalf("%s does not implement platform.Preparer", f.Name)
	}
	if err := prep.Prepare(t.Context(), "minimal"); err != nil {
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
		t.Logf("%s create→hello→exit %v (phases %v), with close %v", f.Name, total, phases, time.Since(start))
	}
}

// NewRejects checks that the factory refuses an unknown network mode and
// an environment without an agent binary or state directory.
func NewRejects(t *testing.T, f platform.Factory) {
	o := platform.Options{Base: platform.Spec{Network: "weird"}}
	if _, err := f.New(t.Context(), o, platform.Env{AgentBinary: "/a", StateDir: t.TempDir()}); err == nil {
		t.Error("unknown network accepted")
	}
	if _, err := f.New(t.Context(), platform.Options{}, platform.Env{}); err == nil {
		t.Error("missing agent binary accepted")
	}
}

// Recorder wraps a platform and records the ID of every instance it
// creates (the instances themselves are returned unwrapped, so their
// optional interfaces stay visible).
type Recorder struct {
	platform.Platform
	mu  sync.Mutex
	ids []string
}

// Create implements platform.Platform.
func (r *Recorder) Create(ctx context.Context, s platform.Spec) (platform.Instance, error) {
	in, err := r.Platform.Create(ctx, s)
	if err == nil {
		r.mu.Lock()
		r.ids = append(r.ids, in.ID())
		r.mu.Unlock()
	}
	return in, err
}

// Prepare implements platform.Preparer for a platform that does.
func (r *Recorder) Prepare(ctx context.Context, profile string) error {
	if p, ok := r.Platform.(platform.Preparer); ok {
		return p.Prepare(ctx, profile)
	}
	return nil
}

// Mine keeps the leftovers (from Leftovers) that name an instance r
// created.
func (r *Recorder) Mine(leftovers []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range leftovers {
		for _, id := range r.ids {
			if strings.Contains(l, id) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// CheckLeftovers fails t for every leftover (from Leftovers) that names
// an instance r created. Other tests sharing the state
// directory may have their own instances in the list at the same time;
// those are not this test's business.
func (r *Recorder) CheckLeftovers(t *testing.T, leftovers []string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ids) == 0 {
		t.Error("no instance was created")
	}
	for _, l := range leftovers {
		for _, id := range r.ids {
			if strings.Contains(l, id) {
				t.Errorf("left behind: %s", l)
			}
		}
	}
}
