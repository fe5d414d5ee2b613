package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// Failure is something a run gave up on and went past: a cell (a
// workload at an instance count on a platform) that failed, or an object
// (an instance) that could not be removed. Failures are stored with their
// run as they happen.
type Failure struct {
	RunID int64
	Kind  string // FailedCell or FailedRemoval
	// Class sorts cell failures: "oom", "timeout", "hung", "unsupported",
	// "error"; for removals "removal".
	Class     string
	Platform  string // the platform's name
	Options   string // its canonical options
	Workload  string
	Params    string
	Instances int
	Rep       int // the repetition that failed (cells)
	Warmup    bool
	Object    string // what was not removed (removals)
	Error     string // the reason, as the user reads it
	At        time.Time
}

// Kinds of failure.
const (
	FailedCell    = "cell"
	FailedRemoval = "removal"
)

// migrateFailures is schema migration 3: the failures table.
func migrateFailures(ctx context.Context, c *sql.Conn) error {
	return execAll(ctx, c, `
CREATE TABLE IF NOT EXISTS failures (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id    INTEGER NOT NULL REFERENCES runs(id),
  kind      TEXT NOT NULL,
  class     TEXT NOT NULL DEFAULT '',
  platform  TEXT NOT NULL DEFAULT '',
  options   TEXT NOT NULL DEFAULT '',
  workload  TEXT NOT NULL DEFAULT '',
  params    TEXT NOT NULL DEFAULT '',
  instances INTEGER NOT NULL DEFAULT 0,
  rep       INTEGER NOT NULL DEFAULT 0,
  warmup    INTEGER NOT NULL DEFAULT 0,
  object    TEXT NOT NULL DEFAULT '',
  error     TEXT NOT NULL DEFAULT '',
  at        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS failures_run ON failures(run_id);`)
}

// AddFailure records f with its run.
func (s *Store) AddFailure(ctx context.Context, f Failure) error {
	if f.At.IsZero() {
		f.At = time.Now()
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO failures(run_id, kind, class, platform, options, workload, params, instances, rep, warmup, object, error, at) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		f.RunID, f.Kind, f.Class, f.Platform, f.Options, f.Workload, f.Params, f.Instances, f.Rep, boolInt(f.Warmup), f.Object, f.Error, f.At.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return fmt.Errorf("store: add failure: %w", err)
	}
	return nil
}

// Failures returns the failures of run runID (0: of every run) in the
// order they happened; none for a store written before failures were kept.
func (s *Store) Failures(ctx context.Context, runID int64) ([]Failure, error) {
	tables, err := tableNames(ctx, s.db)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if !slices.Contains(tables, "failures") {
		return nil, nil
	}
	q := `SELECT run_id, kind, class, platform, options, workload, params, instances, rep, warmup, object, error, at FROM failures`
	var args []any
	if runID != 0 {
		q += ` WHERE run_id = ?`
		args = append(args, runID)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: query failures: %w", err)
	}
	defer rows.Close()
	var out []Failure
	for rows.Next() {
		var f Failure
		var warm int
		var at string
		if err := rows.Scan(&f.RunID, &f.Kind, &f.Class, &f.Platform, &f.Options, &f.Workload, &f.Params, &f.Instances, &f.Rep, &warm, &f.Object, &f.Error, &at); err != nil {
			return nil, fmt.Errorf("store: read failure: %w", err)
		}
		f.Warmup = warm != 0
		f.At, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, f)
	}
	return out, rows.Err()
}
