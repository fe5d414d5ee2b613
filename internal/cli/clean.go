package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/isobench/isobench/internal/cleanup"
	"github.com/isobench/isobench/internal/runrec"
	"github.com/isobench/isobench/internal/store"
)

const cleanSynopsis = `clean [--dry-run] [--state-dir DIR] [--db FILE]

Finds everything isobench created on this host (containers, instances, processes,
mounts, cgroups, network namespaces, veths and taps, the bridge and its firewall
rule, leases, scratch and volume directories, VM disks, this host's pods on a
reachable Kubernetes cluster, and what the local cluster's runtimes left when it
died) that belongs to no live run, lists it and removes it; runs whose process died are marked "crashed" (also
those of --db that a process on this host left "running").`

func cmdClean(ctx context.Context, st *State, args []string) error {
	fs := newFlags(st, "clean", cleanSynopsis)
	dry := fs.Bool("dry-run", false, "only list what would be removed")
	db := fs.String("db", "", "`FILE`: also mark this store's runs whose process on this host is gone as crashed")
	stateDir := fs.String("state-dir", "", "`DIR`: a state directory to search besides those of recorded runs (default /var/lib/isobench as root; ISOBENCH_STATE)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usage("clean takes no arguments, got %q", fs.Arg(0))
	}
	var s *store.Store
	if *db != "" {
		if fi, err := os.Stat(*db); err != nil || fi.IsDir() {
			return usage("--db %s: no such store", *db)
		}
		if err := checkStore(ctx, *db); err != nil {
			return err
		}
	}
	ctx = context.WithoutCancel(ctx)
	// every platform's Sweep, with Clean: also this host's pods on a
	// reachable cluster and what a dead local cluster's runtimes left
	err := cleanup.Clean(ctx, st.Stdout, cleanup.Options{StateDirs: []string{st.stateDir(*stateDir)}, Platforms: st.Platforms, Clean: true}, *dry)
	if *db != "" && !*dry {
		var oerr error
		if s, oerr = store.Open(ctx, *db); oerr != nil {
			return errors.Join(err, oerr)
		}
		defer s.Close()
		st.markDeadRuns(ctx, st.Stdout, s, 0)
	}
	return err
}

// runRecord is what `isobench run` does for crash recovery before it
// starts: it removes what dead runs left (saying so on stderr) and records
// this run (with a fresh token for its instances), so that a later run or
// `isobench clean` knows it is alive. The record is never nil; End it when
// the run ends.
func (st *State) runRecord(ctx context.Context, stateDir, db string) *runrec.Record {
	cleanup.Sweep(context.WithoutCancel(ctx), st.Stderr, cleanup.Options{StateDirs: []string{stateDir}, Platforms: st.Platforms})
	r := runrec.Record{Token: token(), StateDir: stateDir, DB: db, TempDir: os.TempDir()}
	rec, err := runrec.Begin("", r)
	if err != nil {
		fmt.Fprintf(st.Stderr, "warning: this run is not recorded as running (after a crash, 'isobench clean' removes its objects only when no other isobench runs): %v\n", err)
		return &r
	}
	return rec
}

// runStarted notes the run's id in its record, and marks the store's runs
// that are still "running" but whose process on this host is gone as
// crashed.
func (st *State) runStarted(ctx context.Context, rec *runrec.Record, s *store.Store, id int64) {
	rec.SetRunID(id)
	st.markDeadRuns(ctx, st.Stderr, s, id)
}

// markDeadRuns marks the store's "running" runs (but skip) whose process
// on this host is gone as crashed, saying so on w.
func (st *State) markDeadRuns(ctx context.Context, w io.Writer, s *store.Store, skip int64) {
	runs, err := s.RunningRuns(ctx)
	if err != nil {
		return
	}
	host, _ := os.Hostname()
	for _, r := range runs {
		if r.ID == skip || r.PID <= 0 || r.Hostname != host {
			continue
		}
		// alive (not a zombie), and not a later process given the same pid
		if at := runrec.StartedAt(r.PID); runrec.Alive(r.PID, 0) && !at.IsZero() && !at.After(r.Started.Add(time.Second)) {
			continue
		}
		note := fmt.Sprintf("isobench process %d died without ending the run", r.PID)
		if err := s.MarkCrashed(ctx, r.ID, note); err == nil {
			fmt.Fprintf(w, "run %d in this store was left running by process %d, which is gone: marked crashed\n", r.ID, r.PID)
		}
	}
}
