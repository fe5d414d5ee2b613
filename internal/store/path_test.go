package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
)

// Every path names exactly that file (issue 12, defect 2): no name is read
// as SQLite URI syntax, so nothing lands in memory or in another file.
func TestPathIsAlwaysThatFile(t *testing.T) {
	for _, name := range []string{":memory:", "x#frag.db", "z%41.db", "a?mode=ro.db", "b?mode=memory&cache=shared", "c d.db", "file:e.db", "ünï.db", "%", "?"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			ctx := context.Background()
			s, err := Open(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			id, err := s.BeginRun(ctx, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Add(ctx, []sample.Sample{{RunID: id, Platform: "p", Workload: "w", Metric: "m", Unit: "u", Better: sample.Lower, Value: 7, Start: time.Unix(0, 0)}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(dir)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if !slices.Contains(names, name) {
				t.Fatalf("no file %q was written; the directory holds %q", name, names)
			}
			for _, n := range names {
				if n != name && n != name+"-wal" && n != name+"-shm" {
					t.Fatalf("a file other than %q was written: %q", name, names)
				}
			}
			// Reopened through the absolute path: the sample is there.
			s2, err := Open(ctx, filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			got, err := s2.Samples(ctx, Filter{})
			if err != nil || len(got) != 1 || got[0].Value != 7 {
				t.Fatalf("reopened %q: %v %+v", name, err, got)
			}
		})
	}
}

func TestEmptyPathIsAnError(t *testing.T) {
	if _, err := Open(context.Background(), ""); !errors.Is(err, ErrEmptyPath) {
		t.Fatalf("Open(\"\") = %v, want ErrEmptyPath", err)
	}
	if _, err := Open(context.Background(), "a\x00b"); err == nil {
		t.Fatal("a path with a NUL byte was accepted")
	}
}
