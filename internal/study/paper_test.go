package study

import (
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/report"
)

// Every experiment of every study carries what its paper reports: numbers
// where the paper prints them, else a note saying what it gives instead.
func TestEveryExperimentCarriesThePapersNumbers(t *testing.T) {
	for _, id := range IDs() {
		f, _ := Load(id)
		for _, e := range f.Study.Experiments {
			pv := e.PaperValues
			if pv == nil || pv.Source == "" || len(pv.Values) == 0 && pv.Note == "" {
				t.Errorf("%s %s: paper values %+v", id, e.ID, pv)
			}
		}
	}
}

// Some of the papers' numbers, as the seeds print them: an edit that
// changes one must change this table too.
func TestPaperNumbersPinnedToTheSeeds(t *testing.T) {
	for _, c := range []struct {
		id, exp, platform, params, metric string
		instances                         int
		value, ratio                      float64
	}{
		{"001", "fig3", "native@1", "", "", 0, 3866.6, 0},
		{"001", "fig3", "docker", "", "", 2, 1764.4, 0},
		{"001", "fig6", "docker", "", "", 4, 3809.8, 0},
		{"002", "table4", "qemu", "neighbours=0,clients=1", "", 0, 128.15, 0},
		{"002", "table8-smb", "qemu", "tree=2500/75m,neighbours=0,clients=1", "", 0, 43.52, 0},
		{"003", "table2", "docker:cpus=2,memory=8g,network=nat", "", "stream_triad", 0, 9042, 0},
		{"003", "table2", "lxc:cpus=2,init=system,memory=8g", "", "stream_copy", 0, 8420, 0},
		{"003", "fig4-randwrite", "lxc:cpus=2,init=system,memory=8g", "", "", 0, 0, 1.166},
		{"004", "fig8", "lxd:init=system", "", "", 0, 0, 0.526},
		{"004", "fig4", "docker", "", "read_mb_per_sec", 0, 0, 0.74},
		{"004", "fig11", "docker:network=nat", "", "", 0, 0, 0.9791},
	} {
		f, _ := Load(c.id)
		found := false
		for _, e := range f.Study.Experiments {
			if e.ID != c.exp || e.PaperValues == nil {
				continue
			}
			for _, v := range e.PaperValues.Values {
				if v.Platform == c.platform && v.Params == c.params && v.Metric == c.metric && v.Instances == c.instances {
					found = v.Value == c.value && v.Ratio == c.ratio
				}
			}
		}
		if !found {
			t.Errorf("%s %s %s %s %s ×%d: not %g / ratio %g", c.id, c.exp, c.platform, c.params, c.metric, c.instances, c.value, c.ratio)
		}
	}
}

// The paper's ratio to its own baseline and this run's stand side by side
// below the figure, and the figure draws the paper's numbers at the
// paper's ratio times this run's baseline.
func TestPaperNumbersBesideOurs(t *testing.T) {
	f := File{Platforms: []string{"native", "docker"}, Workloads: []string{"fs"}, Baseline: "native@1", Study: &Meta{ID: "t", Title: "t", Central: "mean",
		Experiments: []Experiment{{ID: "fig3", Workload: "fs", Metric: "mb_per_sec", Figure: "lines-instances", PaperValues: &PaperValues{
			Source: "Table IV", Baseline: "native@1", Unit: "MB/s", Values: []PaperValue{
				{Platform: "native@1", Value: 4000}, {Platform: "docker", Value: 3000}, {Platform: "docker", Instances: 2, Value: 1000},
				{Platform: "docker", Instances: 3, Ratio: 0.1, Text: "90% below"}}}}}}}
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	mk := func(p string, n int, v float64) report.Cell {
		c := cell(p, "fs", "personality=fileserver", "mb_per_sec", "higher", n, v, v, v, v, v)
		c.Mean, c.Median, c.N = v, v, 5
		return c
	}
	cells := []report.Cell{mk("native", 1, 200), mk("docker", 1, 190), mk("docker", 2, 100)}
	_, secs := Sections(f, cells, nil)
	s := secs[0]
	if len(s.PaperTables) != 1 {
		t.Fatalf("paper tables %+v", s.PaperTables)
	}
	got := map[string]string{}
	for _, r := range s.PaperTables[0].Rows {
		got[r[0]] = strings.Join(r[1:], " | ")
	}
	for k, want := range map[string]string{
		"native@1":  "4000 MB/s | 1.000 | 1.000",
		"docker":    "3000 MB/s | 0.750 | 0.950",
		"docker ×2": "1000 MB/s | 0.250 | 0.500",
		"docker ×3": "90% below | 0.100 | no cell in this run",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	if !strings.Contains(s.PaperTables[0].Caption, "Table IV") || !strings.Contains(s.PaperTables[0].Caption, "ratios to native@1, the paper's own baseline") {
		t.Errorf("caption %q", s.PaperTables[0].Caption)
	}
	// Drawn: docker ×1 at 0.75 × 200, docker ×2 at 0.25 × 200; the
	// baseline itself is the reference line, not a point.
	pts := map[int]float64{}
	for _, p := range s.Panels[0].Paper {
		if p.Label == "docker" {
			pts[p.Instances] = p.Value
		}
	}
	if len(pts) != 2 || pts[1] != 150 || pts[2] != 50 {
		t.Errorf("paper points %+v", s.Panels[0].Paper)
	}
	page := sectionsPage(t, f, cells, nil)
	if strings.Count(page, `class="paper-point"`) != 2 || !strings.Contains(page, `data-series="the paper: docker"`) || !strings.Contains(page, "the paper&#39;s ratio") {
		t.Errorf("the figure does not draw the paper's numbers")
	}

	bad := f
	bad.Study = &Meta{ID: "t", Title: "t", Experiments: []Experiment{{ID: "fig3", Workload: "fs", PaperValues: &PaperValues{Source: "x", Values: []PaperValue{{Platform: "lxd", Value: 1}}}}}}
	if err := bad.Check(); err == nil {
		t.Error("a paper value of a platform not in the file accepted")
	}
	bad.Study.Experiments[0].PaperValues = &PaperValues{Source: "x", Values: []PaperValue{{Platform: "docker"}}}
	if err := bad.Check(); err == nil {
		t.Error("a paper value with no number accepted")
	}
}

// A scale that shrinks a data set the paper's values select on
// ("file=450m") rewrites their selectors too, so they still meet cells.
func TestPaperValuesFollowTheScale(t *testing.T) {
	f, _ := Load("002")
	q, err := f.AtScale(DefaultScale)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range q.Study.Experiments {
		if e.ID != "table5" {
			continue
		}
		var ps []string
		for _, v := range e.PaperValues.Values {
			ps = append(ps, v.Params)
		}
		s := strings.Join(ps, " ")
		if strings.Contains(s, "450m") || strings.Contains(s, "2500/75m") || !strings.Contains(s, "file=4m") || !strings.Contains(s, "tree=50/1m") {
			t.Errorf("table5's paper values at standard scale: %v", ps)
		}
	}
	for _, e := range f.Study.Experiments {
		if e.ID == "table5" && !strings.Contains(e.PaperValues.Values[0].Params, "450m") {
			t.Error("AtScale changed its receiver's paper values")
		}
	}
}
