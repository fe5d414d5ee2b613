package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The schema isobench wrote before migrations (user_version 0); the oldest
// stores lack runs.error too.
const oldRuns = `CREATE TABLE runs (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  started     TEXT NOT NULL,
  finished    TEXT,
  status      TEXT NOT NULL DEFAULT 'running',
  study       TEXT NOT NULL DEFAULT '{}',
  fingerprint TEXT NOT NULL DEFAULT '{}'%s
);`

const oldSamples = `CREATE TABLE samples (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id      INTEGER NOT NULL REFERENCES runs(id),
  platform    TEXT NOT NULL, options TEXT NOT NULL, workload TEXT NOT NULL, params TEXT NOT NULL,
  instances   INTEGER NOT NULL, instance INTEGER NOT NULL, rep INTEGER NOT NULL, warmup INTEGER NOT NULL,
  metric      TEXT NOT NULL, unit TEXT NOT NULL, better TEXT NOT NULL, value REAL NOT NULL,
  start       TEXT NOT NULL, duration_ns INTEGER NOT NULL, tags TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX samples_cell ON samples(run_id, workload, metric, platform, instances);
INSERT INTO runs(started, finished, status, study, fingerprint) VALUES('2025-01-02T03:04:05Z', '2025-01-02T03:05:00Z', 'done', '{"reps":"5"}', '{"kernel":"6.1"}');
INSERT INTO samples(run_id, platform, options, workload, params, instances, instance, rep, warmup, metric, unit, better, value, start, duration_ns)
  VALUES(1, 'native', '', 'cpu', 'threads=1', 1, 0, 0, 0, 'events_per_sec', 'events/s', 'higher', 1234.5, '2025-01-02T03:04:06Z', 1000000000);`

func writeOldStore(t *testing.T, path string, withError bool) {
	t.Helper()
	extra := ""
	if withError {
		extra = ",\n  error TEXT NOT NULL DEFAULT ''"
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := strings.Replace(oldRuns, "%s", extra, 1) + oldSamples
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
}

func userVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOldStoreMigrates(t *testing.T) {
	for _, withError := range []bool{false, true} {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "old.db")
		writeOldStore(t, path, withError)
		if v := userVersion(t, path); v != 0 {
			t.Fatalf("old store at version %d", v)
		}
		// A read-only open reads it as it is, without migrating it.
		before, _ := os.ReadFile(path)
		ro, err := OpenReadOnly(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := ro.Runs(ctx)
		if err != nil || len(runs) != 1 || runs[0].Status != "done" || runs[0].Fingerprint["kernel"] != "6.1" || runs[0].PID != 0 {
			t.Fatalf("read-only runs of an old store: %v %+v", err, runs)
		}
		ro.Close()
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) || userVersion(t, path) != 0 {
			t.Fatal("a read-only open changed an old store")
		}

		s, err := Open(ctx, path)
		if err != nil {
			t.Fatalf("open old store (error column %v): %v", withError, err)
		}
		if v := userVersion(t, path); v != SchemaVersion || SchemaVersion < 2 {
			t.Fatalf("migrated to version %d, want %d", v, SchemaVersion)
		}
		got, err := s.Samples(ctx, Filter{})
		if err != nil || len(got) != 1 || got[0].Value != 1234.5 || got[0].Platform != "native" {
			t.Fatalf("old sample after migration: %v %+v", err, got)
		}
		runs, err = s.Runs(ctx)
		if err != nil || len(runs) != 1 || runs[0].Status != "done" || runs[0].Error != "" || runs[0].PID != 0 || runs[0].Hostname != "" {
			t.Fatalf("old run after migration: %v %+v", err, runs)
		}
		id, err := s.BeginRun(ctx, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		host, _ := os.Hostname()
		runs, _ = s.Runs(ctx)
		if last := runs[len(runs)-1]; last.ID != id || last.PID != os.Getpid() || last.Hostname != host || last.Status != StatusRunning {
			t.Fatalf("new run in a migrated store: %+v", last)
		}
		s.Close()
		// Reopening does not migrate again.
		s, err = Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if v := userVersion(t, path); v != SchemaVersion {
			t.Fatalf("reopened at version %d", v)
		}
	}
}

func TestNewerStoreIsRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, _ := sql.Open("sqlite", path)
	db.Exec(`PRAGMA user_version = 999`)
	db.Close()
	if _, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("a store from a newer isobench: %v", err)
	}
}

func TestRunningRunsAndMarkCrashed(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done, _ := s.BeginRun(ctx, nil, nil)
	s.EndRun(ctx, done, StatusDone, nil)
	a, _ := s.BeginRun(ctx, nil, nil)
	b, _ := s.BeginRun(ctx, nil, nil)
	rr, err := s.RunningRuns(ctx)
	host, _ := os.Hostname()
	if err != nil || len(rr) != 2 || rr[0].ID != a || rr[1].ID != b || rr[0].PID != os.Getpid() || rr[0].Hostname != host || rr[0].Started.IsZero() {
		t.Fatalf("running runs: %v %+v", err, rr)
	}
	if err := s.MarkCrashed(ctx, a, "process 123 gone; removed 2 containers"); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkCrashed(ctx, a, "again"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("marking a crashed run again: %v", err)
	}
	if err := s.MarkCrashed(ctx, done, "x"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("marking a finished run: %v", err)
	}
	rr, _ = s.RunningRuns(ctx)
	if len(rr) != 1 || rr[0].ID != b {
		t.Fatalf("running after MarkCrashed: %+v", rr)
	}
	runs, _ := s.Runs(ctx)
	for _, r := range runs {
		if r.ID == a && (r.Status != StatusCrashed || r.Error != "process 123 gone; removed 2 containers" || r.Finished.IsZero()) {
			t.Fatalf("crashed run: %+v", r)
		}
		if r.ID == done && r.Status != StatusDone {
			t.Fatalf("finished run changed: %+v", r)
		}
	}
}
