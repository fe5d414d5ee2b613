package report

import (
	"bytes"
	"github.com/isobench/isobench/internal/sample"
	"strings"
	"testing"
)

// TestScoreOnlyWhereItBelongs: a run with a cpu cell but not study 004's
// other inputs has no "Overall score (study 004)" section saying what it
// lacks; study 004's own report still says so.
func TestScoreOnlyWhereItBelongs(t *testing.T) {
	d := synthDoc(t)
	var cpu []Cell
	for _, c := range d.Cells {
		if c.Workload == "cpu" {
			cpu = append(cpu, c)
		}
	}
	d.Cells = cpu
	page := renderHTML(t, d)
	if strings.Contains(page, "Overall score") || strings.Contains(page, `id="score"`) {
		t.Errorf("a cpu-only run's page has the study 004 score section")
	}
	d.Study = &StudyHeading{ID: "004", Title: "Docker, LXC, LXD"}
	if page := renderHTML(t, d); !strings.Contains(page, "Overall score (study 004)") {
		t.Errorf("study 004's page does not say what its score lacks")
	}
}

// TestNoiseHeaderCountsWarnedCells: the table's noise header says how many
// of the cells have a warning, not how many cells there are.
func TestNoiseHeaderCountsWarnedCells(t *testing.T) {
	cells := []Cell{{Workload: "cpu", Metric: "m", Platform: "a", Instances: 1, Warnings: []string{"noisy: CV 30%"}}, {Workload: "cpu", Metric: "m", Platform: "b", Instances: 1}, {Workload: "cpu", Metric: "m", Platform: "c", Instances: 1}}
	var b bytes.Buffer
	if err := warningSummary(&b, cells, 6); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "noise warnings (1 of 3 cells)") {
		t.Errorf("header: %q", b.String())
	}
}

// TestColdStartAdviceInTheSummary: the run summary's cold-start advice
// follows the run's warm-ups.
func TestColdStartAdviceInTheSummary(t *testing.T) {
	cells := []Cell{{Workload: "cpu", Metric: "m", Platform: "a", Instances: 1, N: 6, Median: 100, Values: []float64{50, 100, 101, 99, 100, 100},
		Warnings: []string{"cold start: the first run is much slower"}}}
	for warmups, want := range map[int]string{0: "add --warmup 1", 2: "after 2 warm-up repetition(s): raise --warmup"} {
		var b bytes.Buffer
		if err := Summary(&b, cells, SummaryOptions{Warmups: warmups}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("warm-ups %d: summary lacks %q:\n%s", warmups, want, b.String())
		}
		if warmups > 0 && strings.Contains(b.String(), "add --warmup 1") {
			t.Errorf("warm-ups %d: still advises adding one", warmups)
		}
	}
}

// TestUnwindowedCellsSaySo: a workload that tracks nothing, whose
// instances' releases were spread over more than a tenth of the run in
// some repetition, has every cell of its group warn that its rates are
// each instance's own; one whose releases were close says nothing.
func TestUnwindowedCellsSaySo(t *testing.T) {
	var in []sample.Sample
	for rep, share := range []float64{99, 72, 95} {
		for _, w := range []string{"spread", "close"} {
			v := share
			if w == "close" {
				v = 99
			}
			for _, m := range []string{sample.UnwindowedMetric, "ops"} {
				in = append(in, sample.Sample{Platform: "docker", Workload: w, Instances: 4, Instance: sample.AggregateInstance, Rep: rep,
					Metric: m, Unit: "x", Better: sample.Higher, Value: v})
			}
		}
	}
	for _, c := range Cells(in, Options{}) {
		warned := strings.Contains(strings.Join(c.Warnings, " "), "no common window")
		if c.Workload == "spread" && c.Metric == "ops" && (!warned || !strings.Contains(strings.Join(c.Warnings, " "), "in 1 of 3 repetitions")) {
			t.Errorf("spread ops: warnings %q", c.Warnings)
		}
		if c.Workload == "close" && warned {
			t.Errorf("close %s: warned %q", c.Metric, c.Warnings)
		}
	}
}

// TestBookkeepingHasNoVerdict: the runner's own barrier skew and window
// overlap are diagnostics of the harness, not compared with the baseline.
func TestBookkeepingHasNoVerdict(t *testing.T) {
	var in []sample.Sample
	for rep := range 5 {
		for _, p := range []string{"native", "docker"} {
			for _, m := range []string{sample.SkewMetric, sample.WindowMetric, "ops"} {
				in = append(in, sample.Sample{Platform: p, Workload: "cpu", Params: "threads=1", Instances: 2, Instance: sample.AggregateInstance, Rep: rep,
					Metric: m, Unit: "x", Better: sample.Higher, Value: float64(10 + rep)})
			}
		}
	}
	for _, c := range Cells(in, Options{Baseline: "native"}) {
		bk := sample.Bookkeeping(c.Metric)
		if bk && (c.Verdict != "" || c.Baseline != "") {
			t.Errorf("%s on %s: verdict %q against %q", c.Metric, c.Label(), c.Verdict, c.Baseline)
		}
		if !bk && c.Verdict == "" {
			t.Errorf("%s on %s: no verdict", c.Metric, c.Label())
		}
	}
}
