// Command store measures how many samples per second isobench's result
// store accepts, with its durability settings as isobench opens it (SQLite
// WAL, synchronous=NORMAL, one transaction per repetition as the runner
// commits them), at 32 instances x many metrics per repetition (issue 20:
// the store must never be what slows a run).
//
//	go run ./bench/store [-instances 32] [-metrics 4,16,64] [-reps 200] [-dir DIR]
//
// It prints, per metrics count, the samples in one repetition, the
// repetitions committed per second, the samples per second and the
// p50/p99/max commit latency of one repetition.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/store"
)

func main() {
	instances := flag.Int("instances", 32, "instances per repetition")
	metricsList := flag.String("metrics", "4,16,64", "metrics per instance (comma-separated list)")
	reps := flag.Int("reps", 200, "repetitions committed per metrics count")
	dir := flag.String("dir", "", "directory for the store (default: a new temporary directory; its file system is part of the result)")
	flag.Parse()
	if err := run(context.Background(), *instances, *metricsList, *reps, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "store bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, instances int, metricsList string, reps int, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "isobench-storebench.")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	fmt.Printf("%-8s %-10s %-14s %-12s %-10s %-10s %-10s\n", "metrics", "samples/rep", "reps/s", "samples/s", "p50 ms", "p99 ms", "max ms")
	for i, f := range strings.Split(metricsList, ",") {
		m, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || m < 1 {
			return fmt.Errorf("bad metrics count %q", f)
		}
		s, err := store.Open(ctx, filepath.Join(dir, fmt.Sprintf("s%d.db", i)))
		if err != nil {
			return err
		}
		runID, err := s.BeginRun(ctx, map[string]any{"bench": "store"}, nil)
		if err != nil {
			return err
		}
		var lat []time.Duration
		perRep := 0
		start := time.Now()
		for rep := range reps {
			batch := repetition(runID, instances, m, rep)
			perRep = len(batch)
			t0 := time.Now()
			if err := s.Add(ctx, batch); err != nil {
				return err
			}
			lat = append(lat, time.Since(t0))
		}
		total := time.Since(start)
		if err := s.EndRun(ctx, runID, "done", nil); err != nil {
			return err
		}
		s.Close()
		slices.Sort(lat)
		q := func(p float64) float64 {
			return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / 1e6
		}
		fmt.Printf("%-8d %-10d %-14.1f %-12.0f %-10.2f %-10.2f %-10.2f\n", m, perRep,
			float64(reps)/total.Seconds(), float64(reps*perRep)/total.Seconds(), q(0.5), q(0.99), float64(lat[len(lat)-1])/1e6)
	}
	return nil
}

// repetition is what the runner stores for one repetition: every
// instance's metrics, one aggregate per metric and the barrier skew.
func repetition(runID int64, instances, metrics, rep int) []sample.Sample {
	now := time.Now()
	var out []sample.Sample
	add := func(instance int, name string, v float64) {
		out = append(out, sample.Sample{RunID: runID, Platform: "docker", Options: "cpus=1", Workload: "cpu",
			Params: "duration=10s,max-prime=10000,threads=1", Instances: instances, Instance: instance, Rep: rep,
			Metric: name, Unit: "events/s", Better: sample.Higher, Value: v, Start: now, Duration: 10 * time.Second,
			Tags: map[string]string{"cpu_model": "bench"}})
	}
	for k := range metrics {
		name := fmt.Sprintf("metric_%d", k)
		for i := range instances {
			add(i, name, float64(i*metrics+k))
		}
		add(sample.AggregateInstance, name, float64(k))
	}
	add(sample.AggregateInstance, sample.SkewMetric, 0.1)
	return out
}
