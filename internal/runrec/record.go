package runrec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Dir holds one record per running isobench run, named by its pid. It is
// host-wide (like the bridge) whatever the run's state directory, and on
// a tmpfs: after a reboot no run is alive, and no record is either.
const Dir = "/run/isobench/runs"

// Record says which process a run is and where it keeps things.
type Record struct {
	Pid      int       `json:"pid"`
	Start    uint64    `json:"start"` // the process's start time (StartTime)
	Hostname string    `json:"hostname"`
	Token    string    `json:"token"`     // on every instance of the run (runner.Token)
	StateDir string    `json:"state_dir"` // platform.Env.StateDir
	TempDir  string    `json:"temp_dir"`  // os.TempDir() of the run (native scratch)
	DB       string    `json:"db"`        // the store, absolute
	RunID    int64     `json:"run_id"`    // the run's id in DB (0 until known)
	Began    time.Time `json:"began"`

	path string
}

// Alive reports whether the run's process is still running.
func (r *Record) Alive() bool { return Alive(r.Pid, r.Start) }

// Path is the record's file.
func (r *Record) Path() string { return r.path }

// Begin writes the record of this process's run under dir (Dir when
// empty). The caller removes it with End when the run ends, however it
// ends; a record left behind names a dead run.
func Begin(dir string, r Record) (*Record, error) {
	if dir == "" {
		dir = Dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	r.Pid, r.Start = Self()
	if r.Hostname == "" {
		r.Hostname, _ = os.Hostname()
	}
	if r.TempDir == "" {
		r.TempDir = os.TempDir()
	}
	if r.DB != "" {
		if abs, err := filepath.Abs(r.DB); err == nil {
			r.DB = abs
		}
	}
	if r.Began.IsZero() {
		r.Began = time.Now().UTC()
	}
	r.path = filepath.Join(dir, strconv.Itoa(r.Pid)+".json")
	return &r, r.write()
}

// SetRunID records the run's id in its store.
func (r *Record) SetRunID(id int64) error {
	r.RunID = id
	if r.path == "" {
		return nil
	}
	return r.write()
}

func (r *Record) write() error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("run record: %w", err)
	}
	return nil
}

// End removes the record.
func (r *Record) End() error {
	if r == nil || r.path == "" {
		return nil
	}
	if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("run record: %w", err)
	}
	return nil
}

// List reads every record under dir (Dir when empty), sorted by pid.
// Unreadable files are skipped.
func List(dir string) []*Record {
	if dir == "" {
		dir = Dir
	}
	es, _ := os.ReadDir(dir)
	var out []*Record
	for _, e := range es {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var r Record
		if json.Unmarshal(b, &r) != nil || r.Pid <= 0 {
			continue
		}
		r.path = p
		out = append(out, &r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pid < out[j].Pid })
	return out
}
