package cli

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/builtin"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/study"
)

// studyStore writes a run of study 004 at quick scale on native and
// docker with the cpu thread sweep only (6 repetitions, docker 5% slower),
// recorded as 'study run' records it.
func studyStore(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	f, err := study.Load("004")
	if err != nil {
		t.Fatal(err)
	}
	if f, err = f.AtScale(study.ScaleQuick); err != nil {
		t.Fatal(err)
	}
	p, err := study.NewPlan(f, builtin.Workloads(), builtin.Platforms())
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, err := s.BeginRun(ctx, Study{Platforms: []string{"native", "docker"}, Workloads: f.Workloads, Instances: f.Instances, Reps: "6", Baseline: "native", About: f.Study}, map[string]string{"kernel": "k"})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(3))
	var in []sample.Sample
	for _, j := range p.Jobs {
		if j.Workload != "cpu" {
			continue
		}
		for rep := range 6 {
			for _, pl := range []string{"native", "docker"} {
				v := 10 / float64(j.Params.Int("threads"))
				if pl == "docker" {
					v *= 1.05
				}
				v *= 1 + 0.01*r.NormFloat64()
				in = append(in, sample.Sample{RunID: id, Platform: pl, Workload: "cpu", Params: j.Params.String(), Instances: 1, Rep: rep,
					Metric: "total_time", Unit: "s", Better: sample.Lower, Value: v, Start: time.Unix(int64(rep), 0), Duration: time.Second})
			}
		}
	}
	if err := s.Add(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRun(ctx, id, "done", nil); err != nil {
		t.Fatal(err)
	}
}

// 'isobench report --study' draws a stored run in the study's shapes:
// one section per table and figure, the findings beside them, the
// study's platforms the run lacks said so; with a built-in id or a file.
func TestReportStudyDrawsAStoredRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	studyStore(t, db)
	st, out, errb := newTestState(t)
	showed := filepath.Join(dir, "004.yaml")
	if code := Main(context.Background(), st, []string{"study", "show", "004", "--scale", "quick"}); code != 0 {
		t.Fatalf("show: exit %d: %s", code, errb)
	}
	if err := os.WriteFile(showed, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"004", showed} {
		page := filepath.Join(dir, "page.html")
		errb.Reset()
		if code := Main(context.Background(), st, []string{"report", "--study", arg, "--db", db, "-o", page}); code != 0 {
			t.Fatalf("--study %s: exit %d: %s", arg, code, errb)
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		html := string(b)
		f, _ := study.Load("004")
		for _, e := range f.Study.Experiments {
			if strings.Count(html, `<section class="paper" id="paper-`+e.ID+`">`) != 1 {
				t.Errorf("--study %s: section %s is not on the page once", arg, e.ID)
			}
		}
		fig3a := html[strings.Index(html, `id="paper-fig3a"`):strings.Index(html, `id="paper-fig3b"`)]
		for _, s := range []string{"<h2>Figure 3a: ", "<svg", "LXD had the lowest CPU overhead", "not checked: this run has no cells with lxd:init=system and lxc:init=system and docker",
			"lxd:init=system: no cells in this run", "a separate client machine behind a router (for the web, FTP and mail servers): not run here"} {
			if !strings.Contains(fig3a, s) {
				t.Errorf("--study %s: fig3a lacks %q", arg, s)
			}
		}
		if fig3b := html[strings.Index(html, `id="paper-fig3b"`):strings.Index(html, `id="paper-fig4"`)]; !strings.Contains(fig3b, ">threads<") || !strings.Contains(fig3b, `data-series="docker"`) {
			t.Errorf("--study %s: fig3b is not lines over threads", arg)
		}
		if strings.Index(html, `id="paper-fig3a"`) > strings.Index(html, `<section id="verdict">`) {
			t.Errorf("the sections are not first")
		}
	}
	// --format table: the table, then the findings.
	out.Reset()
	if code := Main(context.Background(), st, []string{"report", "--study", "004", "--db", db, "--format", "table"}); code != 0 {
		t.Fatalf("table: exit %d: %s", code, errb)
	}
	if !strings.Contains(out.String(), "Study 004 against the paper's findings (quick scale)") || !strings.Contains(out.String(), "total_time") {
		t.Errorf("table with findings:\n%s", out)
	}
	for _, bad := range [][]string{{"report", "--study", "999", "--db", db}, {"report", "--study", "004", "--db", db, "--format", "csv"}} {
		errb.Reset()
		if code := Main(context.Background(), st, bad); code != ExitUsage || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", bad, code, errb)
		}
	}
}
