package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// sqliteURIPath decodes the path part of a file: URI as SQLite does: it
// ends at '?' or '#', and %HH is a byte.
func sqliteURIPath(u string) (string, bool) {
	rest, ok := strings.CutPrefix(u, "file:")
	if !ok {
		return "", false
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		if rest[i] != '%' {
			b.WriteByte(rest[i])
			continue
		}
		if i+2 >= len(rest) {
			return "", false
		}
		n, err := strconv.ParseUint(rest[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), true
}

var pathSeeds = []string{"isobench.db", ":memory:", "", "x#frag.db", "z%41.db", "a?mode=ro.db", "?mode=memory&cache=shared", "file:e.db",
	"file::memory:", "//host/x.db", "dir/../y.db", "./x.db", "%", "%%", "%4", "c d.db", "ünï.db", "\x00", "a\x00b", "-", "..", "~/x.db", "x.db?_pragma=journal_mode(DELETE)"}

// The URI given to the driver names exactly the absolute path, whatever
// the path holds. go test -run=^$ -fuzz=FuzzURI -fuzztime=10s ./internal/store
func FuzzURI(f *testing.F) {
	for _, s := range pathSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		u, err := uri(path, "mode=ro")
		if path == "" || strings.IndexByte(path, 0) >= 0 {
			if err == nil {
				t.Fatalf("uri(%q) accepted", path)
			}
			return
		}
		if err != nil {
			t.Fatalf("uri(%q): %v", path, err)
		}
		abs, _ := filepath.Abs(path)
		got, ok := sqliteURIPath(u)
		if !ok || got != abs {
			t.Fatalf("uri(%q) = %q names %q, want %q", path, u, got, abs)
		}
		if _, q, _ := strings.Cut(u, "?"); q != "mode=ro" {
			t.Fatalf("uri(%q) = %q: parameters %q, want only mode=ro", path, u, q)
		}
	})
}

// Opening a store at a file name writes that file and no other.
// go test -run=^$ -fuzz=FuzzOpenPath -fuzztime=10s ./internal/store
func FuzzOpenPath(f *testing.F) {
	for _, s := range pathSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" || name == "." || name == ".." || len(name) > 200 || strings.ContainsAny(name, "/\x00") {
			if name == "" {
				if _, err := Open(context.Background(), name); !errors.Is(err, ErrEmptyPath) {
					t.Fatalf("Open(%q): %v", name, err)
				}
			}
			return
		}
		dir := t.TempDir()
		s, err := Open(context.Background(), filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("Open(%q): %v", name, err)
		}
		s.Close()
		entries, _ := os.ReadDir(dir)
		found := false
		for _, e := range entries {
			switch e.Name() {
			case name:
				found = true
			case name + "-wal", name + "-shm":
			default:
				t.Fatalf("Open(%q) wrote %q", name, e.Name())
			}
		}
		if !found {
			t.Fatalf("Open(%q) did not write it", name)
		}
	})
}
