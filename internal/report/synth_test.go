package report

import (
	"context"
	"math/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/stats"
	"github.com/isobench/isobench/internal/store"
)

// synthMetric is one metric of a synthetic workload: its native value per
// instance at one instance count, and how it scales.
type synthMetric struct {
	workload, params, metric, unit string
	better                         sample.Better
	native                         float64
}

// synthPlatform is a platform of the synthetic run with its true effect:
// factor multiplies a higher-is-better metric (and divides a lower one).
type synthPlatform struct {
	name, options string
	factor        float64
}

var synthMetrics = []synthMetric{
	{"cpu", "duration=1s,max-prime=5000,threads=1", "events_per_sec", "events/s", sample.Higher, 2400},
	{"cpu", "duration=1s,max-prime=5000,threads=1", "latency_avg", "ms", sample.Lower, 0.42},
	{"memory", "block-size=1k,oper=write", "mib_per_sec", "MiB/s", sample.Higher, 9800},
	{"blockio", "block-size=1m,size=256m", "read_mb_per_sec", "MB/s", sample.Higher, 1500},
	{"blockio", "block-size=1m,size=256m", "write_mb_per_sec", "MB/s", sample.Higher, 610},
}

var synthPlatforms = []synthPlatform{
	{"native", "", 1},
	{"docker", "", 0.99},
	{"qemu", "cpus=1", 0.72},
}

// synthSamples makes a run's samples: every platform, metric, instance
// count and repetition, with about 2% multiplicative noise. Per-instance
// throughput falls once instances exceed the 2 cores, as on the test VM.
func synthSamples(runID int64, seed int64, instances []int, reps int, platforms []synthPlatform, metrics []synthMetric) []sample.Sample {
	r := rand.New(rand.NewSource(seed))
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []sample.Sample
	for _, m := range metrics {
		for _, n := range instances {
			share := 1.0
			if n > 2 {
				share = 2 / float64(n)
			}
			for rep := 0; rep < reps; rep++ {
				for _, p := range platforms { // interleaved, as the runner does
					for inst := 0; inst < n; inst++ {
						v := m.native * share * p.factor
						if m.better == sample.Lower {
							v = m.native / (share * p.factor)
						}
						v *= 1 + 0.02*r.NormFloat64()
						out = append(out, sample.Sample{RunID: runID, Platform: p.name, Options: p.options, Workload: m.workload, Params: m.params,
							Instances: n, Instance: inst, Rep: rep, Metric: m.metric, Unit: m.unit, Better: m.better, Value: v,
							Start: start.Add(time.Duration(rep) * time.Second), Duration: time.Second})
					}
				}
			}
		}
	}
	return out
}

// synthStore writes a synthetic run into a new store at dir/name and
// returns its path.
func synthStore(t *testing.T, dir, name string, fp map[string]string, samples func(runID int64) []sample.Sample) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(dir, name)
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, err := s.BeginRun(ctx, map[string]any{"baseline": "native"}, fp)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, samples(id)); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRun(ctx, id, "done", nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadDoc reads a store's latest run back into a report document, as
// `isobench report` does.
func loadDoc(t *testing.T, path, baseline string) Doc {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, err := s.Runs(ctx)
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs: %v, %v", runs, err)
	}
	run := runs[len(runs)-1]
	ss, err := s.Samples(ctx, store.Filter{RunID: run.ID, NoWarmup: true})
	if err != nil {
		t.Fatal(err)
	}
	return Doc{Run: run.ID, Status: run.Status, Fingerprint: run.Fingerprint,
		Cells: Cells(ss, Options{Baseline: baseline, Stats: stats.Options{Seed: run.ID}})}
}

// synthFingerprint looks like a real one, with settings that must be
// warned about (powersave governor, TCG).
func synthFingerprint() map[string]string {
	return map[string]string{
		"kernel": "6.1.0-test", "cores": "2", "cpu_model": "Synthetic CPU @ 2.0GHz", "memory_total": "4015424 kB",
		"cpu_governor": "powersave", "smt": "notsupported", "thp": "always [madvise] never", "swap": "off",
		"loadavg": "0.20 0.30 0.40 1/120 4242", "cwd_fs": "ext4", "cgroup_version": "2",
		"qemu:cpus=1.accel": "tcg", "qemu:cpus=1.qemu_version": "QEMU emulator version 7.2.0",
		"isobench_version": "dev", "isobench_commit": "0123456789ab", "go_version": "go1.26",
	}
}
