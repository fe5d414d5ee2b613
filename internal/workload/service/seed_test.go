package service

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
)

// execRecorder is an instance that records what it is asked to run (and
// what it reads on stdin) and runs nothing.
type execRecorder struct {
	platform.Instance
	argv  [][]string
	stdin []string
}

func (r *execRecorder) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	r.argv = append(r.argv, argv)
	if stdio.Stdin != nil {
		b, _ := io.ReadAll(stdio.Stdin)
		r.stdin = append(r.stdin, string(b))
	}
	return nil
}

// TestSeedHostile: a prepared-table cache planted by someone else (a link
// to their directory, a directory of theirs or one anyone can write to, a
// tar that is a link or theirs) is refused with one error naming it, and
// nothing is unpacked into the server; a seed of our own is.
func TestSeedHostile(t *testing.T) {
	type plant func(t *testing.T, dir, file string)
	mkdir := func(t *testing.T, dir, file string) {
		os.Mkdir(dir, 0o700)
		os.WriteFile(file, []byte("planted"), 0o600)
	}
	chown := func(t *testing.T, path string) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to chown")
		}
		if err := os.Lchown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]plant{
		"dir symlink": func(t *testing.T, dir, file string) {
			other := t.TempDir()
			os.WriteFile(filepath.Join(other, filepath.Base(file)), []byte("planted"), 0o600)
			os.Symlink(other, dir)
		},
		"dir world-writable": func(t *testing.T, dir, file string) {
			mkdir(t, dir, file)
			os.Chmod(dir, os.ModeSticky|0o777)
		},
		"dir of uid 65534": func(t *testing.T, dir, file string) {
			mkdir(t, dir, file)
			chown(t, dir)
		},
		"tar symlink": func(t *testing.T, dir, file string) {
			os.Mkdir(dir, 0o700)
			other := filepath.Join(t.TempDir(), "x.tar")
			os.WriteFile(other, []byte("planted"), 0o600)
			os.Symlink(other, file)
		},
		"tar of uid 65534": func(t *testing.T, dir, file string) {
			mkdir(t, dir, file)
			chown(t, file)
		},
		"tar world-writable": func(t *testing.T, dir, file string) {
			mkdir(t, dir, file)
			os.Chmod(file, 0o666)
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "isobench-oltp-seeds")
			file := filepath.Join(dir, "0123456789abcdef.tar")
			plant(t, dir, file)
			srv := &execRecorder{}
			err := importSeed(t.Context(), srv, file)
			if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), dir) {
				t.Errorf("import: %v; want one error line naming %s", err, dir)
			}
			if len(srv.argv) > 0 {
				t.Errorf("ran %q in the server", srv.argv)
			}
			if err := exportSeed(t.Context(), srv, file); err == nil && !strings.HasPrefix(name, "tar") {
				t.Error("exported into a planted cache")
			}
		})
	}
	// our own cache: made private, unpacked, written
	dir := filepath.Join(t.TempDir(), "isobench-oltp-seeds")
	file := filepath.Join(dir, "0123456789abcdef.tar")
	srv := &execRecorder{}
	if err := exportSeed(t.Context(), srv, file); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the cache is %v, %v; want mode 0700", st.Mode(), err)
	}
	os.WriteFile(file, []byte("table"), 0o600)
	if err := importSeed(t.Context(), srv, file); err != nil {
		t.Fatal(err)
	}
	if len(srv.stdin) != 1 || srv.stdin[0] != "table" {
		t.Errorf("unpacked %q, want the seed", srv.stdin)
	}
}
