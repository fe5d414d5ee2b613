package tooladapt

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/workload"
)

// recTracker keeps the Counter it is given and, at stop, its points.
type recTracker struct {
	rates []workload.Rate
	pts   []workload.Point
	c     *workload.Counter
}

func (r *recTracker) Track(c *workload.Counter, rates ...workload.Rate) func() {
	r.c, r.rates = c, rates
	c.Record()
	return func() { r.pts = r.c.Points() }
}

// TestTrackedSysbench runs a stand-in for sysbench that prints two
// intermediate reports 150 ms apart and a final report, and checks the
// Counter grew at each report (by rate × interval) and ends at the final
// report's total, each step placed when its line arrived.
func TestTrackedSysbench(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "sysbench")
	script := `#!/bin/sh
echo "Threads started!"
echo
sleep 0.15
echo "[ 1s ] thds: 2 eps: 1000.00 lat (ms,95%): 1.08"
sleep 0.15
echo "[ 2s ] thds: 2 eps: 500.00 lat (ms,95%): 0.94"
sleep 0.15
cat <<'X'
CPU speed:
    events per second:  1666.00

General statistics:
    total time:                          3.0015s
    total number of events:              2000
X
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := &recTracker{}
	ctx := workload.WithTracker(context.Background(), tr)
	out, err := trackedSysbench(ctx, func() error { return nil }, dir, bin, nil, 1, workload.Rate{Metric: "events_per_sec", Scale: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(tr.rates) != 1 || tr.rates[0].Metric != "events_per_sec" {
		t.Errorf("tracked rates %v", tr.rates)
	}
	var counts []int64
	for _, p := range tr.pts {
		counts = append(counts, p.N)
	}
	// Record's zero, then 1000 (1 s at 1000/s), 1500 (+1 s at 500/s), 2000 (the total)
	want := []int64{0, 1000, 1500, 2000}
	if len(counts) != len(want) {
		t.Fatalf("counts %v, want %v", counts, want)
	}
	for i := range want {
		if counts[i] != want[i] {
			t.Fatalf("counts %v, want %v", counts, want)
		}
	}
	// each step placed when its line was read: ~150 ms apart, not together
	for i := 1; i < len(tr.pts); i++ {
		if gap := tr.pts[i].At - tr.pts[i-1].At; gap < 100*time.Millisecond {
			t.Errorf("point %d placed %v after the one before: want the time its report arrived (~150 ms)", i, gap)
		}
	}
}
