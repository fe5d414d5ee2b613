package study

import (
	"slices"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/builtin"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/workload"
)

func hasAll(string) bool  { return true }
func hasNone(string) bool { return false }

func experiment(t *testing.T, f File, id string) Experiment {
	t.Helper()
	for _, e := range f.Study.Experiments {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("study %s has no experiment %s", f.Study.ID, id)
	return Experiment{}
}

func withTools(t *testing.T, id, scale, mode string, has func(string) bool) (File, []string) {
	t.Helper()
	f, err := Load(id)
	if err != nil {
		t.Fatal(err)
	}
	g, err := f.AtScale(scale)
	if err != nil {
		t.Fatal(err)
	}
	h, notes, err := g.WithTools(mode, has)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Check(); err != nil {
		t.Fatalf("%s %s --tools %s: the swapped file does not check: %v", id, scale, mode, err)
	}
	if _, err := NewPlan(h, builtin.Workloads(), builtin.Platforms()); err != nil {
		t.Fatalf("%s %s --tools %s: %v", id, scale, mode, err)
	}
	return h, notes
}

// TestStudy000RunsSysbenchAndIperf2: at the paper's scale, where the host
// has them, figures 3 and 4 run sysbench with the paper's flags in every
// instance, figure 7 iperf 2 with one server, N clients and a 64 KByte
// window; the tools image carries them, and the ledger says the tool (and
// figure 7's window) is now the paper's.
func TestStudy000RunsSysbenchAndIperf2(t *testing.T) {
	f, notes := withTools(t, "000", ScalePaper, ToolsAuto, hasAll)
	want := []string{
		"tool:sysbench-cpu:duration=10s,max-prime=10000,threads=8",
		"tool:sysbench-memory:block-size=1k,duration=10s,threads=8",
		"blockio:mode=ionugget",
		"tool:iperf2:duration=10s,window=64k",
		"startup",
	}
	if !slices.Equal(f.Workloads, want) {
		t.Errorf("workloads\n%q\nwant\n%q", f.Workloads, want)
	}
	if f.Image != "tools" {
		t.Errorf("image %q, want tools", f.Image)
	}
	for id, w := range map[string]string{"fig3": "tool:sysbench-cpu", "fig4": "tool:sysbench-memory", "fig7": "tool:iperf2:window=64k", "fig5": "blockio"} {
		e := experiment(t, f, id)
		if e.Workload != w {
			t.Errorf("%s selects %q, want %q", id, e.Workload, w)
		}
		tool, _ := f.Study.Ledger(e, f.Reps).Get("tool")
		if (w != "blockio") != tool.IsSame() {
			t.Errorf("%s: ledger tool %+v", id, tool)
		}
	}
	if e := experiment(t, f, "fig7"); e.Metric != "throughput" {
		t.Errorf("fig7 metric %q", e.Metric)
	}
	params, _ := f.Study.Ledger(experiment(t, f, "fig7"), f.Reps).Get("params")
	if !params.IsSame() {
		t.Errorf("fig7 with iperf's -w 64K: params %+v", params)
	}
	if len(notes) != 3 || !strings.Contains(strings.Join(notes, "\n"), "iperf 2.1") {
		t.Errorf("notes %q", notes)
	}
	// The paper's file is untouched.
	orig, _ := Load("000")
	if orig.Workloads[0] != "cpu:threads=8,max-prime=10000,duration=10s" || orig.Image != "" {
		t.Errorf("WithTools changed the loaded file: %q %q", orig.Workloads, orig.Image)
	}
}

// TestToolsBuiltinAndMissing: --tools builtin, a host without the tools
// and the quick scale (under auto) keep isobench's own workloads, saying
// why.
func TestToolsBuiltinAndMissing(t *testing.T) {
	orig, _ := Load("000")
	for _, c := range []struct {
		scale, mode string
		has         func(string) bool
		note        string
	}{
		{ScalePaper, ToolsBuiltin, hasAll, "--tools builtin"},
		{ScaleQuick, ToolsAuto, hasAll, "the quick scale runs isobench's own; --tools paper"},
		{ScalePaper, ToolsAuto, hasNone, "sysbench is not on this host"},
	} {
		f, notes := withTools(t, "000", c.scale, c.mode, c.has)
		for _, w := range f.Workloads {
			if strings.HasPrefix(w, "tool:") {
				t.Errorf("%s --tools %s: %s runs", c.scale, c.mode, w)
			}
		}
		if len(f.Workloads) != len(orig.Workloads) || f.Image != "" {
			t.Errorf("%s --tools %s: workloads %q image %q", c.scale, c.mode, f.Workloads, f.Image)
		}
		if !strings.Contains(strings.Join(notes, "\n"), c.note) {
			t.Errorf("%s --tools %s: notes %q, want %q", c.scale, c.mode, notes, c.note)
		}
	}
	if _, _, err := orig.WithTools("bogus", hasAll); err == nil || !strings.Contains(err.Error(), "want auto, paper, builtin") {
		t.Errorf("--tools bogus: %v", err)
	}
}

// TestToolsAtQuickScale: --tools paper at the quick scale runs the tools
// with the scale's shorter runs, and the ledger says the scale changed
// their parameters.
func TestToolsAtQuickScale(t *testing.T) {
	f, _ := withTools(t, "000", ScaleQuick, ToolsPaper, hasAll)
	for _, w := range []string{"tool:sysbench-cpu:duration=1s,max-prime=10000,threads=8", "tool:iperf2:duration=1s,window=64k"} {
		if !slices.Contains(f.Workloads, w) {
			t.Errorf("no %s in %q", w, f.Workloads)
		}
	}
	params, _ := f.Study.Ledger(experiment(t, f, "fig3"), f.Reps).Get("params")
	if params.IsSame() || !strings.Contains(params.Here, "duration=1s") {
		t.Errorf("fig3 at quick: params %+v", params)
	}
}

// TestPaperToolsResolve: every paper's tool is a registered workload that
// takes the parameters it is given, for every entry it replaces in its
// study at every scale.
func TestPaperToolsResolve(t *testing.T) {
	reg := builtin.Workloads()
	for _, pt := range PaperTools {
		if _, err := reg.Lookup(pt.Tool); err != nil {
			t.Errorf("%s: %v", pt.Tool, err)
		}
		if pt.Name == "" || (pt.Builtin != "" && pt.Here != Same && !strings.HasPrefix(pt.Here, "differs: ")) {
			t.Errorf("%s: name %q, here %q", pt.Tool, pt.Name, pt.Here)
		}
	}
	for _, id := range IDs() {
		for _, scale := range []string{ScalePaper, ScaleQuick} {
			f, _ := withTools(t, id, scale, ToolsPaper, hasAll)
			for _, w := range f.Workloads {
				sp, err := spec.Parse(w)
				if err != nil {
					t.Fatal(err)
				}
				vs, err := workload.Expand(sp.Params)
				if err != nil {
					t.Fatal(err)
				}
				d, err := reg.Lookup(sp.Name)
				if err != nil {
					t.Fatalf("%s %s: %v", id, scale, err)
				}
				for _, v := range vs {
					if _, err := d.Resolve(v.Raw); err != nil {
						t.Errorf("%s %s: %s: %v", id, scale, w, err)
					}
				}
			}
		}
	}
}

// TestStudy003RunsFio: figure 4 runs fio itself with the paper's flags
// (libaio, O_DIRECT, iodepth 16, numjobs 8, 4 KiB, 1 GB per job), in the
// debian image the study runs, its IOPS read from fio's own side.
func TestStudy003RunsFio(t *testing.T) {
	f, notes := withTools(t, "003", ScalePaper, ToolsAuto, hasAll)
	if !strings.Contains(strings.Join(notes, "\n"), "docker-in-vm:cpus=2,memory=8g runs from the minimal image, which does not carry it") {
		t.Errorf("notes do not say Docker-Machine's minimal image has no fio: %q", notes)
	}
	for _, w := range []string{
		"tool:fio:bs=4k,direct=true,duration=30s,iodepth=16,ioengine=libaio,jobs=8,pattern=randread,size=1g",
		"tool:fio:bs=4k,direct=true,duration=30s,iodepth=16,ioengine=libaio,jobs=8,pattern=randwrite,size=1g",
	} {
		if !slices.Contains(f.Workloads, w) {
			t.Errorf("no %s in %q", w, f.Workloads)
		}
	}
	if f.Image != "debian" {
		t.Errorf("image %q, want the study's debian", f.Image)
	}
	for id, m := range map[string]string{"fig4-randread": "read_iops", "fig4-randwrite": "write_iops"} {
		e := experiment(t, f, id)
		if !strings.HasPrefix(e.Workload, "tool:fio:pattern=") || e.Metric != m {
			t.Errorf("%s: %s %s, want tool:fio and %s", id, e.Workload, e.Metric, m)
		}
		tool, _ := f.Study.Ledger(e, f.Reps).Get("tool")
		if tool.IsSame() || !strings.Contains(tool.Here, "fio 3") || !strings.Contains(tool.Paper, "fio 2.1.3") {
			t.Errorf("%s: ledger tool %+v", id, tool)
		}
	}
	// isobench's disk with threads cannot be said in fio's words: kept.
	g, _ := Load("003")
	g.Workloads = append(g.Workloads, "disk:pattern=randread,engine=threads")
	h, _, err := g.WithTools(ToolsPaper, hasAll)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(h.Workloads, "disk:pattern=randread,engine=threads") {
		t.Errorf("engine=threads was swapped: %q", h.Workloads)
	}
}

// TestStudy004RunsSysbenchFixedWork: figure 3's fixed work is sysbench's
// own (--events=N --time=0) at 1-8 threads, its total time; Table 2's
// CPU row reads it too.
func TestStudy004RunsSysbenchFixedWork(t *testing.T) {
	f, _ := withTools(t, "004", ScalePaper, ToolsAuto, hasAll)
	if !slices.Contains(f.Workloads, "tool:sysbench-cpu:events=10000,max-prime=10000,threads=1|2|4|6|8") {
		t.Errorf("workloads %q", f.Workloads)
	}
	for _, id := range []string{"fig3a", "fig3b"} {
		if e := experiment(t, f, id); !strings.HasPrefix(e.Workload, "tool:sysbench-cpu") || e.Metric != "total_time" {
			t.Errorf("%s: %s %s", id, e.Workload, e.Metric)
		}
	}
	row := experiment(t, f, "table2").Score.Rows["cpu"]
	if row.Workload != "tool:sysbench-cpu:threads=1" || !slices.Equal(row.Metrics, []string{"total_time"}) {
		t.Errorf("table 2's cpu row %+v", row)
	}
	if experiment(t, f, "table2").Workload != "tool:sysbench-cpu:threads=1" {
		t.Errorf("table 2 selects %q", experiment(t, f, "table2").Workload)
	}
	orig, _ := Load("004")
	if experiment(t, orig, "table2").Score.Rows["cpu"].Workload != "cpu:threads=1" {
		t.Error("WithTools changed the loaded file's score rows")
	}
}

// TestStudy004RunsJMeterAndPostal: figures 8-10 run JMeter's FTP sampler
// against vsftpd, figure 11 postal stopped after the paper's 500 messages
// of 25 MB from 10 threads (20 of 1 MB at quick under --tools paper); the
// ledger says the tool is the paper's.
func TestStudy004RunsJMeterAndPostal(t *testing.T) {
	f, _ := withTools(t, "004", ScalePaper, ToolsAuto, hasAll)
	for _, w := range []string{"ftp:client=jmeter,direction=download,file=100m", "smtp:client=postal,postal-messages=500,size=25m,threads=10"} {
		if !slices.Contains(f.Workloads, w) {
			t.Errorf("no %s in %q", w, f.Workloads)
		}
	}
	for id, w := range map[string]string{"fig8": "ftp:client=jmeter", "fig9": "ftp:client=jmeter", "fig10": "ftp:client=jmeter", "fig11": "smtp:client=postal"} {
		e := experiment(t, f, id)
		if e.Workload != w {
			t.Errorf("%s selects %q, want %q", id, e.Workload, w)
		}
		if tool, _ := f.Study.Ledger(e, f.Reps).Get("tool"); !tool.IsSame() {
			t.Errorf("%s: ledger tool %+v", id, tool)
		}
	}
	q, _ := withTools(t, "004", ScaleQuick, ToolsPaper, hasAll)
	if !slices.Contains(q.Workloads, "smtp:client=postal,postal-messages=20,size=1m,threads=10") {
		t.Errorf("quick: %q", q.Workloads)
	}
}

// TestStudy003RunsHadoop: figure 9 runs Hadoop's own jobs (mapreduce) at
// every scale under auto (isobench has nothing of its own for it, so the
// quick scale keeps it, on small input); --tools builtin and a host
// without java leave it out, saying why, and the file still checks.
func TestStudy003RunsHadoop(t *testing.T) {
	q, notes := withTools(t, "003", ScaleQuick, ToolsAuto, hasAll)
	for _, w := range []string{"mapreduce:job=wordcount,size=8m", "mapreduce:job=terasort,size=8m"} {
		if !slices.Contains(q.Workloads, w) {
			t.Errorf("quick: no %s in %q", w, q.Workloads)
		}
	}
	if e := experiment(t, q, "fig9"); e.Workload != "mapreduce" || e.NotRunnable != "" {
		t.Errorf("fig9 at quick: %+v", e)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "Hadoop 3.3.6 MapReduce (local mode in each instance; its jars from Maven Central) runs") {
		t.Errorf("notes %q", notes)
	}
	noJava := func(b string) bool { return b != "java" }
	for _, c := range []struct {
		mode string
		has  func(string) bool
		why  string
	}{
		{ToolsBuiltin, hasAll, "--tools builtin runs isobench's own workloads only"},
		{ToolsAuto, noJava, "java is not on this host"},
	} {
		f, notes := withTools(t, "003", ScalePaper, c.mode, c.has)
		if slices.ContainsFunc(f.Workloads, func(w string) bool { return strings.HasPrefix(w, "mapreduce") }) {
			t.Errorf("--tools %s: mapreduce runs: %q", c.mode, f.Workloads)
		}
		e := experiment(t, f, "fig9")
		if e.Workload != "" || !strings.Contains(e.NotRunnable, c.why) || len(e.Pending) != 1 {
			t.Errorf("--tools %s: fig9 %+v", c.mode, e)
		}
		if !strings.Contains(strings.Join(notes, "\n"), c.why) {
			t.Errorf("--tools %s: notes %q", c.mode, notes)
		}
		for name, sc := range f.Study.Scales {
			if _, ok := sc.Params["mapreduce"]; ok {
				t.Errorf("--tools %s: scale %s still sets mapreduce", c.mode, name)
			}
		}
	}
}

// TestWithoutToolsUndoesTheSwap: a file 'study show' wrote with the
// paper's tools, run with --tools builtin, is the built-in study with
// isobench's own workloads again: entries, selectors, metrics, score rows,
// scale keys, image and ledger.
func TestWithoutToolsUndoesTheSwap(t *testing.T) {
	for _, id := range IDs() {
		for _, scale := range []string{ScalePaper, ScaleQuick} {
			plain, _ := withTools(t, id, scale, ToolsBuiltin, hasAll)
			swapped, _ := withTools(t, id, scale, ToolsPaper, hasAll)
			back, _, err := swapped.WithTools(ToolsBuiltin, hasAll)
			if err != nil {
				t.Fatal(err)
			}
			if err := back.Check(); err != nil {
				t.Fatalf("%s %s: %v", id, scale, err)
			}
			if !slices.Equal(canonical(back.Workloads), canonical(plain.Workloads)) {
				t.Errorf("%s %s: back %q\nwant %q", id, scale, back.Workloads, plain.Workloads)
			}
			if back.Image != plain.Image {
				t.Errorf("%s %s: image %q, want %q", id, scale, back.Image, plain.Image)
			}
			for i, e := range back.Study.Experiments {
				p := plain.Study.Experiments[i]
				if e.Metric != p.Metric || e.NotRunnable != p.NotRunnable {
					t.Errorf("%s %s %s: metric %q not runnable %q, want %q %q", id, scale, e.ID, e.Metric, e.NotRunnable, p.Metric, p.NotRunnable)
				}
				if sb, _ := spec.Parse(e.Workload); e.Workload != "" && !back.selectsAny(sb) {
					t.Errorf("%s %s %s: selects nothing (%q)", id, scale, e.ID, e.Workload)
				}
				lb, lp := back.Study.Ledger(e, back.Reps), plain.Study.Ledger(p, plain.Reps)
				if lb.Line() != lp.Line() {
					t.Errorf("%s %s %s: ledger\n%s\nwant\n%s", id, scale, e.ID, lb.Line(), lp.Line())
				}
			}
		}
	}
}

// canonical writes each entry as spec.Spec.String does.
func canonical(ws []string) []string {
	var out []string
	for _, w := range ws {
		sp, _ := spec.Parse(w)
		out = append(out, sp.String())
	}
	return out
}

// TestProducedBy: each figure names what produced it - the paper's tool
// where it ran, else isobench's own, saying what it re-implements - and a
// stored run's workloads say which tools ran.
func TestProducedBy(t *testing.T) {
	f, _ := withTools(t, "000", ScalePaper, ToolsPaper, hasAll)
	for id, want := range map[string]string{"fig3": "sysbench 1.0", "fig7": "iperf 2.1", "fig5": "isobench's blockio", "fig8": "isobench's startup timer"} {
		if got := ProducedBy("000", experiment(t, f, id)); !strings.HasPrefix(got, want) {
			t.Errorf("000 %s: %q, want %q...", id, got, want)
		}
	}
	g, _ := withTools(t, "004", ScalePaper, ToolsBuiltin, hasAll)
	for id, want := range map[string]string{"fig3a": "isobench's cpu", "fig6": "ab against apache", "fig8": "lftp against vsftpd", "fig11": "isobench's SMTP client in place of postal"} {
		if got := ProducedBy("004", experiment(t, g, id)); !strings.HasPrefix(got, want) {
			t.Errorf("004 %s: %q, want %q...", id, got, want)
		}
	}
	// a stored run that ran sysbench but not iperf 2 (the host had none)
	orig, _ := Load("000")
	r, err := orig.WithToolsOf([]string{"tool:sysbench-cpu:threads=8", "tool:sysbench-memory:threads=8", "tcp-stream:server=instance,client=instance"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ProducedBy("000", experiment(t, r, "fig3")); !strings.HasPrefix(got, "sysbench") {
		t.Errorf("fig3 of a run with sysbench: %q", got)
	}
	if got := ProducedBy("000", experiment(t, r, "fig7")); !strings.HasPrefix(got, "isobench's tcp-stream") {
		t.Errorf("fig7 of a run without iperf 2: %q", got)
	}
}
