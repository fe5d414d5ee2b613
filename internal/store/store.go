// Package store keeps runs and samples in an embedded SQLite file (pure-Go
// driver, so the binary stays static). Samples are committed as they come,
// so nothing finished is lost when a run is interrupted.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/sample"

	_ "modernc.org/sqlite"
)

// Store is an open result database.
type Store struct {
	db   *sql.DB
	cols map[string]bool // columns of runs
}

// ErrEmptyPath is returned for an empty store path: it would otherwise
// open a temporary database that is thrown away on close.
var ErrEmptyPath = errors.New("the store path is empty: give a file name, e.g. --db isobench.db")

// uri turns a file path into the driver's SQLite URI so that every byte of
// the path is part of the file name: the driver always opens URIs, where
// '?' starts parameters, '#' a fragment, '%' an escape, and ":memory:" or ""
// name no file at all. The path is made absolute and every byte outside
// [A-Za-z0-9/._~-] is percent-encoded, so nothing in it is read as URI syntax.
func uri(path string, params ...string) (string, error) {
	if path == "" {
		return "", ErrEmptyPath
	}
	if strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("store path %q contains a NUL byte", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("store path %s: %w", path, err)
	}
	return "file:" + escapePath(abs) + "?" + strings.Join(params, "&"), nil
}

func escapePath(p string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '/', c == '.', c == '_', c == '~', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// ErrNotStore is returned for a file that is not an isobench store: another
// SQLite database, or not a database at all. Such a file is never changed.
var ErrNotStore = errors.New("not an isobench store")

// Open opens the store at path for writing, creating it if it does not
// exist; path is always a plain file path, never a URI. An existing file
// that is not an isobench store (another SQLite database, any other file)
// is refused before anything is written to it.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := openDB(path, "_pragma=busy_timeout(5000)", "_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, err
	}
	s := &Store{db: db}
	if err := s.init(ctx, path); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// openDB opens the SQLite file at path with the URI parameters params,
// on one connection.
func openDB(path string, params ...string) (*sql.DB, error) {
	u, err := uri(path, params...)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", u)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

func (s *Store) init(ctx context.Context, path string) error {
	tables, err := tableNames(ctx, s.db)
	if err != nil {
		return fmt.Errorf("store %s: %w (%w)", path, ErrNotStore, err)
	}
	if !isStore(tables) && len(tables) > 0 {
		return fmt.Errorf("store %s: %w: it is another SQLite database (tables %v)", path, ErrNotStore, tables)
	}
	// WAL only once the file is known to be empty or a store: the mode
	// is persistent in the file.
	if _, err := s.db.ExecContext(ctx, `PRAGMA journal_mode=WAL`); err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	if err := s.migrate(ctx); err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	return s.probe(ctx)
}

// OpenReadOnly opens an existing store for reading only (SQLite mode=ro):
// it never creates the file, a table or an index, never migrates and never
// changes the journal mode. A file that is not an isobench store is refused
// with ErrNotStore.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	db, err := openDB(path, "mode=ro", "_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	tables, err := tableNames(ctx, db)
	if err != nil {
		db.Close()
		if _, serr := os.Stat(path); serr != nil {
			return nil, fmt.Errorf("store %s: %w", path, serr)
		}
		return nil, fmt.Errorf("store %s: %w (%w)", path, ErrNotStore, err)
	}
	if !isStore(tables) {
		db.Close()
		return nil, fmt.Errorf("store %s: %w (it has no runs and samples tables)", path, ErrNotStore)
	}
	s := &Store{db: db}
	if err := s.probe(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func tableNames(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

func isStore(tables []string) bool {
	var runs, samples bool
	for _, t := range tables {
		runs = runs || t == "runs"
		samples = samples || t == "samples"
	}
	return runs && samples
}

// probe notes which optional columns the runs table has, so a read-only
// store written by an older isobench is read without migrating it.
func (s *Store) probe(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM pragma_table_info('runs')`)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	s.cols = map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		s.cols[n] = true
	}
	return rows.Err()
}

// col is column name when the runs table has it, else def.
func (s *Store) col(name, def string) string {
	if s.cols[name] {
		return name
	}
	return def
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Run statuses. A run is "running" from BeginRun until EndRun; one whose
// process died without ending it is marked "crashed" by MarkCrashed.
const (
	StatusRunning     = "running"
	StatusDone        = "done"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
	StatusCrashed     = "crashed"
)

// Run is one invocation of `isobench run`.
type Run struct {
	ID          int64
	Started     time.Time
	Finished    time.Time
	Status      string
	Study       json.RawMessage
	Fingerprint map[string]string
	Error       string // why a run failed, was interrupted or crashed
	PID         int    // the isobench process that ran it (0: unknown, an old store)
	Hostname    string // the host it ran on ("" if unknown)
	Command     string // the command line that started it ("" if unknown: an older store)
	Origin      string // for a merged run: the store and run id it came from ("" otherwise)
}

// BeginRun records a new run, with this process's pid and host name, and
// returns its id.
func (s *Store) BeginRun(ctx context.Context, study any, fingerprint map[string]string) (int64, error) {
	sj, err := json.Marshal(study)
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	fj, err := json.Marshal(fingerprint)
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	host, _ := os.Hostname()
	res, err := s.db.ExecContext(ctx, `INSERT INTO runs(started, study, fingerprint, pid, hostname, rep_marks) VALUES(?,?,?,?,?,1)`,
		time.Now().UTC().Format(time.RFC3339Nano), string(sj), string(fj), os.Getpid(), host)
	if err != nil {
		return 0, fmt.Errorf("store: begin run: %w", err)
	}
	return res.LastInsertId()
}

// EndRun marks a run finished with status ("done", "interrupted",
// "failed") and, for the last two, the error that ended it.
func (s *Store) EndRun(ctx context.Context, id int64, status string, cause error) error {
	msg := ""
	if cause != nil {
		msg = cause.Error()
	}
	_, err := s.db.ExecContext(ctx, `UPDATE runs SET finished=?, status=?, error=? WHERE id=?`,
		time.Now().UTC().Format(time.RFC3339Nano), status, msg, id)
	if err != nil {
		return fmt.Errorf("store: end run: %w", err)
	}
	return nil
}

// Add commits samples in one transaction.
func (s *Store) Add(ctx context.Context, samples []sample.Sample) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	if err := addSamples(ctx, tx, 0, samples); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit samples: %w", err)
	}
	return nil
}

// addSamples inserts samples in tx, with run id runID when it is not 0
// (merge re-points them) and their own otherwise.
func addSamples(ctx context.Context, tx *sql.Tx, runID int64, samples []sample.Sample) error {
	st, err := tx.PrepareContext(ctx, `INSERT INTO samples(run_id, platform, options, workload, params, instances, instance, rep, warmup, metric, unit, better, value, start, duration_ns, tags) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer st.Close()
	for _, x := range samples {
		if runID != 0 {
			x.RunID = runID
		}
		tags, _ := json.Marshal(x.Tags)
		if x.Tags == nil {
			tags = []byte("{}")
		}
		if _, err := st.ExecContext(ctx, x.RunID, x.Platform, x.Options, x.Workload, x.Params, x.Instances, x.Instance, x.Rep, boolInt(x.Warmup),
			x.Metric, x.Unit, string(x.Better), x.Value, x.Start.UTC().Format(time.RFC3339Nano), int64(x.Duration), string(tags)); err != nil {
			return fmt.Errorf("store: add sample: %w", err)
		}
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Filter selects samples; zero fields match everything.
type Filter struct {
	RunID         int64 // 0: all runs
	LatestRunOnly bool  // only the newest run
	NoWarmup      bool
}

// Samples returns samples in insertion order.
func (s *Store) Samples(ctx context.Context, f Filter) ([]sample.Sample, error) {
	q := `SELECT run_id, platform, options, workload, params, instances, instance, rep, warmup, metric, unit, better, value, start, duration_ns, tags FROM samples WHERE 1=1`
	var args []any
	if f.LatestRunOnly && f.RunID == 0 {
		q += ` AND run_id = (SELECT MAX(id) FROM runs)`
	}
	if f.RunID != 0 {
		q += ` AND run_id = ?`
		args = append(args, f.RunID)
	}
	if f.NoWarmup {
		q += ` AND warmup = 0`
	}
	q += ` ORDER BY id`
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: query samples: %w", err)
	}
	defer rows.Close()
	var out []sample.Sample
	for rows.Next() {
		var x sample.Sample
		var warm int
		var better, start, tags string
		var dur int64
		if err := rows.Scan(&x.RunID, &x.Platform, &x.Options, &x.Workload, &x.Params, &x.Instances, &x.Instance, &x.Rep, &warm,
			&x.Metric, &x.Unit, &better, &x.Value, &start, &dur, &tags); err != nil {
			return nil, fmt.Errorf("store: read sample: %w", err)
		}
		x.Warmup = warm != 0
		x.Better = sample.Better(better)
		x.Duration = time.Duration(dur)
		x.Start, _ = time.Parse(time.RFC3339Nano, start)
		if tags != "" && tags != "{}" {
			json.Unmarshal([]byte(tags), &x.Tags)
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// Runs lists the runs, oldest first.
func (s *Store) Runs(ctx context.Context) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, started, COALESCE(finished,''), status, study, fingerprint, `+
		s.col("error", "''")+`, COALESCE(`+s.col("pid", "NULL")+`, 0), COALESCE(`+s.col("hostname", "NULL")+`, ''), `+
		s.col("command", "''")+`, `+s.col("origin", "''")+` FROM runs ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: query runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var started, finished, study, fp string
		if err := rows.Scan(&r.ID, &started, &finished, &r.Status, &study, &fp, &r.Error, &r.PID, &r.Hostname, &r.Command, &r.Origin); err != nil {
			return nil, fmt.Errorf("store: read run: %w", err)
		}
		r.Started, _ = time.Parse(time.RFC3339Nano, started)
		r.Finished, _ = time.Parse(time.RFC3339Nano, finished)
		r.Study = json.RawMessage(study)
		json.Unmarshal([]byte(fp), &r.Fingerprint)
		out = append(out, r)
	}
	return out, rows.Err()
}

// ErrNoRuns is returned when a store holds no run.
var ErrNoRuns = errors.New("the store holds no run yet: run 'isobench run ...' first")

// RunningRun is a run the store says is still running: its process, on
// its host, may be alive or may have died without ending it.
type RunningRun struct {
	ID       int64
	PID      int    // 0 when not recorded (a run begun by an older isobench)
	Hostname string // "" when not recorded
	Started  time.Time
}

// RunningRuns lists the runs with status "running", oldest first.
func (s *Store) RunningRuns(ctx context.Context) ([]RunningRun, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, COALESCE(`+s.col("pid", "NULL")+`, 0), COALESCE(`+s.col("hostname", "NULL")+`, ''), started FROM runs WHERE status = ? ORDER BY id`, StatusRunning)
	if err != nil {
		return nil, fmt.Errorf("store: query running runs: %w", err)
	}
	defer rows.Close()
	var out []RunningRun
	for rows.Next() {
		var r RunningRun
		var started string
		if err := rows.Scan(&r.ID, &r.PID, &r.Hostname, &started); err != nil {
			return nil, fmt.Errorf("store: read running run: %w", err)
		}
		r.Started, _ = time.Parse(time.RFC3339Nano, started)
		out = append(out, r)
	}
	return out, rows.Err()
}

// ErrNotRunning is returned by MarkCrashed for a run that is not (or no
// longer) "running", e.g. one another process has just ended or marked.
var ErrNotRunning = errors.New("run is not running")

// MarkCrashed ends a "running" run whose process is gone: status
// "crashed", finished now, and note (what was found and cleaned) as its
// error. It changes only a run that is still "running".
func (s *Store) MarkCrashed(ctx context.Context, id int64, note string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET finished=?, status=?, error=? WHERE id=? AND status=?`,
		time.Now().UTC().Format(time.RFC3339Nano), StatusCrashed, note, id, StatusRunning)
	if err != nil {
		return fmt.Errorf("store: mark run %d crashed: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: mark run %d crashed: %w", id, err)
	} else if n == 0 {
		return fmt.Errorf("store: mark run %d crashed: %w", id, ErrNotRunning)
	}
	return nil
}
