package runner

import (
	"context"
	"errors"
	"os"

	"github.com/isobench/isobench/internal/store"
)

// ResumeKeys are the fingerprint entries a resumed run must share with
// the run as it began: the same host, kernel, hardware and isobench build.
var ResumeKeys = []string{"hostname", "kernel", "cpu_model", "cores", "memory_total", "cgroup_version", "isobench_version", "isobench_commit"}

// Change is a fingerprint entry that differs (ResumeDiff).
type Change struct{ Key, Was, Is string }

// ResumeDiff lists where the host and build now differ from those a run
// began with, in ResumeKeys' order (a key the old fingerprint lacks is a
// difference too: a store from elsewhere cannot be vouched for).
func ResumeDiff(was, now map[string]string) []Change {
	var out []Change
	for _, k := range ResumeKeys {
		if was[k] != now[k] {
			out = append(out, Change{k, was[k], now[k]})
		}
	}
	return out
}

// HostChanged refuses to resume run ID: it began on another host or with
// another isobench (Changes), so its samples would not be comparable.
type HostChanged struct {
	ID      int64
	Changes []Change
}

func (e HostChanged) Error() string { return "the run began on another host or with another isobench" }

// Resumable reads run id of the store at db for --resume, refusing
// (Refused, HostChanged) a store that is not there, a run it does not
// hold, a run that finished, and a run begun on another host or build
// than now (the fingerprint hostinfo gives).
func Resumable(ctx context.Context, db string, id int64, now map[string]string) (store.Run, error) {
	if _, err := os.Stat(db); err != nil {
		return store.Run{}, refused("--resume %d: no store %s (give its --db)", id, db)
	}
	s, err := store.OpenReadOnly(ctx, db)
	if err != nil {
		return store.Run{}, err
	}
	defer s.Close()
	r, err := s.Run(ctx, id)
	if errors.Is(err, store.ErrNoSuchRun) {
		return store.Run{}, refused("--resume %d: %s holds no run %d ('isobench runs --db %s' lists them)", id, db, id, db)
	}
	if err != nil {
		return store.Run{}, err
	}
	if r.Status == store.StatusDone {
		return store.Run{}, refused("--resume %d: the run finished (done): there is nothing to resume", id)
	}
	if diff := ResumeDiff(r.Fingerprint, now); len(diff) > 0 {
		return store.Run{}, HostChanged{ID: id, Changes: diff}
	}
	return r, nil
}

// Resume reopens run id in s for --resume, dropping the samples of its
// unfinished repetitions (dropped counts them); finished are the
// repetitions it holds already, for Skipper.
func Resume(ctx context.Context, s *store.Store, id int64) (finished map[store.RepKey]bool, dropped int64, err error) {
	finished = map[store.RepKey]bool{}
	if err := s.Reopen(ctx, id); err != nil {
		return finished, 0, refused("--resume %d: %v", id, err)
	}
	n, err := s.DropUnfinished(ctx, id)
	if err != nil {
		return finished, 0, err
	}
	if finished, err = s.FinishedReps(ctx, id); err != nil {
		return finished, n, err
	}
	return finished, n, nil
}
