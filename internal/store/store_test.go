package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
)

func TestRoundTripAndSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.BeginRun(ctx, map[string]any{"reps": 3}, map[string]string{"kernel": "k"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	in := []sample.Sample{
		{RunID: id, Platform: "docker", Options: "cpus=1", Workload: "cpu", Params: "threads=2", Instances: 2, Instance: 1, Rep: 2,
			Metric: "events_per_sec", Unit: "events/s", Better: sample.Higher, Value: 1234.5, Start: start, Duration: 3 * time.Second, Tags: map[string]string{"network": "bridge"}},
		{RunID: id, Platform: "native", Workload: "cpu", Instances: 1, Instance: sample.AggregateInstance, Warmup: true,
			Metric: "events_per_sec", Unit: "events/s", Better: sample.Higher, Value: 1, Start: start},
	}
	if err := s.Add(ctx, in); err != nil {
		t.Fatal(err)
	}
	// Not closed on purpose: a killed process never closes. Reopen.
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Samples(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d samples", len(got))
	}
	g := got[0]
	if g.Platform != "docker" || g.Options != "cpus=1" || g.Instance != 1 || g.Rep != 2 || g.Value != 1234.5 || g.Better != sample.Higher ||
		!g.Start.Equal(start) || g.Duration != 3*time.Second || g.Tags["network"] != "bridge" || g.Warmup {
		t.Fatalf("round trip changed the sample: %+v", g)
	}
	if !got[1].Warmup || got[1].Instance != sample.AggregateInstance {
		t.Fatalf("warm-up/aggregate lost: %+v", got[1])
	}
	noWarm, _ := s2.Samples(ctx, Filter{NoWarmup: true})
	if len(noWarm) != 1 {
		t.Fatalf("NoWarmup: %d samples", len(noWarm))
	}
	if err := s2.EndRun(ctx, id, "failed", errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	runs, _ := s2.Runs(ctx)
	if len(runs) != 1 || runs[0].Status != "failed" || runs[0].Error != "boom" || runs[0].Fingerprint["kernel"] != "k" {
		t.Fatalf("runs: %+v", runs)
	}
	id2, _ := s2.BeginRun(ctx, nil, nil)
	s2.Add(ctx, []sample.Sample{{RunID: id2, Platform: "p", Workload: "w", Metric: "m", Unit: "u", Better: sample.Lower, Value: 2, Start: start}})
	latest, _ := s2.Samples(ctx, Filter{LatestRunOnly: true})
	if len(latest) != 1 || latest[0].RunID != id2 {
		t.Fatalf("latest run filter: %+v", latest)
	}
}

func TestRejectsNonDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "not.db")
	if err := writeFile(path, "this is not sqlite, just text that is long enough to look like a header......"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), path); err == nil {
		t.Fatal("opened a text file as a store")
	}
}
