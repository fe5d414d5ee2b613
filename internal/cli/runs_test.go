package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"github.com/isobench/isobench/internal/runner"
	"maps"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/store"
)

// gateStore writes a store with one run: native and docker, cpu
// events/s, 10 repetitions; docker's median is factor × native's, with
// multiplicative noise of about noise.
func gateStore(t *testing.T, path, host string, factor, noise float64, seed int64) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, err := s.BeginRun(ctx, Study{Platforms: []string{"native", "docker"}, Workloads: []string{"cpu"}, Baseline: "native"}, map[string]string{"kernel": "k-" + host, "hostname": host})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetCommand(ctx, id, "isobench run --platform native --platform docker --workload cpu --db "+filepath.Base(path)); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(seed))
	var in []sample.Sample
	for rep := range 10 {
		for _, p := range []string{"native", "docker"} {
			v := 1000.0
			if p == "docker" {
				v *= factor
			}
			v *= 1 + noise*r.NormFloat64()
			in = append(in, sample.Sample{RunID: id, Platform: p, Workload: "cpu", Params: "threads=1", Instances: 1, Instance: sample.AggregateInstance,
				Rep: rep, Metric: "events_per_sec", Unit: "events/s", Better: sample.Higher, Value: v, Start: time.Unix(1e9, 0)})
		}
	}
	if err := s.Add(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRun(ctx, id, store.StatusDone, nil); err != nil {
		t.Fatal(err)
	}
}

// The CI gate fails (exit 3) only for a change outside the noise and
// beyond the threshold in the worse direction.
func TestCompareFailIfSlower(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.db")
	gateStore(t, a, "h", 1.0, 0.005, 1)
	for _, c := range []struct {
		name          string
		factor, noise float64
		want          int
	}{
		{"10% slower, quiet", 0.90, 0.005, ExitRegression},
		{"2% slower, quiet: within the threshold", 0.98, 0.005, ExitOK},
		{"20% faster", 1.20, 0.005, ExitOK},
		{"10% slower but in the noise", 0.90, 0.30, ExitOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := filepath.Join(t.TempDir(), "b.db")
			gateStore(t, b, "h", c.factor, c.noise, 2)
			st, out, errb := newTestState(t)
			code := Main(context.Background(), st, []string{"compare", a, b, "--fail-if-slower", "5%"})
			if code != c.want {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.want, out.String(), errb.String())
			}
			switch code {
			case ExitRegression:
				if !strings.Contains(errb.String(), "docker") || !strings.Contains(errb.String(), "slower by more than 5%") {
					t.Errorf("the failure does not name the cell: %s", errb.String())
				}
			case ExitOK:
				if !strings.Contains(out.String(), "gate passed") {
					t.Errorf("no 'gate passed': %s", out.String())
				}
			}
		})
	}
	st, _, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"compare", a, a, "--fail-if-slower", "lots"}); code != ExitUsage {
		t.Fatalf("bad threshold: exit %d %s", code, errb.String())
	}
}

// merge joins stores from two machines; runs lists the result with hosts
// and command lines; export writes one run with its environment, plan and
// every sample.
func TestMergeRunsExport(t *testing.T) {
	dir := t.TempDir()
	a, b, out := filepath.Join(dir, "hostA.db"), filepath.Join(dir, "hostB.db"), filepath.Join(dir, "all.db")
	gateStore(t, a, "hostA", 1, 0.01, 1)
	gateStore(t, a, "hostA", 0.9, 0.01, 2)
	gateStore(t, b, "hostB", 0.8, 0.01, 3)
	setHost(t, a, "hostA")
	setHost(t, b, "hostB")
	st, o, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"merge", out, a, b}); code != 0 {
		t.Fatalf("merge: exit %d %s", code, errb.String())
	}
	if !strings.Contains(o.String(), "3 runs merged into") {
		t.Fatalf("merge said %s", o.String())
	}
	st, o, errb = newTestState(t)
	if code := Main(context.Background(), st, []string{"runs", "--db", out}); code != 0 {
		t.Fatalf("runs: exit %d %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(o.String()), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "run") {
		t.Fatalf("runs:\n%s", o.String())
	}
	for i, host := range []string{"hostA", "hostA", "hostB"} {
		f := strings.Fields(lines[i+1])
		if f[0] != strconvItoa(i+1) || !slices.Contains(f, "done") || !slices.Contains(f, "20") || !strings.Contains(lines[i+1], "isobench run --platform native") {
			t.Errorf("runs line %d: %q", i+1, lines[i+1])
		}
		if !strings.Contains(o.String(), "run "+strconvItoa(i+1)+" was merged from ") {
			t.Errorf("run %d's origin is not shown", i+1)
		}
		if !strings.Contains(lines[i+1], host) {
			t.Errorf("runs line %d lacks host %s: %q", i+1, host, lines[i+1])
		}
	}
	st, o, errb = newTestState(t)
	if code := Main(context.Background(), st, []string{"export", "--db", out, "--run", "3"}); code != 0 {
		t.Fatalf("export: exit %d %s", code, errb.String())
	}
	var doc struct {
		Run struct {
			ID      int64  `json:"id"`
			Status  string `json:"status"`
			Command string `json:"command"`
			Origin  string `json:"origin"`
		} `json:"run"`
		Environment map[string]string `json:"environment"`
		Plan        Study             `json:"plan"`
		Samples     []map[string]any  `json:"samples"`
	}
	if err := json.Unmarshal(o.Bytes(), &doc); err != nil {
		t.Fatalf("export is not JSON: %v\n%s", err, o.String())
	}
	if doc.Run.ID != 3 || doc.Run.Status != "done" || !strings.HasSuffix(doc.Run.Origin, "hostB.db#1") || doc.Environment["kernel"] != "k-hostB" ||
		!slices.Equal(doc.Plan.Platforms, []string{"native", "docker"}) || len(doc.Samples) != 20 || doc.Samples[0]["start"] == nil {
		t.Fatalf("export: %+v", doc)
	}
	// An existing file that is not a store is never overwritten.
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("keep me"), 0o644)
	st, _, errb = newTestState(t)
	if code := Main(context.Background(), st, []string{"merge", notes, a}); code != ExitUsage {
		t.Fatalf("merge into a text file: exit %d %s", code, errb.String())
	}
	if b, _ := os.ReadFile(notes); string(b) != "keep me" {
		t.Fatalf("the text file was changed: %q", b)
	}
}

// setHost makes a store's runs look written on host.
func setHost(t *testing.T, path, host string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE runs SET hostname = ?`, host); err != nil {
		t.Fatal(err)
	}
}

func strconvItoa(i int) string { return strconv.Itoa(i) }

// With no native platform the first platform given is the baseline, and
// the plan names what cannot run before anything starts.
func TestPlanBaselineAndPreflight(t *testing.T) {
	st, _, _ := newTestState(t)
	study := Study{Platforms: []string{"docker", "podman"}, Workloads: []string{"cpu"}}
	if _, _, err := st.plan(&study); err != nil {
		t.Fatal(err)
	}
	if study.Baseline != "docker" {
		t.Fatalf("baseline %q, want docker (the first platform)", study.Baseline)
	}
	study = Study{Platforms: []string{"native", "runc:network=none", "gvisor"}, Workloads: []string{"tcp-rr", "cpu", "redis"}}
	plan, _, err := st.plan(&study)
	if err != nil {
		t.Fatal(err)
	}
	cannot, err := runner.Preflight(plan)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cannot {
		got = append(got, c.Target+" "+c.Workload)
	}
	// redis on the default (minimal) image is fine: the service workloads
	// switch to the debian image themselves
	want := []string{"runc:network=none tcp-rr", "runc:network=none redis"}
	if !slices.Equal(got, want) {
		t.Fatalf("cannot run %q, want %q", got, want)
	}
	study = Study{Platforms: []string{"native", "gvisor"}, Workloads: []string{"redis"}, Image: "spark"}
	if plan, _, err = st.plan(&study); err != nil {
		t.Fatal(err)
	}
	if cannot, err = runner.Preflight(plan); err != nil || len(cannot) != 1 || cannot[0].Target != "gvisor" || !strings.Contains(cannot[0].Why, "has no server") {
		t.Fatalf("redis on the spark image: cannot run %v, %v; want gvisor left out", cannot, err)
	}
	study = Study{Platforms: []string{"runc:network=none"}, Workloads: []string{"tcp-rr"}}
	plan, _, err = st.plan(&study)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Preflight(plan); err == nil || !strings.Contains(err.Error(), "network=none") {
		t.Fatalf("a plan where nothing can run: %v", err)
	}
	// The run itself stops before anything starts, with one line.
	st, _, errb := newTestState(t)
	db := filepath.Join(t.TempDir(), "p.db")
	if code := Main(context.Background(), st, []string{"run", "--platform", "runc:network=none", "--workload", "tcp-rr", "--db", db}); code != ExitUsage {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(db); err == nil {
		t.Fatal("the refused run created its store")
	}
}

// sampleKeys is the set of (platform, workload, params, instances,
// instance, rep, warmup, metric) of a store's samples, and how many
// samples there are.
func sampleKeys(t *testing.T, db string) (map[string]bool, int) {
	t.Helper()
	s, err := store.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ss, err := s.Samples(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, x := range ss {
		keys[strings.Join([]string{x.Platform, x.Options, x.Workload, x.Params, strconvItoa(x.Instances), itoaN(x.Instance), itoaN(x.Rep), boolS(x.Warmup), x.Metric}, "|")] = true
	}
	return keys, len(ss)
}

func itoaN(i int) string { return strconv.Itoa(i) }
func boolS(b bool) string {
	if b {
		return "warmup"
	}
	return "measured"
}

// A run interrupted with SIGINT after some repetitions and resumed with
// --resume ends with the same set of (cell, repetition) samples as a run
// that was never interrupted, none twice.
func TestResumeAfterInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary for a few seconds")
	}
	dir := t.TempDir()
	args := []string{"run", "--platform", "native", "--workload", "cpu:duration=150ms,max-prime=500", "--workload", "startup",
		"--instances", "1,2", "--reps", "5", "--warmup", "1", "--quiet"}
	env := append(os.Environ(), "ISOBENCH_STATE="+filepath.Join(dir, "state"), "TMPDIR="+dir)

	full := filepath.Join(dir, "full.db")
	cmd := exec.Command(agentBin, append(args, "--db", full)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	want, n := sampleKeys(t, full)
	if len(want) != n || n == 0 {
		t.Fatalf("uninterrupted run: %d samples, %d distinct", n, len(want))
	}

	db := filepath.Join(dir, "int.db")
	cmd = exec.Command(agentBin, append(args, "--db", db)...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// interrupt once the first cell's repetitions are partly stored
	waitFor(t, 2*time.Minute, "stored repetitions", func() bool {
		return count(t, db, `SELECT COUNT(DISTINCT rep || '-' || warmup || '-' || instances) FROM samples`) >= 3
	})
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("interrupted run: %v\n%s", err, stderr.String())
	}
	part, _ := sampleKeys(t, db)
	if len(part) == 0 || len(part) >= len(want) {
		t.Fatalf("the interrupted run kept %d of %d samples: not a partial run", len(part), len(want))
	}
	// the plan comes from the store: matrix flags are refused
	st, _, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"run", "--resume", "1", "--db", db, "--reps", "3"}); code != ExitUsage {
		t.Fatalf("--resume with --reps: exit %d %s", code, errb.String())
	}
	cmd = exec.Command(agentBin, "run", "--resume", "1", "--db", db, "--quiet")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "resuming run 1: ") || !strings.Contains(string(out), "run 1 (done)") {
		t.Fatalf("resume said:\n%s", out)
	}
	got, n := sampleKeys(t, db)
	if n != len(got) {
		t.Fatalf("resumed store has %d samples but %d distinct: a repetition ran twice", n, len(got))
	}
	for k := range want {
		if !got[k] {
			t.Errorf("missing after resume: %s", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("not in the uninterrupted run: %s", k)
		}
	}
	s, err := store.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, _ := s.Runs(context.Background())
	if len(runs) != 1 || runs[0].Status != store.StatusDone || !strings.Contains(runs[0].Command, "isobench run --platform native") {
		t.Fatalf("runs after resume: %+v", runs)
	}
	// a finished run has nothing to resume
	st, _, errb = newTestState(t)
	if code := Main(context.Background(), st, []string{"run", "--resume", "1", "--db", db}); code != ExitUsage || !strings.Contains(errb.String(), "nothing to resume") {
		t.Fatalf("resume of a finished run: exit %d %s", code, errb.String())
	}
}

// TestHostTrait: what is the host itself is the platform's trait
// (platform.Factory.IsHost), not its name: the plain host platform is the
// default baseline wherever it is given, with options it is not, and a
// host target is never refused by the preflight.
func TestHostTrait(t *testing.T) {
	st, _, _ := newTestState(t)
	for _, c := range []struct {
		platforms []string
		want      string
	}{
		{[]string{"docker", "native"}, "native"},
		{[]string{"docker", "native:cpus=1"}, "docker"},
	} {
		study := Study{Platforms: c.platforms, Workloads: []string{"cpu"}}
		if _, _, err := st.plan(&study); err != nil {
			t.Fatal(err)
		}
		if study.Baseline != c.want {
			t.Errorf("%v: baseline %q, want %q", c.platforms, study.Baseline, c.want)
		}
	}
	study := Study{Platforms: []string{"native", "runc"}, Workloads: []string{"tcp-rr"}}
	plan, _, err := st.plan(&study)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Targets[0].Host || plan.Targets[1].Host {
		t.Fatalf("Host: native %v, runc %v", plan.Targets[0].Host, plan.Targets[1].Host)
	}
	// a host target without a network is still the host: not refused
	plan.Targets[0].Name, plan.Targets[0].Label = "myhost", "myhost"
	plan.Targets[0].Base.Network = "none"
	plan.Targets[1].Base.Network = "none"
	cannot, err := runner.Preflight(plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(cannot) != 1 || cannot[0].Target != "runc" {
		t.Errorf("cannot run %v, want runc alone", cannot)
	}
}

// TestPlatformImage (issue 27, defect 15): a platform that boots an init
// system (lxc:init=system, lxd:init=system, nspawn:boot=true) gets the
// image it needs when the run names none, beside platforms on the run's
// own image; a run whose --image cannot boot it is refused before
// anything starts, in one line.
func TestPlatformImage(t *testing.T) {
	st, _, _ := newTestState(t)
	study := Study{Platforms: []string{"native", "lxc:init=system", "nspawn:boot=true", "lxc"}, Workloads: []string{"cpu"}}
	plan, _, err := st.plan(&study)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tg := range plan.Targets {
		got[tg.Label] = tg.Image
	}
	want := map[string]string{"native": "", "lxc:init=system": "debian", "nspawn:boot=true": "debian", "lxc": ""}
	if !maps.Equal(got, want) || plan.Image != "minimal" {
		t.Fatalf("images %v (plan %s), want %v (plan minimal)", got, plan.Image, want)
	}
	study = Study{Platforms: []string{"lxc:init=system"}, Workloads: []string{"cpu"}, Image: "debian"}
	if plan, _, err = st.plan(&study); err != nil || plan.Targets[0].Image != "" {
		t.Fatalf("--image debian: %v, target image %q", err, plan.Targets[0].Image)
	}
	study = Study{Platforms: []string{"lxd:init=system"}, Workloads: []string{"cpu"}, Image: "minimal"}
	_, _, err = st.plan(&study)
	if err == nil || !strings.Contains(err.Error(), "lxd:init=system boots an init system, which the minimal image has not: it needs --image debian") {
		t.Fatalf("--image minimal with a system container: %v", err)
	}
	// docker's image= option gives its instances that image (the plan's
	// --image default once overrode it, so the option did nothing)
	study = Study{Platforms: []string{"native", "docker:image=tools", "docker:image=minimal,cpus=1"}, Workloads: []string{"cpu"}}
	if plan, _, err = st.plan(&study); err != nil || plan.Targets[1].Image != "tools" || plan.Targets[2].Image != "" {
		t.Fatalf("docker:image=tools: %v, targets %+v", err, plan.Targets)
	}
	for args, want := range map[string]string{
		"docker:image=nosuch":        "docker:image=nosuch: image=nosuch:",
		"docker:image=tools minimal": "docker:image=tools asks for the tools image and --image for minimal: give one of them",
	} {
		f := strings.Fields(args)
		study = Study{Platforms: f[:1], Workloads: []string{"cpu"}}
		if len(f) > 1 {
			study.Image = f[1]
		}
		if _, _, err = st.plan(&study); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}
