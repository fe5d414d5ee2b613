package study

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/builtin"
	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/spec"
)

func TestEveryBuiltInStudyParsesAndPlans(t *testing.T) {
	// the list is the embedded files, whatever their number: a study is
	// added by adding its file
	ids := IDs()
	es, err := files.ReadDir("files")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range es {
		want = append(want, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	if len(ids) == 0 || strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("built-in studies %v, want the embedded files' %v", ids, want)
	}
	reg := builtin.Workloads()
	pl := builtin.Platforms()
	for _, id := range ids {
		f, err := Load(id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if f.Study == nil || f.Study.ID != id {
			t.Fatalf("%s: metadata id %+v", id, f.Study)
		}
		for _, p := range f.Platforms {
			if _, _, err := pl.Parse(p); err != nil {
				t.Errorf("%s: platform %s: %v", id, p, err)
			}
		}
		for _, scale := range []string{ScalePaper, ScaleQuick, DefaultScale} {
			g, err := f.AtScale(scale)
			if err != nil {
				t.Fatalf("%s %s: %v", id, scale, err)
			}
			p, err := NewPlan(g, reg, builtin.Platforms())
			if err != nil {
				t.Fatalf("%s %s: %v", id, scale, err)
			}
			inst := len(g.Instances)
			if p.Cells != len(p.Jobs)*inst || p.Runs != p.Cells*len(g.Platforms)*(p.Reps+g.Warmup) || p.Estimate <= 0 {
				t.Errorf("%s %s: plan %d cells, %d runs, %s", id, scale, p.Cells, p.Runs, p.Estimate)
			}
			var b bytes.Buffer
			p.Print(&b)
			if !strings.Contains(b.String(), "study "+id+" ("+scale+" scale)") {
				t.Errorf("%s: plan text %s", id, b.String())
			}
			// Every platform of the paper is either run or said not to be.
			for _, pp := range g.Study.NotRun() {
				if !strings.Contains(b.String(), "not run here: "+pp.Paper) {
					t.Errorf("%s: %s missing from the plan", id, pp.Paper)
				}
			}
			t.Logf("%s %s: %d jobs, %d cells, %d runs, ~%s", id, scale, len(p.Jobs), p.Cells, p.Runs, p.Estimate.Round(time.Second))
		}
	}
}

func TestQuickKeepsEveryCell(t *testing.T) {
	reg := builtin.Workloads()
	for _, id := range IDs() {
		f, _ := Load(id)
		paper, _ := NewPlan(f, reg, builtin.Platforms())
		q, _ := f.AtScale(ScaleQuick)
		quick, err := NewPlan(q, reg, builtin.Platforms())
		if err != nil {
			t.Fatal(err)
		}
		// Every cell, on every platform but those the scale drops (it
		// says why in its note).
		kept := slices.DeleteFunc(slices.Clone(f.Platforms), func(p string) bool { return slices.Contains(f.Study.Scales[ScaleQuick].Drop, p) })
		if quick.Cells != paper.Cells || strings.Join(q.Platforms, " ") != strings.Join(kept, " ") {
			t.Errorf("%s: quick has %d cells on %v, paper %d on %v", id, quick.Cells, q.Platforms, paper.Cells, kept)
		}
		if quick.Estimate >= paper.Estimate {
			t.Errorf("%s: quick (%s) is not shorter than paper (%s)", id, quick.Estimate, paper.Estimate)
		}
		// About ten minutes on two cores: allow a generous margin.
		if quick.Estimate > 20*time.Minute {
			t.Errorf("%s: quick estimate %s", id, quick.Estimate)
		}
	}
}

func TestPaperParameters(t *testing.T) {
	f, _ := Load("000")
	if fmt.Sprint(f.Instances) != "[1 2 4 8 16 32]" || f.Reps != "10" {
		t.Errorf("000: instances %v reps %s", f.Instances, f.Reps)
	}
	cpu, _ := spec.Parse(f.Workloads[0])
	if cpu.Params["threads"] != "8" || cpu.Params["duration"] != "10s" || cpu.Params["max-prime"] != "10000" {
		t.Errorf("000 cpu: %v", cpu)
	}
	f4, _ := Load("004")
	if f4.Reps != "30" {
		t.Errorf("004 reps %s", f4.Reps)
	}
	p, _ := NewPlan(f4, builtin.Workloads(), builtin.Platforms())
	var threads []string
	for _, j := range p.Jobs {
		if j.Workload == "cpu" {
			threads = append(threads, j.Params.Str("threads"))
			if len(j.Sweep) != 1 || j.Sweep[0] != "threads" {
				t.Errorf("004 cpu sweep %v", j.Sweep)
			}
		}
	}
	if strings.Join(threads, ",") != "1,2,4,6,8" {
		t.Errorf("004 thread sweep %v", threads)
	}
	f3, _ := Load("003")
	for _, pl := range f3.Platforms[1:] {
		if !strings.Contains(pl, "cpus=2") || !strings.Contains(pl, "memory=8g") {
			t.Errorf("003 platform %s is not 2 vCPU / 8 GB", pl)
		}
	}
}

func TestScaleRewritesOnlyNamedParams(t *testing.T) {
	f := File{Platforms: []string{"native"}, Workloads: []string{"cpu:threads=1|2,events=10000", "stream"}, Reps: "30",
		Study: &Meta{ID: "x", Title: "t", Scales: map[string]Scale{"quick": {Reps: "3", Params: map[string]string{"cpu": "events=100"}}}}}
	q, err := f.AtScale("quick")
	if err != nil {
		t.Fatal(err)
	}
	if q.Workloads[0] != "cpu:events=100,threads=1|2" || q.Workloads[1] != "stream" || q.Reps != "3" || q.Study.Scale != "quick" {
		t.Fatalf("quick: %v reps %s", q.Workloads, q.Reps)
	}
	if f.Workloads[0] != "cpu:threads=1|2,events=10000" || f.Reps != "30" {
		t.Fatal("AtScale changed its receiver")
	}
	if _, err := f.AtScale("huge"); err == nil || !strings.Contains(err.Error(), "paper, quick") {
		t.Fatalf("unknown scale: %v", err)
	}
}

func TestCheckRejectsInconsistentMetadata(t *testing.T) {
	base := func() File {
		return File{Platforms: []string{"native", "docker"}, Workloads: []string{"cpu"}, Study: &Meta{ID: "x", Title: "t",
			Experiments: []Experiment{{ID: "fig1", Workload: "cpu", Findings: []Finding{{Text: "ok", Better: []string{"native", "docker"}}}}}}}
	}
	if err := base().Check(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*File){
		"finding names an unknown platform": func(f *File) { f.Study.Experiments[0].Findings[0].Better = []string{"lxd", "docker"} },
		"experiment selects nothing":        func(f *File) { f.Study.Experiments[0].Workload = "memory" },
		"platform neither run nor excused":  func(f *File) { f.Study.Platforms = []Platform{{Paper: "jails"}} },
		"label not in platforms":            func(f *File) { f.Study.Platforms = []Platform{{Paper: "x", Label: "lxc"}} },
		"no workload and no reason":         func(f *File) { f.Study.Experiments[0].Workload = "" },
	}
	for name, mut := range bad {
		f := base()
		mut(&f)
		if err := f.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, id := range IDs() {
		f, _ := Load(id)
		q, _ := f.AtScale(ScaleQuick)
		b, err := q.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v\n%s", id, err, b)
		}
		if strings.Join(back.Workloads, ";") != strings.Join(q.Workloads, ";") || back.Reps != q.Reps || back.Study.Scale != ScaleQuick || len(back.Study.Experiments) != len(q.Study.Experiments) {
			t.Errorf("%s: round trip differs", id)
		}
	}
}

func TestScaleSelectorKeys(t *testing.T) {
	f := File{Platforms: []string{"native"}, Workloads: []string{"scp:file=450m", "scp:file=450m,clients=2", "scp:tree=2500/75m", "startup"}, Reps: "20",
		Study: &Meta{ID: "x", Title: "t",
			Experiments: []Experiment{{ID: "t4", Workload: "scp:file=450m"}, {ID: "t4b", Workload: "scp:tree=2500/75m"}, {ID: "t5", Workload: "scp"}},
			Scales: map[string]Scale{"quick": {Reps: "2", Params: map[string]string{
				"scp": "seed=2", "scp:file=450m": "file=8m", "scp:tree=2500/75m": "tree=100/2m"}}}}}
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	q, err := f.AtScale(ScaleQuick)
	if err != nil {
		t.Fatal(err)
	}
	want := "scp:file=8m,seed=2;scp:clients=2,file=8m,seed=2;scp:seed=2,tree=100/2m;startup"
	if got := strings.Join(q.Workloads, ";"); got != want {
		t.Fatalf("quick workloads %s, want %s", got, want)
	}
	if e := q.Study.Experiments; e[0].Workload != "scp:file=8m" || e[1].Workload != "scp:tree=100/2m" || e[2].Workload != "scp" {
		t.Fatalf("quick experiments %+v", e)
	}
	if f.Study.Experiments[0].Workload != "scp:file=450m" {
		t.Fatal("AtScale changed its receiver's experiments")
	}
	// Every experiment still selects an entry of the scaled file.
	if err := q.Check(); err != nil {
		t.Fatal(err)
	}
	f.Study.Scales["quick"].Params["scp:file=1g"] = "file=8m"
	if err := f.Check(); err == nil || !strings.Contains(err.Error(), "selects no entry") {
		t.Fatalf("a scale key selecting nothing: %v", err)
	}
}

// The experiments that waited for the service and transfer workloads run
// now: the quick plan of each study lists them, and none stays pending
// (Hadoop runs as mapreduce).
func TestServiceExperimentsAreRunnable(t *testing.T) {
	reg := builtin.Workloads()
	want := map[string][]string{
		"002": {"  startup ", "  footprint:service=apache", "  scp:file=4m,link=100mbit ", "  scp:clients=2,", "neighbours=1,", "tree=50/1m", "  wget:", "  smb:"},
		"003": {"  redis:", "connections=16", "  oltp:", "test=oltp_read_write", "threads=16", "  spark-cluster:", "job=kmeans"},
		"004": {"  http:", "server=apache", "users=8000", "  ftp:", "  smtp:"},
	}
	pending := map[string]string{"002": "", "003": "", "004": ""} // Hadoop runs too (mapreduce)
	for id, subs := range want {
		f, err := Load(id)
		if err != nil {
			t.Fatal(err)
		}
		q, err := f.AtScale(ScaleQuick)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan(q, reg, builtin.Platforms())
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		var b bytes.Buffer
		p.Print(&b)
		for _, s := range subs {
			if !strings.Contains(b.String(), s) {
				t.Errorf("%s quick plan lacks %q:\n%s", id, s, b.String())
			}
		}
		var ids []string
		for _, e := range q.Study.PendingExperiments() {
			ids = append(ids, e.ID)
		}
		if strings.Join(ids, ",") != pending[id] {
			t.Errorf("%s: pending experiments %v, want %q", id, ids, pending[id])
		}
		// Every experiment with a workload selects cells of the quick
		// file (the scale rewrites the data sets they name).
		if err := q.Check(); err != nil {
			t.Errorf("%s quick: %v", id, err)
		}
	}
}

// Study 002 compares one run of the host with N instances: its finding
// for two VMs is checked against native at one instance.
func TestStudy002ComparesWithNativeAt1(t *testing.T) {
	f, _ := Load("002")
	if f.Baseline != "native@1" {
		t.Fatalf("002 baseline %q", f.Baseline)
	}
	pr := "clients=1,direction=download,file=450m,inject=none,neighbours=0,neighbours-busy=false,seed=1,tree="
	cells := []report.Cell{
		cell("native", "scp", pr, "transfer_time", "lower", 1, 38, 38.5, 38.2, 38.9, 38.1, 38.4),
		cell("native", "scp", pr, "transfer_time", "lower", 2, 77, 76, 78, 77, 76.5, 77.2),
		cell("qemu", "scp", pr, "transfer_time", "lower", 2, 60, 61, 59, 60.5, 60.2, 59.8),
		cell("lxc", "scp", pr, "transfer_time", "lower", 2, 39, 39.5, 38.7, 39.1, 39.2, 38.9),
	}
	var table7 []Check
	for _, c := range Checks(f, cells) {
		if c.Experiment == "table7" {
			table7 = append(table7, c)
		}
	}
	got := map[string]string{}
	for _, c := range table7 {
		got[c.A+">"+c.B] = c.Outcome
	}
	// native once (38 s) beats two VMs (60 s); two jails beat two VMs.
	if got["native@1>qemu"] != Agrees || got["lxc>qemu"] != Agrees || len(table7) != 2 {
		t.Errorf("table7 checks %v", got)
	}
}

// A platform that cannot run the study's image runs in a run of its own;
// comparisons across the runs are unpaired.
func TestRunGroupsAndUnpairedAcrossRuns(t *testing.T) {
	f, _ := Load("003")
	g := f.RunGroups()
	if len(g) != 2 || g[0].Image != "debian" || g[1].Image != "minimal" || strings.Join(g[1].Platforms, " ") != "docker-in-vm:cpus=2,memory=8g" || slices.Contains(g[0].Platforms, "docker-in-vm:cpus=2,memory=8g") {
		t.Fatalf("003 groups %+v", g)
	}
	q, _ := f.AtScale(ScaleQuick)
	if g := q.RunGroups(); len(g) != 1 || len(g[0].Platforms) != 3 {
		t.Fatalf("003 quick groups %+v", g)
	}
	// Paired, docker/vm ratios with tiny spread in the differences but
	// a large one in each series: paired they decide, unpaired they do not.
	pf := File{Platforms: []string{"a", "b"}, Workloads: []string{"cpu"}, Study: &Meta{ID: "t", Title: "t",
		Experiments: []Experiment{{ID: "e", Workload: "cpu", Metric: "m", Findings: []Finding{{Text: "a beats b", Better: []string{"a", "b"}}}}}}}
	cells := []report.Cell{
		cell("a", "cpu", "", "m", "higher", 1, 100, 200, 300, 400, 500, 600),
		cell("b", "cpu", "", "m", "higher", 1, 99, 198, 297, 396, 495, 594),
	}
	if c := Checks(pf, cells); len(c) != 1 || c[0].Outcome != Agrees {
		t.Fatalf("paired: %+v", c)
	}
	pf.Study.SeparateRuns([]RunGroup{{Platforms: []string{"a"}}, {Platforms: []string{"b"}}})
	if c := Checks(pf, cells); len(c) != 1 || c[0].Outcome != Undecided {
		t.Fatalf("across runs: %+v", c)
	}
}

// The standard scale runs every cell of every study with enough
// repetitions for a verdict (at least 5 per side, or auto, which never
// stops below 5) and shortened runs, in under an hour by the planner's
// estimate (aiming at 40 minutes on two cores).
func TestStandardScaleDecides(t *testing.T) {
	reg := builtin.Workloads()
	for _, id := range IDs() {
		f, _ := Load(id)
		paper, _ := NewPlan(f, reg, builtin.Platforms())
		sc, ok := f.Study.Scales[DefaultScale]
		if !ok {
			t.Errorf("%s has no %s scale", id, DefaultScale)
			continue
		}
		g, err := f.AtScale(DefaultScale)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan(g, reg, builtin.Platforms())
		if err != nil {
			t.Fatal(err)
		}
		if !givesVerdicts(g.Reps) || p.Reps < MinVerdictReps || !slices.Contains(g.VerdictScales(), DefaultScale) {
			t.Errorf("%s standard: reps %s (%d) give no verdict", id, g.Reps, p.Reps)
		}
		if p.Cells != paper.Cells {
			t.Errorf("%s standard: %d cells, paper %d", id, p.Cells, paper.Cells)
		}
		if p.Estimate > 50*time.Minute || p.Estimate >= paper.Estimate {
			t.Errorf("%s standard: estimate %s (paper %s)", id, p.Estimate, paper.Estimate)
		}
		if sc.Note == "" {
			t.Errorf("%s standard: no note", id)
		}
		t.Logf("%s standard: %d reps, ~%s", id, p.Reps, p.Estimate.Round(time.Minute))
	}
}

// TestCapEmulated: at the standard scale a VM platform under TCG runs
// EmulatedReps repetitions (fewer runs, a smaller estimate, a line in the
// plan saying so); under KVM, unprobed, or at another scale it runs the
// file's.
func TestCapEmulated(t *testing.T) {
	reg, plats := builtin.Workloads(), builtin.Platforms()
	f, _ := Load("002")
	g, err := f.AtScale(DefaultScale)
	if err != nil {
		t.Fatal(err)
	}
	full, err := NewPlan(g, reg, plats)
	if err != nil {
		t.Fatal(err)
	}
	for _, accel := range []string{"kvm", ""} {
		h := g
		if c := h.CapEmulated(map[string]string{"qemu": accel}); c != nil {
			t.Errorf("accel %q: capped %v", accel, c)
		}
	}
	if c := g.CapEmulated(map[string]string{"qemu": "tcg: no /dev/kvm"}); !slices.Equal(c, []string{"qemu"}) || g.PlatformReps["qemu"] != EmulatedReps {
		t.Fatalf("tcg: capped %v, platform reps %v", c, g.PlatformReps)
	}
	capped, err := NewPlan(g, reg, plats)
	if err != nil {
		t.Fatal(err)
	}
	per := full.Runs / len(g.Platforms) // runs per platform at the file's reps
	if want := full.Runs - per + per*EmulatedReps/full.Reps; capped.Runs != want || capped.Estimate >= full.Estimate {
		t.Errorf("capped: %d runs (want %d), estimate %s (uncapped %s)", capped.Runs, want, capped.Estimate, full.Estimate)
	}
	capped.Accel = map[string]string{"qemu": "tcg: no /dev/kvm"}
	var b strings.Builder
	capped.Print(&b)
	if !strings.Contains(b.String(), fmt.Sprintf("it runs %d repetitions per cell, not %d", EmulatedReps, full.Reps)) ||
		!strings.Contains(b.String(), fmt.Sprintf("× %d repetitions (qemu %d) = %d runs", full.Reps, EmulatedReps, capped.Runs)) {
		t.Errorf("plan does not say qemu runs %d repetitions:\n%s", EmulatedReps, b.String())
	}
	t.Logf("002 standard: %s with QEMU at %d repetitions, %s at %d", capped.Estimate.Round(time.Minute), EmulatedReps, full.Estimate.Round(time.Minute), full.Reps)
	q, err := f.AtScale(ScaleQuick)
	if err != nil {
		t.Fatal(err)
	}
	if c := q.CapEmulated(map[string]string{"qemu": "tcg: x"}); c != nil {
		t.Errorf("quick scale capped %v", c)
	}
}

// TestLabelsAreCanonical: a platform label whose options are not in key
// order is refused with the order to write it in (study 003's LXC label
// had matched no cell, so none of its findings was checked), and every
// built-in study's labels are canonical.
func TestLabelsAreCanonical(t *testing.T) {
	_, err := Decode([]byte("platforms: [native, \"lxc:cpus=2,memory=8g,init=system\"]\nworkloads: [cpu]\n"))
	if err == nil || !strings.Contains(err.Error(), `write it "lxc:cpus=2,init=system,memory=8g"`) {
		t.Errorf("non-canonical label: %v", err)
	}
	if _, err := Decode([]byte("platforms: [native, \"lxc:cpus=2,init=system,memory=8g\"]\nworkloads: [cpu]\n")); err != nil {
		t.Errorf("canonical label refused: %v", err)
	}
	for _, id := range IDs() {
		if _, err := Load(id); err != nil {
			t.Errorf("study %s: %v", id, err)
		}
	}
}
