package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/suggest"
	"github.com/isobench/isobench/internal/workload"
)

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}

// samePath says whether writing to out would write over the store at db:
// the same file (through any path or link) or one of its SQLite side files.
func samePath(out, db string) bool {
	ao, err1 := filepath.Abs(out)
	ad, err2 := filepath.Abs(db)
	if err1 == nil && err2 == nil {
		for _, side := range []string{"", "-wal", "-shm", "-journal"} {
			if ao == ad+side {
				return true
			}
		}
	}
	fo, err1 := os.Stat(out)
	fd, err2 := os.Stat(db)
	return err1 == nil && err2 == nil && os.SameFile(fo, fd)
}

// unavailable is a platform this host cannot run. It is not a usage error
// (the command was right): exit 1, one line with the platform's own word on
// what to install or start.
func unavailable(name string, err error) error {
	return fmt.Errorf("%s is not available here: %w (see 'isobench doctor' for every platform)", name, err)
}

// checkStore refuses, before any platform is set up, a --db that exists
// and is not an isobench store (another SQLite database, a report, any
// file): the run would fail at its end, or write into someone else's
// database. It only reads (read-only open); an empty file is a new store.
func checkStore(ctx context.Context, path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 {
		return nil // a new store; Open reports what is wrong with the path
	}
	s, err := store.OpenReadOnly(ctx, path)
	if errors.Is(err, store.ErrNotStore) {
		return usage("--db %s is not an isobench result store; it was left unchanged (give a new file name)", path)
	}
	if err != nil {
		return fmt.Errorf("--db %s: %w", path, err)
	}
	return s.Close()
}

// writeOutput writes a report to path as the running user (often root)
// should when the path may lie in a directory others can write, such as
// /tmp: a symbolic link at path is refused (never written through), the
// result store is refused, and the page is written to a fresh file beside
// path and renamed over it, so a link or file planted there between the
// check and the write is replaced, not followed. what names the flag in
// errors (e.g. "-o", "--html").
func writeOutput(what, path, db string, write func(io.Writer) error) error {
	if fi, err := os.Lstat(path); err == nil {
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			return usage("%s %s is a symbolic link: name the file itself (isobench does not write through links)", what, path)
		case !fi.Mode().IsRegular():
			return usage("%s %s is not a regular file", what, path)
		}
	}
	if db != "" && samePath(path, db) {
		return usage("%s %s is the result store itself (--db %s): write the report to another file", what, path, db)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return usage("%s: %v", what, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", what, err)
	}
	done = true
	return nil
}

// unknownName is the error for a platform or workload name that is not
// one of known, with "did you mean" for a near miss; nil when it is known.
func unknownName(what, name string, known []string) error {
	if slices.Contains(known, name) {
		return nil
	}
	if s := suggest.Closest(name, known); s != "" {
		return fmt.Errorf("unknown %s %q: did you mean %s? (known: %s)", what, name, s, strings.Join(known, ", "))
	}
	return fmt.Errorf("unknown %s %q (known: %s)", what, name, strings.Join(known, ", "))
}

// parsePlatform is Platforms.Parse with "did you mean" for a mistyped name.
func (st *State) parsePlatform(s string) (platform.Factory, platform.Options, error) {
	f, o, err := st.Platforms.Parse(s)
	if err != nil {
		name, _, _ := strings.Cut(strings.TrimSpace(s), ":")
		if e := unknownName("platform", name, st.Platforms.Names()); e != nil {
			err = e
		}
	}
	return f, o, err
}

// lookupWorkload is Workloads.Lookup with "did you mean" for a mistyped
// name; the internal workloads are neither found nor suggested.
func (st *State) lookupWorkload(name string) (workload.Def, error) {
	d, err := st.Workloads.Lookup(name)
	if err != nil {
		if e := unknownName("workload", name, st.Workloads.Names()); e != nil {
			err = e
			// a platform given as a workload (docker, or dokcer)
			if p := suggest.Closest(name, st.Platforms.Names()); p != "" && suggest.Closest(name, st.Workloads.Names()) == "" {
				err = fmt.Errorf("unknown workload %q: %s is a platform: --platform %s (workloads: %s)", name, p, p, strings.Join(st.Workloads.Names(), ", "))
			}
		}
	}
	return d, err
}
