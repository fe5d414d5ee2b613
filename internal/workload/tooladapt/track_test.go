package tooladapt

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// wantSteps checks the tracked Counter's points are want and that the
// first timed of them came ~150 ms apart (the stand-ins' sleeps): each
// placed when its line arrived, not all at the end.
func (r *recTracker) wantSteps(t *testing.T, want []int64, timed int) {
	t.Helper()
	var counts []int64
	for _, p := range r.pts {
		counts = append(counts, p.N)
	}
	if !slices.Equal(counts, want) {
		t.Fatalf("counts %v, want %v", counts, want)
	}
	for i := 1; i <= timed; i++ {
		if gap := r.pts[i].At - r.pts[i-1].At; gap < 100*time.Millisecond {
			t.Errorf("point %d placed %v after the one before: want the time its line arrived (~150 ms)", i, gap)
		}
	}
}

// TestTrackedSysbench runs a stand-in for sysbench that prints two
// intermediate reports and a final report, each 150 ms after the one
// before but stamped by sysbench's own clock 100 ms apart (as a crowded
// host delivers the real one's lines late), and checks the Counter grew
// at each report (by rate × interval) and ends at the final report's
// total, each step placed at sysbench's instant (its threads' start plus
// the report's time, and plus the total time for the total), not when
// its line was read; a report in another unit (a memory run's MiB/sec) is
// not counted.
func TestTrackedSysbench(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "sysbench")
	script := `#!/bin/sh
echo "Threads started!"
echo
sleep 0.15
echo "[ 0.1s ] thds: 2 eps: 1000.00 lat (ms,95%): 1.08"
echo "[ 0.15s ] 700.00 MiB/sec"
sleep 0.15
echo "[ 0.2s ] thds: 2 eps: 500.00 lat (ms,95%): 0.94"
sleep 0.15
cat <<'X'
CPU speed:
    events per second:  666.00

General statistics:
    total time:                          0.3000s
    total number of events:              200
X
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := &recTracker{}
	ctx := workload.WithTracker(context.Background(), tr)
	ms, err := trackedSysbench(ctx, func() error { return nil }, dir, bin, nil, "events/s", 1, workload.Rate{Metric: "events_per_sec", Scale: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Name != "events_per_sec" || ms[0].Value != 666 {
		t.Errorf("metrics %v, want the final report's events_per_sec 666", ms)
	}
	if len(tr.rates) != 1 || tr.rates[0].Metric != "events_per_sec" {
		t.Errorf("tracked rates %v", tr.rates)
	}
	// Record's zero, then 100 (0.1 s at 1000/s), 150 (+0.1 s at 500/s),
	// 200 (the total)
	var counts []int64
	for _, p := range tr.pts {
		counts = append(counts, p.N)
	}
	if !slices.Equal(counts, []int64{0, 100, 150, 200}) {
		t.Fatalf("counts %v, want [0 100 150 200]", counts)
	}
	// at sysbench's 0.1, 0.2 and 0.3 s from its threads' start (the
	// Record, a few microseconds before the start is read off the clock),
	// where the lines were read at 0.15, 0.3 and 0.45 s or later
	for i, want := range []time.Duration{100, 200, 300} {
		at := tr.pts[i+1].At - tr.pts[0].At
		if want *= time.Millisecond; at < want || at > want+5*time.Millisecond {
			t.Errorf("point %d at %v after the start, want sysbench's %v (not when its line was read)", i+1, at, want)
		}
	}
}

// TestIperf2ClientCountsIntervals runs the client half against a stand-in
// iperf that prints two one-second interval lines 150 ms apart and then
// the whole run's line (-y C -i 1), and checks the Counter grew by each
// interval's bytes as its line arrived, ended at the whole run's bytes,
// and that the whole run's line (which starts at 0 like the first
// interval) was not counted twice.
func TestIperf2ClientCountsIntervals(t *testing.T) {
	dir := t.TempDir()
	script := `#!/bin/sh
case "$*" in *"-i 1"*) ;; *) echo "no -i 1 in: $*" >&2; exit 2;; esac
sleep 0.15
echo "20261126145723,127.0.0.1,39428,127.0.0.1,5999,1,0.0-1.0,1000000,8000000"
sleep 0.15
echo "20261126145724,127.0.0.1,39428,127.0.0.1,5999,1,1.0-2.0,3000000,24000000"
sleep 0.15
echo "20261126145724,127.0.0.1,39428,127.0.0.1,5999,1,0.0-2.0,4500000,18000000"
`
	if err := os.WriteFile(filepath.Join(dir, "iperf"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	t.Setenv(workload.ScratchEnv, t.TempDir())
	p, err := Iperf2ClientDef.Resolve(map[string]string{"server": "127.0.0.1", "port": "5999", "duration": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	tr := &recTracker{}
	ctx := workload.WithTracker(context.Background(), tr)
	ms, err := Iperf2ClientDef.Agent(ctx, p, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.rates) != 1 || tr.rates[0].Metric != "throughput" || tr.rates[0].Scale != 8/1e9 {
		t.Errorf("tracked rates %v: want throughput from bytes (8/1e9 Gbit a byte)", tr.rates)
	}
	// Record's zero, the two intervals (each placed when its line was
	// read), then the rest of the whole run's 4.5 MB (the stand-in's
	// intervals add to 4 MB)
	tr.wantSteps(t, []int64{0, 1000000, 4000000, 4500000}, 2)
	// the metric is the whole run's, as iperf computed it
	for _, m := range ms {
		if m.Name == "throughput" && m.Value != 0.018 {
			t.Errorf("throughput %v Gbit/s, want the whole run's 0.018", m.Value)
		}
	}
}

// TestTrackedFio runs a stand-in for fio that prints the reports of a
// real fio --status-interval run (two status reports, then the final
// one) 150 ms apart but stamped (timestamp_ms) 100 ms apart, the first
// 50 ms before it is printed, as a crowded host delivers the real one's
// reports late. It checks the read side's Counter begins at the first
// report's I/Os, grows to each report's and ends at the final report's,
// each placed at fio's stamp and not when it was read, tracked for
// read_iops and read_mib_per_sec (4 KiB an I/O), and that the metrics are
// the final report's.
func TestTrackedFio(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "tools", "fio", "testdata", "fio-3.33-randread-status-interval.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var script strings.Builder
	script.WriteString("#!/bin/sh\nt0=$(($(date +%s%3N) - 50))\n")
	for i, rep := range strings.SplitAfter(string(data), "\n}\n") {
		if rep == "" {
			continue
		}
		f := filepath.Join(dir, fmt.Sprintf("report%d.json", i))
		if err := os.WriteFile(f, []byte(rep), 0o644); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			script.WriteString("sleep 0.15\n")
		}
		fmt.Fprintf(&script, "sed \"s/\\\"timestamp_ms\\\" : [0-9]*/\\\"timestamp_ms\\\" : $((t0 + %d))/\" %s\n", 100*i, f)
	}
	bin := filepath.Join(dir, "fio")
	if err := os.WriteFile(bin, []byte(script.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := &recTracker{}
	ctx := workload.WithTracker(context.Background(), tr)
	ms, err := trackedFio(ctx, func() error { return nil }, dir, bin, nil, fioSides("randread"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.rates) != 2 || tr.rates[0].Metric != "read_iops" || tr.rates[1].Metric != "read_mib_per_sec" || tr.rates[1].Scale != 4096.0/(1<<20) {
		t.Errorf("tracked rates %v: want read_iops and read_mib_per_sec (4 KiB an I/O)", tr.rates)
	}
	// the two jobs' I/Os summed: at the first report (where tracking
	// began), the second, and the final report
	tr.wantSteps(t, []int64{1770 + 1765, 5118 + 5098, 7133 + 7127}, 0)
	// at fio's stamps: 100 ms apart (whole milliseconds), where the
	// reports were read 150 ms apart or more
	for i := 1; i < len(tr.pts); i++ {
		if gap := tr.pts[i].At - tr.pts[i-1].At; gap < 98*time.Millisecond || gap > 102*time.Millisecond {
			t.Errorf("point %d placed %v after the one before, want fio's stamps' 100 ms (not when its report was read)", i, gap)
		}
	}
	for _, m := range ms {
		if m.Name == "read_iops" && math.Abs(m.Value-(10175.463623+10166.904422)) > 1e-6 {
			t.Errorf("read_iops %v, want the final report's two jobs' sum", m.Value)
		}
	}
}

// TestFioStatusInterval checks a run reports a twentieth of its duration
// apart, never more often than every 500 ms (each report costs fio I/O)
// nor less than every second, and that the sides follow the pattern.
func TestFioStatusInterval(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{
		time.Second: 500 * time.Millisecond, 10 * time.Second: 500 * time.Millisecond,
		15 * time.Second: 750 * time.Millisecond, time.Minute: time.Second,
	} {
		if got := fioStatusInterval(d); got != want {
			t.Errorf("fioStatusInterval(%v) = %v, want %v", d, got, want)
		}
	}
	for p, want := range map[string][]string{"randread": {"read"}, "read": {"read"}, "write": {"write"}, "randwrite": {"write"}, "rw": {"read", "write"}, "randrw": {"read", "write"}} {
		if got := fioSides(p); !slices.Equal(got, want) {
			t.Errorf("fioSides(%q) = %v, want %v", p, got, want)
		}
	}
}
