package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
