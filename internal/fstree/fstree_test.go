package fstree

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWalkReportsEveryEntryOnceWithLinks(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "a/b/f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../a/b/f", filepath.Join(root, "c/l")); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := Walk(root, func(e Entry) error {
		s := e.Rel
		if e.Info.IsDir() {
			s += "/"
		}
		if e.Link != "" {
			s += "->" + e.Link
		}
		got = append(got, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "a/ a/b/ a/b/f c/ c/l->../a/b/f"
	if strings.Join(got, " ") != want {
		t.Fatalf("walk = %q, want %q", strings.Join(got, " "), want)
	}
	stop := errors.New("stop")
	if err := Walk(root, func(Entry) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("fn's error not returned: %v", err)
	}
	if err := Walk(filepath.Join(root, "missing"), func(Entry) error { return nil }); err == nil {
		t.Fatal("a missing root must fail")
	}
}
