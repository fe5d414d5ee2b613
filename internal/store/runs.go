package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/isobench/isobench/internal/sample"
)

// migrateRunsProvenance is schema migration 4: runs.command (the command
// line or study file that started the run) and runs.origin (for a run
// merged from another store: "HOST:PATH#ID", the store and run it was).
func migrateRunsProvenance(ctx context.Context, c *sql.Conn) error {
	if err := addColumn(ctx, c, "runs", "command", `TEXT NOT NULL DEFAULT ''`); err != nil {
		return err
	}
	return addColumn(ctx, c, "runs", "origin", `TEXT NOT NULL DEFAULT ''`)
}

// SetCommand records the command line that started run id.
func (s *Store) SetCommand(ctx context.Context, id int64, command string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET command=? WHERE id=?`, command, id); err != nil {
		return fmt.Errorf("store: set command of run %d: %w", id, err)
	}
	return nil
}

// Run returns run id.
func (s *Store) Run(ctx context.Context, id int64) (Run, error) {
	runs, err := s.Runs(ctx)
	if err != nil {
		return Run{}, err
	}
	for _, r := range runs {
		if r.ID == id {
			return r, nil
		}
	}
	return Run{}, fmt.Errorf("store: %w: %d", ErrNoSuchRun, id)
}

// ErrNoSuchRun is returned for a run id the store does not hold.
var ErrNoSuchRun = errors.New("no such run")

// ErrRunFinished is returned by Reopen for a run that finished ("done").
var ErrRunFinished = errors.New("the run finished: there is nothing to resume")

// Reopen marks run id as running again, by this process on this host, to
// resume it. A run that finished is refused with ErrRunFinished, one that
// is running with ErrStillRunning (mark a dead one crashed first).
func (s *Store) Reopen(ctx context.Context, id int64) error {
	r, err := s.Run(ctx, id)
	if err != nil {
		return err
	}
	switch r.Status {
	case StatusDone:
		return fmt.Errorf("store: run %d: %w", id, ErrRunFinished)
	case StatusRunning:
		return fmt.Errorf("store: run %d: %w", id, ErrStillRunning)
	}
	host, _ := os.Hostname()
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET status=?, finished=NULL, error='', pid=?, hostname=? WHERE id=?`,
		StatusRunning, os.Getpid(), host, id); err != nil {
		return fmt.Errorf("store: reopen run %d: %w", id, err)
	}
	return nil
}

// ErrStillRunning is returned by Reopen for a run still marked running.
var ErrStillRunning = errors.New("the run is still running (if its process is gone, 'isobench run' or 'isobench clean' marks it crashed)")

// ErrMergeTarget is returned by Merge for an output that exists and is not
// an isobench store, or that is one of the inputs.
var ErrMergeTarget = errors.New("merge output")

// MergeReport says what Merge did with each input run.
type MergeReport struct {
	Input   string
	FromRun int64
	ToRun   int64 // 0: skipped, already in the output
	Samples int
}

// Merge copies every run of the stores at inputs (read only) into the
// store at out, created if it does not exist and extended if it is a
// store. Each run gets a new id in out and keeps its start and end, status,
// error, study, fingerprint, pid, host and command; its origin records the
// host, store path and old id (an origin it had already, from an earlier
// merge, is kept). Samples and failures are re-pointed to the new id. A
// run already in out (same start time, host and pid) is skipped, so
// merging again adds only what is new. Each run is copied in one
// transaction.
func Merge(ctx context.Context, out string, inputs []string) ([]MergeReport, error) {
	absOut, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrMergeTarget, out, err)
	}
	for _, in := range inputs {
		if a, err := filepath.Abs(in); err == nil && sameFile(a, absOut) {
			return nil, fmt.Errorf("%w %s is also an input: give a new file or a store to extend that is not merged into itself", ErrMergeTarget, out)
		}
	}
	// Open the inputs first: a wrong input leaves out untouched.
	var srcs []*Store
	defer func() {
		for _, s := range srcs {
			s.Close()
		}
	}()
	for _, in := range inputs {
		s, err := OpenReadOnly(ctx, in)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, s)
	}
	if fi, err := os.Stat(out); err == nil && fi.Size() > 0 {
		ro, err := OpenReadOnly(ctx, out)
		if err != nil {
			return nil, fmt.Errorf("%w %s exists and is not an isobench store; it was left unchanged: %w", ErrMergeTarget, out, err)
		}
		ro.Close()
	}
	dst, err := Open(ctx, out)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	have, err := dst.Runs(ctx)
	if err != nil {
		return nil, err
	}
	type ident struct {
		started, host string
		pid           int
	}
	seen := map[ident]bool{}
	for _, r := range have {
		seen[ident{r.Started.Format(time.RFC3339Nano), r.Hostname, r.PID}] = true
	}
	host, _ := os.Hostname()
	var rep []MergeReport
	for i, src := range srcs {
		runs, err := src.Runs(ctx)
		if err != nil {
			return rep, err
		}
		absIn, _ := filepath.Abs(inputs[i])
		for _, r := range runs {
			id := ident{r.Started.Format(time.RFC3339Nano), r.Hostname, r.PID}
			if seen[id] {
				rep = append(rep, MergeReport{Input: inputs[i], FromRun: r.ID})
				continue
			}
			samples, err := src.Samples(ctx, Filter{RunID: r.ID})
			if err != nil {
				return rep, err
			}
			fails, err := src.Failures(ctx, r.ID)
			if err != nil {
				return rep, err
			}
			if r.Origin == "" {
				r.Origin = fmt.Sprintf("%s:%s#%d", host, absIn, r.ID)
			}
			newID, err := dst.importRun(ctx, r, samples, fails)
			if err != nil {
				return rep, fmt.Errorf("merging run %d of %s: %w", r.ID, inputs[i], err)
			}
			seen[id] = true
			rep = append(rep, MergeReport{Input: inputs[i], FromRun: r.ID, ToRun: newID, Samples: len(samples)})
		}
	}
	return rep, nil
}

func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// importRun inserts r with a new id, its samples and failures pointing to
// it, in one transaction.
func (s *Store) importRun(ctx context.Context, r Run, samples []sample.Sample, fails []Failure) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var finished any
	if !r.Finished.IsZero() {
		finished = r.Finished.UTC().Format(time.RFC3339Nano)
	}
	var pid any
	if r.PID != 0 {
		pid = r.PID
	}
	study := string(r.Study)
	if r.Fingerprint == nil {
		r.Fingerprint = map[string]string{}
	}
	if study == "" {
		study = "{}"
	}
	fp, _ := json.Marshal(r.Fingerprint)
	res, err := tx.ExecContext(ctx, `INSERT INTO runs(started, finished, status, study, fingerprint, error, pid, hostname, command, origin) VALUES(?,?,?,?,?,?,?,?,?,?)`,
		r.Started.UTC().Format(time.RFC3339Nano), finished, r.Status, study, string(fp), r.Error, pid, r.Hostname, r.Command, r.Origin)
	if err != nil {
		return 0, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	if err := addSamples(ctx, tx, id, samples); err != nil {
		return 0, err
	}
	for _, f := range fails {
		if _, err := tx.ExecContext(ctx, `INSERT INTO failures(run_id, kind, class, platform, options, workload, params, instances, rep, warmup, object, error, at) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)`,
			id, f.Kind, f.Class, f.Platform, f.Options, f.Workload, f.Params, f.Instances, f.Rep, boolInt(f.Warmup), f.Object, f.Error, f.At.UTC().Format(time.RFC3339Nano)); err != nil {
			return 0, err
		}
	}
	return id, tx.Commit()
}

// SampleCounts returns the number of measured (not warm-up) samples per run.
func (s *Store) SampleCounts(ctx context.Context) (map[int64]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, COUNT(*) FROM samples WHERE warmup = 0 GROUP BY run_id`)
	if err != nil {
		return nil, fmt.Errorf("store: count samples: %w", err)
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("store: count samples: %w", err)
		}
		out[id] = n
	}
	return out, rows.Err()
}
