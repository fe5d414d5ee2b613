package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/study"
	"github.com/isobench/isobench/internal/workload"
)

// TestStudyShowRoundTrips: what 'study show' prints is a study file that
// 'isobench run FILE' reads and plans, with the same matrix.
func TestStudyShowRoundTrips(t *testing.T) {
	for _, id := range study.IDs() {
		for _, scale := range []string{study.ScalePaper, study.ScaleQuick, study.DefaultScale} {
			st, out, errb := newTestState(t)
			if code := Main(context.Background(), st, []string{"study", "show", id, "--scale", scale}); code != 0 {
				t.Fatalf("show %s %s: exit %d: %s", id, scale, code, errb)
			}
			path := filepath.Join(t.TempDir(), "s.yaml")
			os.WriteFile(path, out.Bytes(), 0o644)
			got, err := loadStudy(path)
			if err != nil {
				t.Fatalf("show %s %s does not load: %v\n%s", id, scale, err, out)
			}
			want, _ := study.Load(id)
			want, _ = want.AtScale(scale)
			want, _, _ = want.WithTools(study.ToolsAuto, study.HostHas) // the paper's tools where this host has them
			if !slices.Equal(got.Platforms, want.Platforms) || !slices.Equal(got.Workloads, want.Workloads) ||
				!slices.Equal(got.Instances, want.Instances) || got.Reps != want.Reps || got.Baseline != want.Baseline {
				t.Errorf("%s %s: decoded %+v, want %+v", id, scale, got, want)
			}
			if got.About == nil || got.About.ID != id || got.About.Scale != scale || len(got.About.Experiments) == 0 {
				t.Errorf("%s %s: metadata lost: %+v", id, scale, got.About)
			}
			if _, _, err := st.plan(&got); err != nil {
				t.Errorf("%s %s: run's planner refuses it: %v", id, scale, err)
			}
		}
	}
	// The embedded files themselves are run files too.
	for _, id := range study.IDs() {
		b, _ := study.Raw(id)
		if _, err := decodeStudy(b); err != nil {
			t.Errorf("built-in %s is not a run file: %v", id, err)
		}
	}
}

func TestStudyListAndPlan(t *testing.T) {
	st, out, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"study", "list"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "000  ") || !strings.Contains(lines[0], "cannot: FreeBSD") {
		t.Fatalf("list:\n%s", out)
	}
	out.Reset()
	if code := Main(context.Background(), st, []string{"study", "run", "004", "--dry-run", "--scale", "quick"}); code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, errb)
	}
	for _, s := range []string{"study 004 (quick scale)", "13 workload cells", "× 5 platforms × 3 repetitions = 195 runs", "[sweep threads]", "  http:requests=8000,server=apache,users=8000  ~", "  cpu:events=2000  ~", "[sweep users]", "  ftp:", "  smtp:", "not run here: a separate client machine"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("plan lacks %q:\n%s", s, out)
		}
	}
	// Web, FTP and mail run now: nothing of study 004 is left pending.
	if strings.Contains(out.String(), "not yet runnable") {
		t.Errorf("study 004 still has experiments not runnable:\n%s", out)
	}
	for _, bad := range [][]string{{"study"}, {"study", "show", "999"}, {"study", "run", "004", "--scale", "huge"}, {"study", "run", "002", "--platform", "docker"}} {
		errb.Reset()
		if code := Main(context.Background(), st, bad); code != ExitUsage || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", bad, code, errb)
		}
	}
}

// TestStudyRunQuickEndToEnd runs study 004 at quick scale on native and
// Docker (two repetitions to stay near two minutes): the plan, the run,
// the comparison with the paper and the HTML report.
func TestStudyRunQuickEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs study 004 on native and docker")
	}
	st, out, errb := newTestState(t)
	dir := t.TempDir()
	db, html := filepath.Join(dir, "s.db"), filepath.Join(dir, "r.html")
	code := Main(context.Background(), st, []string{"study", "run", "004", "--scale", "quick", "--platform", "native", "--platform", "docker", "--reps", "2", "--db", db, "-o", html, "--quiet"})
	done := "run 1 (done)"
	if code != 0 {
		// Apache at 8,000 users overflows its accept queue on a 2-core
		// host, and a client whose SYN retransmissions outlast ab's 30 s
		// timeout fails the cell: the run records that with its reason,
		// which is what the run must do; any other failure fails the test
		if !acceptQueueFailuresOnly(out.String()) {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errb)
		}
		t.Logf("the 8,000-user web cell failed with its reason (accept queue overflow, ab's timeout); the rest ran")
		done = "run 1 (failed)"
	}
	for _, s := range []string{"study 004 (quick scale)", "not run here: lxd:init=system: left out", done, "Study 004 against the paper's findings", "native better than docker?", "report: " + html} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if fi, err := os.Stat(html); err != nil || fi.Size() == 0 {
		t.Errorf("report: %v", err)
	}
	// The report opens with the paper's figures, lxd said to be left out.
	page, _ := os.ReadFile(html)
	for _, s := range []string{`<section class="paper" id="paper-fig3a">`, "<h2>Figure 3a: ", `<section class="paper" id="paper-table2">`, "lxd:init=system: left out (--platform)", "<b>UNDECIDED</b>"} {
		if !strings.Contains(string(page), s) {
			t.Errorf("report lacks %q", s)
		}
	}
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ss, err := s.Samples(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	threads := map[string]bool{}
	for _, x := range ss {
		if x.Workload == "cpu" && x.Metric == "total_time" && x.Tags[workload.SweepTag] == "threads" {
			threads[x.Params] = true
		}
	}
	if len(threads) != 5 {
		t.Errorf("cpu total_time at %d thread counts, want 5: %v", len(threads), threads)
	}
}

// TestStudyPlansThePapersWay: 003 and 004 plan system containers and
// Docker with published ports; 003's paper scale has Docker-Machine (in a
// run of its own, from the image it can run) and k8s, its quick scale
// neither.
func TestStudyPlansThePapersWay(t *testing.T) {
	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"004"}, []string{"platforms: native, docker, docker:network=nat, lxc:init=system, lxd:init=system"}, []string{"a run of its own"}},
		{[]string{"003", "--scale", "paper"}, []string{"docker:cpus=2,memory=8g,network=nat, lxc:cpus=2,init=system,memory=8g, docker-in-vm:cpus=2,memory=8g, k8s:cpus=2,memory=8g",
			"a run of its own from image minimal (it cannot run the study's image debian): docker-in-vm:cpus=2,memory=8g"}, nil},
		{[]string{"003"}, []string{"platforms: native, docker:cpus=2,memory=8g,network=nat, lxc:cpus=2,init=system,memory=8g   "}, []string{"docker-in-vm", "k8s:"}},
	} {
		st, out, errb := newTestState(t)
		if code := Main(context.Background(), st, append([]string{"study", "run", "--dry-run"}, c.args...)); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errb)
		}
		for _, s := range c.want {
			if !strings.Contains(out.String(), s) {
				t.Errorf("%v: plan lacks %q:\n%s", c.args, s, out)
			}
		}
		for _, s := range c.not {
			for _, l := range strings.Split(out.String(), "\n") {
				if (strings.HasPrefix(l, "platforms: ") || strings.HasPrefix(l, "a run of its own")) && strings.Contains(l, s) {
					t.Errorf("%v: plan runs %q: %s", c.args, s, l)
				}
			}
		}
	}
}

// TestStudyDefaultsToTheStandardScale: show and run default to the
// standard scale, whose plan says it gives verdicts; quick says which
// scale does.
func TestStudyDefaultsToTheStandardScale(t *testing.T) {
	st, out, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"study", "show", "001"}); code != 0 {
		t.Fatalf("show: exit %d: %s", code, errb)
	}
	if !strings.Contains(out.String(), "# isobench study 001 at standard scale") || !strings.Contains(out.String(), "\n  scale: standard\n") {
		t.Errorf("show's default scale:\n%.400s", out)
	}
	out.Reset()
	if code := Main(context.Background(), st, []string{"study", "run", "001", "--dry-run"}); code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, errb)
	}
	if !strings.Contains(out.String(), "study 001 (standard scale)") || !strings.Contains(out.String(), "\nverdicts: this standard scale gives them") {
		t.Errorf("run's default scale:\n%s", out)
	}
	out.Reset()
	if code := Main(context.Background(), st, []string{"study", "run", "001", "--dry-run", "--scale", "quick"}); code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, errb)
	}
	if !strings.Contains(out.String(), "\nverdicts: none at this quick scale (3 repetitions, fewer than 5: trends only); for verdicts run --scale standard\n") {
		t.Errorf("quick's verdict line:\n%s", out)
	}
}

// TestStudyFidelity: one row per experiment and the count last, for one
// study and for all; study show carries the ledger lines as comments.
func TestStudyFidelity(t *testing.T) {
	st, out, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"study", "fidelity", "001"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if lines[len(lines)-1] != "faithful here: 0 of 4" {
		t.Errorf("last line %q", lines[len(lines)-1])
	}
	for _, e := range []string{"fig3", "fig4", "fig5", "fig6"} {
		if !strings.Contains(out.String(), "\n  "+e+" ") {
			t.Errorf("no row for %s:\n%s", e, out)
		}
	}
	out.Reset()
	if code := Main(context.Background(), st, []string{"study", "fidelity"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if strings.Count(out.String(), "\nfaithful here: ") != len(study.IDs()) || !strings.Contains(out.String(), "every study: faithful here: ") {
		t.Errorf("every study:\n%s", out)
	}
	out.Reset()
	if code := Main(context.Background(), st, []string{"study", "show", "000", "--tools", "builtin"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if !strings.Contains(out.String(), "#   fig3 fidelity: tool differs (choice)") {
		t.Errorf("show has no ledger lines:\n%.600s", out)
	}
	for _, bad := range [][]string{{"study", "fidelity", "999"}, {"study", "fidelity", "000", "001"}} {
		if code := Main(context.Background(), st, bad); code != ExitUsage {
			t.Errorf("%v: exit %d", bad, code)
		}
	}
}

// TestStudyTools: --tools paper runs the paper's tools where this host
// has them (study 000's sysbench and iperf 2 in the tools image, said in
// the file's comments and its ledger), --tools builtin isobench's own,
// and a bad mode is a usage error.
func TestStudyTools(t *testing.T) {
	for _, b := range []string{"sysbench", "iperf"} {
		if !study.HostHas(b) {
			t.Skipf("%s is not on this host (scripts/setup.sh test installs it)", b)
		}
	}
	st, out, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"study", "show", "000", "--scale", "quick", "--tools", "paper"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	for _, s := range []string{"# tools: sysbench 1.0", "# tools: iperf 2.1", "#   fig3 fidelity: tool same", "tool:sysbench-cpu:duration=1s,max-prime=10000,threads=8", "tool:iperf2:duration=1s,window=64k", "image: tools"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("show --tools paper lacks %q:\n%s", s, out)
		}
	}
	out.Reset()
	if code := Main(context.Background(), st, []string{"study", "run", "000", "--scale", "paper", "--tools", "builtin", "--dry-run"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if strings.Contains(out.String(), "tool:") || !strings.Contains(out.String(), "tools: isobench's own workloads run in place of the paper's tools (--tools builtin)") {
		t.Errorf("run --tools builtin:\n%s", out)
	}
	if code := Main(context.Background(), st, []string{"study", "fidelity", "000", "--tools", "bogus"}); code != ExitUsage {
		t.Errorf("--tools bogus: exit %d", code)
	}
}

// TestRunTools: 'run FILE --tools builtin' runs isobench's own workloads
// from a file 'study show' wrote with the paper's tools, and --tools paper
// the tools again; a file without a study: block refuses --tools.
func TestRunTools(t *testing.T) {
	st, out, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"study", "show", "000", "--scale", "quick", "--tools", "paper"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	path := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(path, out.Bytes(), 0o644)
	out.Reset()
	errb.Reset()
	if code := Main(context.Background(), st, []string{"run", path, "--tools", "builtin", "--dry-run"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if strings.Contains(out.String(), "tool:") || !strings.Contains(out.String(), "cpu:") || !strings.Contains(errb.String(), "tools: isobench's own workloads run in place of the paper's tools (--tools builtin)") {
		t.Errorf("run --tools builtin:\n%s\n%s", out, errb)
	}
	out.Reset()
	if code := Main(context.Background(), st, []string{"run", path, "--tools", "paper", "--dry-run"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if study.HostHas("sysbench") && !strings.Contains(out.String(), "tool:sysbench-cpu") {
		t.Errorf("run --tools paper:\n%s", out)
	}
	plain := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(plain, []byte("platforms: [native]\nworkloads: [cpu]\n"), 0o644)
	errb.Reset()
	if code := Main(context.Background(), st, []string{"run", plain, "--tools", "builtin", "--dry-run"}); code != ExitUsage || !strings.Contains(errb.String(), "no study: block") {
		t.Errorf("a plain file with --tools: exit %d, %s", code, errb)
	}
}

// acceptQueueFailuresOnly reports whether a study run's output lists
// failed cells and every one is the 8,000-user web cell failing in ab.
func acceptQueueFailuresOnly(out string) bool {
	i := strings.Index(out, "failed cells (")
	if i < 0 {
		return false
	}
	n := 0
	for _, l := range strings.Split(out[i:], "\n")[1:] {
		if !strings.HasPrefix(l, "  ") {
			break
		}
		if !strings.Contains(l, "http:requests=8000,server=apache,users=8000 ") || !strings.Contains(l, ": ab: ") {
			return false
		}
		n++
	}
	return n > 0
}

// TestAcceptQueueFailuresOnly reads the failed-cells list of a real run
// (CI, 2026-11-27: native's 8,000-user cell, ab's timeout) and lists with
// another failure, or none.
func TestAcceptQueueFailuresOnly(t *testing.T) {
	real := `run 1 (failed): 900 samples in s.db

failed cells (1; the other cells ran):
  http:requests=8000,server=apache,users=8000 ×1 on native (rep 2): apache: client 0: ab: no result in output: Total of 7087 requests completed (exit status 119):  | Benchmarking 127.0.0.1 (be patient)...apr_pollset_poll: The timeout specified has expired (70007) | Total of 7087 requests completed; service log: [Fri Nov 27 20:56:26.525602 2026] [mpm_event:notice] AH00489: Apache/2.4.71 (Debian) configured -- resuming normal operations

study 004 (quick scale) took 2m43s (estimated 2m6s)
`
	if !acceptQueueFailuresOnly(real) {
		t.Error("the 8,000-user cell's ab timeout alone: want tolerated")
	}
	other := strings.Replace(real, "(rep 2): apache", "(rep 2): apache\n  ftp:file=16m ×1 on docker (rep 1): lftp: transfer lost", 1)
	for name, out := range map[string]string{
		"another cell failed too": other,
		"a 4,000-user cell":       strings.ReplaceAll(real, "users=8000", "users=4000"),
		"no failed cells":         "run 1 (done): 900 samples\n",
		"the cell, not in ab":     strings.Replace(real, ": ab: ", ": apache never answered: ", 1),
	} {
		if acceptQueueFailuresOnly(out) {
			t.Errorf("%s: tolerated", name)
		}
	}
}
