package report

import (
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
)

// TestOverflowExplainsANoisyCell: study 004's web cell at 8,000 users as
// this host gave it (standard scale, 2026-11-27): native's total times
// spread from 0.8 s to 8.1 s while Docker's stayed within 0.77-0.91 s,
// both with thousands of accept-queue overflows per repetition. The noisy
// cell says why; the quiet one and the overflow count itself say nothing.
func TestOverflowExplainsANoisyCell(t *testing.T) {
	var samples []sample.Sample
	add := func(platform, metric string, better sample.Better, values []float64) {
		for rep, v := range values {
			samples = append(samples, sample.Sample{RunID: 1, Platform: platform, Workload: "http", Params: "users=8000", Instances: 1,
				Rep: rep, Metric: metric, Unit: "s", Better: better, Value: v, Start: time.Unix(1e9, 0)})
		}
	}
	add("native", "total_time", sample.Lower, []float64{2.43, 0.83, 0.92, 2.81, 8.12})
	add("native", sample.OverflowMetric, sample.Lower, []float64{5673, 5836, 3893, 6045, 5455})
	add("docker", "total_time", sample.Lower, []float64{0.80, 0.77, 0.88, 0.85, 0.91})
	add("docker", sample.OverflowMetric, sample.Lower, []float64{5515, 5045, 5306, 5200, 5936})
	// a noisy cell whose server never overflowed gets no such warning
	add("lxc", "total_time", sample.Lower, []float64{0.5, 1.9, 0.6, 2.2, 0.7})
	add("lxc", sample.OverflowMetric, sample.Lower, []float64{0, 0, 0, 0, 0})
	// the server's readiness is over before the clients start
	add("native", "instance_ready_ms", sample.Lower, []float64{30, 90, 25, 140, 60})
	cells := Cells(samples, Options{Baseline: "native"})
	key := "accept queue overflowed"
	w := warningsOf(cellOf(t, onlyMetric(cells, "total_time"), "native"), key)
	if len(w) != 1 || !strings.Contains(w[0], "in 5 of 5 repetitions") || !strings.Contains(w[0], "up to 6045") {
		t.Errorf("native's noisy total time: %q, want one warning naming 5 of 5 repetitions and up to 6045", w)
	}
	if w := warningsOf(cellOf(t, onlyMetric(cells, "total_time"), "docker"), key); len(w) != 0 {
		t.Errorf("docker's quiet total time warns %q", w)
	}
	if w := warningsOf(cellOf(t, onlyMetric(cells, "total_time"), "lxc"), key); len(w) != 0 {
		t.Errorf("lxc overflowed never, yet warns %q", w)
	}
	if w := warningsOf(cellOf(t, onlyMetric(cells, "instance_ready_ms"), "native"), key); len(w) != 0 {
		t.Errorf("the server's readiness, before any client, warns %q", w)
	}
	for _, c := range onlyMetric(cells, sample.OverflowMetric) {
		if w := warningsOf(c, key); len(w) != 0 {
			t.Errorf("the overflow count of %s warns about itself: %q", c.Platform, w)
		}
	}
}

func onlyMetric(cells []Cell, metric string) []Cell {
	var out []Cell
	for _, c := range cells {
		if c.Metric == metric {
			out = append(out, c)
		}
	}
	return out
}
