package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func TestFailuresAreKeptWithTheirRun(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	id1, err := s.BeginRun(ctx, map[string]any{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := s.BeginRun(ctx, map[string]any{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 23, 1, 2, 3, 4, time.UTC)
	cell := Failure{RunID: id1, Kind: FailedCell, Class: "oom", Platform: "native", Options: "memory=64m", Workload: "memory",
		Params: "total-size=1g", Instances: 2, Rep: 1, Error: "instance 0: out of memory (limit 64m)", At: at}
	removal := Failure{RunID: id2, Kind: FailedRemoval, Class: "removal", Platform: "docker", Object: "isobench-r2-1", Error: "dockerd is down", At: at}
	for _, f := range []Failure{cell, removal} {
		if err := s.AddFailure(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	// read back read-only, as report does
	r, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Failures(ctx, id1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != cell {
		t.Fatalf("run %d failures: %+v, want %+v", id1, got, cell)
	}
	all, err := r.Failures(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[1] != removal {
		t.Fatalf("all failures: %+v", all)
	}
}
