package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
)

// foreignDB writes an SQLite database that is not an isobench store, in
// rollback-journal mode, and returns its bytes.
func foreignDB(t *testing.T, path string) []byte {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES('keep me')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func assertUnchanged(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s was changed (%d bytes before, %d after)", path, len(want), len(got))
	}
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(path + side); err == nil {
			t.Fatalf("%s%s was created", path, side)
		}
	}
}

// Read-only opens never create, migrate or switch to WAL a file that is
// not a store (issue 12, defect 3), and a writing open refuses it too.
func TestNotAStoreIsNeverChanged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	foreign := filepath.Join(dir, "other.sqlite")
	fb := foreignDB(t, foreign)
	text := filepath.Join(dir, "notes.txt")
	tb := []byte("this is not sqlite, just text that is long enough to look like a header......")
	os.WriteFile(text, tb, 0o644)
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o644)

	for _, c := range []struct {
		path string
		b    []byte
	}{{foreign, fb}, {text, tb}, {empty, nil}} {
		s, err := OpenReadOnly(ctx, c.path)
		if !errors.Is(err, ErrNotStore) {
			if s != nil {
				s.Close()
			}
			t.Fatalf("OpenReadOnly(%s) = %v, want ErrNotStore", c.path, err)
		}
		assertUnchanged(t, c.path, c.b)
	}
	for _, c := range []struct {
		path string
		b    []byte
	}{{foreign, fb}, {text, tb}} {
		if _, err := Open(ctx, c.path); !errors.Is(err, ErrNotStore) {
			t.Fatalf("Open(%s) = %v, want ErrNotStore", c.path, err)
		}
		assertUnchanged(t, c.path, c.b)
	}
	missing := filepath.Join(dir, "missing.db")
	if _, err := OpenReadOnly(ctx, missing); err == nil {
		t.Fatal("a missing store opened read-only")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("a read-only open created the file")
	}
}

func TestReadOnlyReadsAndCannotWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.BeginRun(ctx, nil, nil)
	s.Add(ctx, []sample.Sample{{RunID: id, Platform: "p", Workload: "w", Metric: "m", Unit: "u", Better: sample.Lower, Value: 3, Start: time.Unix(0, 0)}})
	s.Close()
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	got, err := ro.Samples(ctx, Filter{})
	if err != nil || len(got) != 1 || got[0].Value != 3 {
		t.Fatalf("read-only samples: %v %+v", err, got)
	}
	runs, err := ro.Runs(ctx)
	if err != nil || len(runs) != 1 {
		t.Fatalf("read-only runs: %v %+v", err, runs)
	}
	if _, err := ro.BeginRun(ctx, nil, nil); err == nil {
		t.Fatal("a read-only store accepted a write")
	}
}
