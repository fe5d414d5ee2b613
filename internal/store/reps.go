package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/isobench/isobench/internal/sample"
)

// RepKey names one repetition of one platform in one cell.
type RepKey = sample.RepKey

// migrateRepMarks is schema migration 5: a repetition is finished only
// when the runner says it ended without error (MarkRep), not because
// some of its samples are stored: an interrupted or failed repetition
// keeps the samples it had, and 'run --resume' must run it again.
// Runs begun before this version (rep_marks 0) have no marks: for them
// a repetition with samples still counts as finished.
func migrateRepMarks(ctx context.Context, c *sql.Conn) error {
	if err := execAll(ctx, c, `
CREATE TABLE IF NOT EXISTS reps_done (
  run_id    INTEGER NOT NULL REFERENCES runs(id),
  platform  TEXT NOT NULL,
  options   TEXT NOT NULL,
  workload  TEXT NOT NULL,
  params    TEXT NOT NULL,
  instances INTEGER NOT NULL,
  rep       INTEGER NOT NULL,
  warmup    INTEGER NOT NULL,
  PRIMARY KEY (run_id, platform, options, workload, params, instances, rep, warmup)
);`); err != nil {
		return err
	}
	return addColumn(ctx, c, "runs", "rep_marks", `INTEGER NOT NULL DEFAULT 0`)
}

// MarkRep records that repetition k of run id finished without error.
func (s *Store) MarkRep(ctx context.Context, id int64, k RepKey) error {
	_, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO reps_done(run_id, platform, options, workload, params, instances, rep, warmup) VALUES(?,?,?,?,?,?,?,?)`,
		id, k.Platform, k.Options, k.Workload, k.Params, k.Instances, k.Rep, boolInt(k.Warmup))
	if err != nil {
		return fmt.Errorf("store: mark repetition finished: %w", err)
	}
	return nil
}

// marksReps says whether run id records finished repetitions (MarkRep).
func (s *Store) marksReps(ctx context.Context, id int64) (bool, error) {
	var m int
	if err := s.db.QueryRowContext(ctx, `SELECT rep_marks FROM runs WHERE id = ?`, id).Scan(&m); err != nil {
		return false, fmt.Errorf("store: run %d: %w", id, err)
	}
	return m != 0, nil
}

// FinishedReps returns the repetitions of run id that finished: those
// marked with MarkRep, or for a run begun before marks existed, those
// with samples.
func (s *Store) FinishedReps(ctx context.Context, id int64) (map[RepKey]bool, error) {
	marks, err := s.marksReps(ctx, id)
	if err != nil {
		return nil, err
	}
	q := `SELECT DISTINCT platform, options, workload, params, instances, rep, warmup FROM samples WHERE run_id = ?`
	if marks {
		q = `SELECT platform, options, workload, params, instances, rep, warmup FROM reps_done WHERE run_id = ?`
	}
	rows, err := s.db.QueryContext(ctx, q, id)
	if err != nil {
		return nil, fmt.Errorf("store: finished repetitions: %w", err)
	}
	defer rows.Close()
	out := map[RepKey]bool{}
	for rows.Next() {
		var k RepKey
		var warm int
		if err := rows.Scan(&k.Platform, &k.Options, &k.Workload, &k.Params, &k.Instances, &k.Rep, &warm); err != nil {
			return nil, fmt.Errorf("store: finished repetitions: %w", err)
		}
		k.Warmup = warm != 0
		out[k] = true
	}
	return out, rows.Err()
}

// DropUnfinished removes the samples of run id's repetitions that did not
// finish (an interrupted or failed repetition's partial samples), before
// 'run --resume' runs them again, and returns how many it removed. A run
// begun before marks existed is left as it is.
func (s *Store) DropUnfinished(ctx context.Context, id int64) (int64, error) {
	marks, err := s.marksReps(ctx, id)
	if err != nil || !marks {
		return 0, err
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM samples WHERE run_id = ? AND NOT EXISTS (
  SELECT 1 FROM reps_done d WHERE d.run_id = samples.run_id AND d.platform = samples.platform AND d.options = samples.options
    AND d.workload = samples.workload AND d.params = samples.params AND d.instances = samples.instances
    AND d.rep = samples.rep AND d.warmup = samples.warmup)`, id)
	if err != nil {
		return 0, fmt.Errorf("store: drop unfinished repetitions of run %d: %w", id, err)
	}
	return res.RowsAffected()
}
