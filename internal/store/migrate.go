package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations[i] brings a store from schema version i to i+1; the version
// is SQLite's PRAGMA user_version. A migration that has shipped is never
// edited: a schema change is a new entry at the end. All pending
// migrations and the new version are committed in one transaction, so a
// store is always at one numbered version.
var migrations = []func(ctx context.Context, c *sql.Conn) error{
	// 1: runs and samples. Stores written before migrations existed are
	// at version 0 with these tables already, some without runs.error.
	func(ctx context.Context, c *sql.Conn) error {
		if err := execAll(ctx, c, `
CREATE TABLE IF NOT EXISTS runs (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  started     TEXT NOT NULL,
  finished    TEXT,
  status      TEXT NOT NULL DEFAULT 'running',
  study       TEXT NOT NULL DEFAULT '{}',
  fingerprint TEXT NOT NULL DEFAULT '{}',
  error       TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS samples (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id      INTEGER NOT NULL REFERENCES runs(id),
  platform    TEXT NOT NULL,
  options     TEXT NOT NULL,
  workload    TEXT NOT NULL,
  params      TEXT NOT NULL,
  instances   INTEGER NOT NULL,
  instance    INTEGER NOT NULL,
  rep         INTEGER NOT NULL,
  warmup      INTEGER NOT NULL,
  metric      TEXT NOT NULL,
  unit        TEXT NOT NULL,
  better      TEXT NOT NULL,
  value       REAL NOT NULL,
  start       TEXT NOT NULL,
  duration_ns INTEGER NOT NULL,
  tags        TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS samples_cell ON samples(run_id, workload, metric, platform, instances);`); err != nil {
			return err
		}
		return addColumn(ctx, c, "runs", "error", `TEXT NOT NULL DEFAULT ''`)
	},
	// 2: who runs a run, so a crashed one (its process gone) is recognised
	// and marked 'crashed'. Old runs have NULL for both.
	func(ctx context.Context, c *sql.Conn) error {
		if err := addColumn(ctx, c, "runs", "pid", `INTEGER`); err != nil {
			return err
		}
		return addColumn(ctx, c, "runs", "hostname", `TEXT`)
	},
	// 3: failed cells and failed removals, kept with their run (failures.go).
	migrateFailures,
	// 4: how a run was started (its command line, or the study file), so
	// 'isobench runs' lists it and 'run --resume' replays its plan, and
	// where a merged run came from (runs.go).
	migrateRunsProvenance,
	// 5: finished repetitions, marked by the runner (reps.go).
	migrateRepMarks,
}

// SchemaVersion is the schema version this isobench writes.
var SchemaVersion = len(migrations)

// migrate applies the pending migrations under a write lock taken before
// the version is read (BEGIN IMMEDIATE), so two runs opening one new store
// at once migrate it once.
func (s *Store) migrate(ctx context.Context) (err error) {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("lock for migration: %w", err)
	}
	defer func() {
		if err != nil {
			c.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	var v int
	if err := c.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this isobench's %d: use a newer isobench", v, len(migrations))
	}
	if v == len(migrations) {
		_, err := c.ExecContext(ctx, `COMMIT`)
		return err
	}
	for i := v; i < len(migrations); i++ {
		if err := migrations[i](ctx, c); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	// PRAGMA takes no bound parameters; the value is our own integer.
	if _, err := c.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, len(migrations))); err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, `COMMIT`); err != nil {
		return fmt.Errorf("commit migrations: %w", err)
	}
	return nil
}

func execAll(ctx context.Context, c *sql.Conn, q string) error {
	_, err := c.ExecContext(ctx, q)
	return err
}

// addColumn adds a column unless the table has it already (a store written
// between two versions); any other error is returned, never ignored.
func addColumn(ctx context.Context, c *sql.Conn, table, col, decl string) error {
	var n int
	if err := c.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?`, table, col).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	_, err := c.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN %s %s`, table, col, decl))
	return err
}
