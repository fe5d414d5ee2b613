package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/builtin"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/runner"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/store"
	fake "github.com/isobench/isobench/internal/testkit/fakeplatform"
	"github.com/isobench/isobench/internal/workload"
)

type spreadSink struct {
	mu      sync.Mutex
	samples []sample.Sample
}

func (m *spreadSink) Add(_ context.Context, s []sample.Sample) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples = append(m.samples, s...)
	return nil
}

// spreadDef is a tiny agent workload for the fake platform.
func spreadDef() workload.Def {
	return workload.Def{
		Name:   "tiny",
		Params: []workload.Param{{Name: "duration", Kind: workload.Duration, Default: "10ms"}},
		Agent: func(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
			if err := ready(); err != nil {
				return nil, err
			}
			return []sample.Metric{{Name: "ops", Value: 1, Unit: "ops/s", Better: sample.Higher, Agg: sample.Sum}}, nil
		},
	}
}

// spreadFixture is a plan of two platforms (a, b) over instance counts
// 1, 2, 3, and a spread run over two hosts whose platforms are fakes.
type spreadFixture struct {
	plan  runner.Plan
	sr    *spreadRun
	fakes map[string]*fake.Platform // "a@h1"...
	dead  map[string]*atomic.Bool   // host -> lost
	log   bytes.Buffer
}

func newSpreadFixture(t *testing.T, reps int) *spreadFixture {
	t.Helper()
	reg, err := workload.NewRegistry(spreadDef())
	if err != nil {
		t.Fatal(err)
	}
	def, _ := reg.Lookup("tiny")
	params, err := def.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &spreadFixture{fakes: map[string]*fake.Platform{}, dead: map[string]*atomic.Bool{}}
	f.plan = runner.Plan{
		Targets:   []runner.Target{{Label: "a", Name: "a"}, {Label: "b", Name: "b"}},
		Jobs:      []runner.Job{{Def: def, Params: params}},
		Instances: []int{1, 2, 3},
		Reps:      reps,
	}
	lostBy := map[platform.Platform]string{}
	f.sr = &spreadRun{runID: 1, stderr: &f.log}
	for _, h := range []string{"h1", "h2"} {
		f.dead[h] = &atomic.Bool{}
		sh := &spreadHost{name: h, fp: map[string]string{"cpu_model": "same", "cores": "2", "kernel": "6.1"}}
		for _, pt := range f.plan.Targets {
			fp := &fake.Platform{Label: pt.Label + "@" + h, Workloads: reg}
			f.fakes[fp.Label] = fp
			lostBy[fp] = h
			tt := pt
			tt.Label, tt.Platform, tt.Tags = fp.Label, fp, map[string]string{"host": h}
			sh.targets = append(sh.targets, tt)
		}
		f.sr.hosts = append(f.sr.hosts, sh)
	}
	f.sr.lost = func(p platform.Platform) error {
		if h := lostBy[p]; f.dead[h].Load() {
			return fmt.Errorf("remote host %s: connection lost: EOF", h)
		}
		return nil
	}
	return f
}

// byCell groups measured aggregate samples: "platform ×n" -> host -> reps.
func byCell(ss []sample.Sample) map[string]map[string][]int {
	out := map[string]map[string][]int{}
	for _, s := range ss {
		if s.Instance != sample.AggregateInstance || s.Metric != "ops" || s.Warmup {
			continue
		}
		k := fmt.Sprintf("%s ×%d", s.Platform, s.Instances)
		if out[k] == nil {
			out[k] = map[string][]int{}
		}
		out[k][s.Tags["host"]] = append(out[k][s.Tags["host"]], s.Rep)
	}
	return out
}

// TestSpreadEveryCellOnce: each cell (all its platforms) runs on exactly
// one host, every repetition once, each sample tagged with its host, and
// both hosts get cells.
func TestSpreadEveryCellOnce(t *testing.T) {
	f := newSpreadFixture(t, 3)
	sink := &spreadSink{}
	r := &runner.Runner{Sink: sink, RunID: 1}
	var progress []runner.Progress
	r.Progress = func(p runner.Progress) { progress = append(progress, p) } // serialised by run
	if err := f.sr.run(t.Context(), r, f.plan); err != nil {
		t.Fatalf("spread run: %v\n%s", err, f.log.String())
	}
	cells := byCell(sink.samples)
	used := map[string]bool{}
	for _, n := range []int{1, 2, 3} {
		var hostOfCell string
		for _, p := range []string{"a", "b"} {
			k := fmt.Sprintf("%s ×%d", p, n)
			if len(cells[k]) != 1 {
				t.Errorf("%s ran on %d hosts, want 1: %v", k, len(cells[k]), cells[k])
				continue
			}
			for h, reps := range cells[k] {
				slices.Sort(reps)
				if !slices.Equal(reps, []int{0, 1, 2}) {
					t.Errorf("%s on %s: reps %v, want each of 0 1 2 once", k, h, reps)
				}
				if hostOfCell != "" && hostOfCell != h {
					t.Errorf("cell ×%d split across hosts %s and %s", n, hostOfCell, h)
				}
				hostOfCell = h
				used[h] = true
			}
		}
	}
	if !used["h1"] || !used["h2"] {
		t.Errorf("hosts used: %v, want both", used)
	}
	for _, s := range sink.samples {
		if s.Tags["host"] != "h1" && s.Tags["host"] != "h2" {
			t.Fatalf("sample without its host: %+v", s)
		}
	}
	for _, fp := range f.fakes {
		if len(fp.Open()) != 0 {
			t.Errorf("%s left instances open: %v", fp.Label, fp.Open())
		}
	}
	// the longest cell (×3) starts first, on the first host
	if len(progress) == 0 || progress[0].Cells != 3 {
		t.Fatalf("progress: %+v", progress)
	}
	last := progress[len(progress)-1]
	if last.Total != 3*3*2 || last.Done > last.Total {
		t.Errorf("last progress %d/%d, want out of 18", last.Done, last.Total)
	}
	var out bytes.Buffer
	if err := spreadHosts(&out, sink.samples); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3} {
		h := ""
		for hh := range cells[fmt.Sprintf("a ×%d", n)] {
			h = hh
		}
		if want := fmt.Sprintf("tiny:duration=10ms ×%d  %s\n", n, h); !strings.Contains(out.String(), want) {
			t.Errorf("spreadHosts output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestSpreadHostLost: a host lost in the middle of its cell takes no more
// cells; that cell is recorded as failed on its platforms with the reason,
// its finished repetitions are kept (tagged with it) and not run again
// elsewhere, and the other host runs every other cell in full.
func TestSpreadHostLost(t *testing.T) {
	f := newSpreadFixture(t, 4)
	lost := errors.New("remote host h2: connection lost: EOF")
	for _, p := range []string{"a@h2", "b@h2"} {
		f.fakes[p].FailCreate = func(nth int) error {
			// h2's first cell is ×2: a's second repetition creates its 3rd instance
			if p == "a@h2" && nth == 3 {
				f.dead["h2"].Store(true)
			}
			if f.dead["h2"].Load() {
				return lost
			}
			return nil
		}
	}
	sink := &spreadSink{}
	r := &runner.Runner{Sink: sink, RunID: 1}
	err := f.sr.run(t.Context(), r, f.plan)
	var cf *runner.CellsFailed
	if !errors.As(err, &cf) || !strings.Contains(err.Error(), "host h2 was lost") {
		t.Fatalf("run error %v, want failed cells and the lost host", err)
	}
	for _, fl := range cf.Failures {
		if !strings.HasSuffix(fl.Target, "@h2") || fl.Cell.Instances != 2 || !errors.Is(fl.Err, lost) {
			t.Errorf("failure %v: want only ×2 on h2's platforms, for the lost connection", fl)
		}
	}
	if len(cf.Failures) != 2 {
		t.Errorf("%d failures, want a@h2 and b@h2: %v", len(cf.Failures), cf.Failures)
	}
	if !strings.Contains(f.log.String(), "host h2 lost during tiny ×2") {
		t.Errorf("no line naming the lost host and its cell: %q", f.log.String())
	}
	cells := byCell(sink.samples)
	for _, n := range []int{1, 3} {
		for _, p := range []string{"a", "b"} {
			k := fmt.Sprintf("%s ×%d", p, n)
			if reps := cells[k]["h1"]; len(cells[k]) != 1 || len(reps) != 4 {
				t.Errorf("%s: %v, want 4 repetitions on h1", k, cells[k])
			}
		}
	}
	kept := 0
	for _, p := range []string{"a", "b"} {
		k := fmt.Sprintf("%s ×2", p)
		if len(cells[k]["h1"]) > 0 {
			t.Errorf("%s was moved to h1: %v", k, cells[k])
		}
		kept += len(cells[k]["h2"])
	}
	if kept == 0 {
		t.Errorf("h2's finished repetitions of ×2 are gone: %v", cells)
	}
}

// TestSpreadAllHostsLost: when no host is left, the cells not run are
// named with how to run them.
func TestSpreadAllHostsLost(t *testing.T) {
	f := newSpreadFixture(t, 2)
	for _, fp := range f.fakes {
		h := fp.Label[strings.Index(fp.Label, "@")+1:]
		fp.FailCreate = func(int) error {
			f.dead[h].Store(true)
			return errors.New("connection lost")
		}
	}
	err := f.sr.run(t.Context(), &runner.Runner{Sink: &spreadSink{}, RunID: 1}, f.plan)
	if err == nil || !strings.Contains(err.Error(), "1 cell(s) not run, every host being lost: tiny ×1 (isobench run --resume 1 --trust-hosts runs them)") {
		t.Fatalf("run error: %v", err)
	}
}

func TestSpreadHostsDiffer(t *testing.T) {
	fp := func(cpu, cores, kernel string) map[string]string {
		return map[string]string{"cpu_model": cpu, "cores": cores, "kernel": kernel, "hostname": cpu}
	}
	same := []*spreadHost{{name: "local", fp: fp("Xeon", "2", "6.1")}, {name: "ssh://a", fp: fp("Xeon", "2", "6.1")}}
	if w := hostsDiffer(same); w != "" {
		t.Errorf("alike hosts warned: %s", w)
	}
	for _, other := range []map[string]string{fp("EPYC", "2", "6.1"), fp("Xeon", "4", "6.1"), fp("Xeon", "2", "5.10")} {
		hs := []*spreadHost{same[0], {name: "ssh://b", fp: other}}
		w := hostsDiffer(hs)
		if w == "" || strings.Contains(w, "\n") || !strings.Contains(w, "ssh://b: "+other["cpu_model"]+", "+other["cores"]+" cores, kernel "+other["kernel"]) {
			t.Errorf("hosts %v: warning %q", other, w)
		}
	}
}

// TestSpreadStudy: spread: true keeps the hosts (the run spreads over
// them, --resume too); without hosts, with a platform's own host= or with
// a host-side network client it is refused.
func TestSpreadStudy(t *testing.T) {
	st, err := decodeStudy([]byte("platforms: [native, docker]\nworkloads: [cpu]\nhosts: [local, \"ssh://root@10.0.0.2\"]\nspread: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := expandHosts(&st); err != nil {
		t.Fatal(err)
	}
	if !st.Spread || !slices.Equal(st.Platforms, []string{"native", "docker"}) || !slices.Equal(st.Hosts, []string{"local", "ssh://root@10.0.0.2"}) {
		t.Errorf("spread study after expandHosts: %+v", st)
	}
	for _, bad := range []Study{
		{Platforms: []string{"native"}, Spread: true},
		{Platforms: []string{"native:host=ssh://root@c"}, Hosts: []string{"ssh://root@a"}, Spread: true},
	} {
		if err := expandHosts(&bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	s := &State{Platforms: builtin.Platforms(), Workloads: builtin.Workloads()}
	study := Study{Platforms: []string{"native"}, Hosts: []string{"local", "ssh://root@192.0.2.1"}, Spread: true, Workloads: []string{"tcp-rr"}}
	if _, _, err := s.plan(&study); err == nil || !strings.Contains(err.Error(), "client=host") || !strings.Contains(err.Error(), "ssh://root@192.0.2.1") {
		t.Errorf("tcp-rr (client=host) spread to a remote host: %v", err)
	}
	study = Study{Platforms: []string{"native"}, Hosts: []string{"local", "ssh://root@192.0.2.1"}, Spread: true, Workloads: []string{"cpu"}}
	plan, _, err := s.plan(&study)
	if err != nil || len(plan.Targets) != 1 || plan.Targets[0].Label != "native" {
		t.Errorf("spread plan: %+v, %v", plan.Targets, err)
	}
}

// TestSpreadReport: 'isobench report' of a spread run says which host ran
// each cell, from the samples' host tags; a run that was not spread does
// not.
func TestSpreadReport(t *testing.T) {
	ctx := t.Context()
	for _, spread := range []bool{true, false} {
		db := filepath.Join(t.TempDir(), "s.db")
		s, err := store.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		id, err := s.BeginRun(ctx, Study{Platforms: []string{"native"}, Workloads: []string{"cpu"}, Hosts: []string{"local", "ssh://root@a"}, Spread: spread}, map[string]string{"kernel": "k"})
		if err != nil {
			t.Fatal(err)
		}
		var in []sample.Sample
		for _, c := range []struct {
			n    int
			host string
		}{{1, "ssh://root@a"}, {2, "local"}} {
			for rep := range 3 {
				in = append(in, sample.Sample{RunID: id, Platform: "native", Workload: "cpu", Params: "threads=1", Instances: c.n, Instance: sample.AggregateInstance,
					Rep: rep, Metric: "events_per_sec", Unit: "events/s", Better: sample.Higher, Value: 1000 + float64(rep), Start: time.Unix(1e9, 0), Tags: map[string]string{"host": c.host}})
			}
		}
		if err := s.Add(ctx, in); err != nil {
			t.Fatal(err)
		}
		if err := s.EndRun(ctx, id, store.StatusDone, nil); err != nil {
			t.Fatal(err)
		}
		s.Close()
		st, out, errb := newTestState(t)
		if code := Main(ctx, st, []string{"report", "--db", db}); code != 0 {
			t.Fatalf("report exited %d: %s", code, errb.String())
		}
		has := strings.Contains(out.String(), "which host ran each cell (spread run):\n  cpu:threads=1 ×1  ssh://root@a\n  cpu:threads=1 ×2  local\n")
		if has != spread {
			t.Errorf("spread %v: report says which host ran each cell: %v\n%s", spread, has, out.String())
		}
	}
}
