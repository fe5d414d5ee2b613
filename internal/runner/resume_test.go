package runner

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/store"
)

func fingerprint() map[string]string {
	fp := map[string]string{}
	for _, k := range ResumeKeys {
		fp[k] = k + "-here"
	}
	return fp
}

// TestResumable: a run is resumed only from a store that is there, that
// holds it, when it did not finish and when it began on this host and
// build; each refusal is Refused (or HostChanged, with what changed).
func TestResumable(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "r.db")
	if _, err := Resumable(ctx, db, 1, fingerprint()); !isRefused(err, "no store") {
		t.Errorf("no store: %v", err)
	}
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	open, _ := s.BeginRun(ctx, map[string]string{}, fingerprint())
	done, _ := s.BeginRun(ctx, map[string]string{}, fingerprint())
	s.EndRun(ctx, done, store.StatusDone, nil)
	was := fingerprint()
	was["kernel"] = "older"
	delete(was, "cores")
	moved, _ := s.BeginRun(ctx, map[string]string{}, was)
	s.Close()

	if r, err := Resumable(ctx, db, open, fingerprint()); err != nil || r.ID != open {
		t.Errorf("an open run: %v, %v", r.ID, err)
	}
	if _, err := Resumable(ctx, db, 99, fingerprint()); !isRefused(err, "holds no run 99") {
		t.Errorf("no such run: %v", err)
	}
	if _, err := Resumable(ctx, db, done, fingerprint()); !isRefused(err, "nothing to resume") {
		t.Errorf("a finished run: %v", err)
	}
	_, err = Resumable(ctx, db, moved, fingerprint())
	var hc HostChanged
	if !errors.As(err, &hc) || hc.ID != moved || len(hc.Changes) != 2 ||
		hc.Changes[0] != (Change{"kernel", "older", "kernel-here"}) || hc.Changes[1] != (Change{"cores", "", "cores-here"}) {
		t.Errorf("another host: %v %+v", err, hc)
	}
}

func isRefused(err error, says string) bool {
	var r Refused
	return errors.As(err, &r) && strings.Contains(err.Error(), says)
}

// TestResume: resuming reopens the run, drops the samples of unfinished
// repetitions and returns those it holds; a run that cannot be reopened
// is refused.
func TestResume(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "r.db")
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, _ := s.BeginRun(ctx, map[string]string{}, fingerprint())
	s.EndRun(ctx, id, store.StatusInterrupted, errors.New("stopped"))
	finished, dropped, err := Resume(ctx, s, id)
	if err != nil || len(finished) != 0 || dropped != 0 {
		t.Fatalf("Resume: %v %d %v", finished, dropped, err)
	}
	if _, _, err := Resume(ctx, s, 99); !isRefused(err, "--resume 99: ") {
		t.Errorf("no such run: %v", err)
	}
}
