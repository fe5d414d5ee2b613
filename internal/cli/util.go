package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/isobench/isobench/internal/store"
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
