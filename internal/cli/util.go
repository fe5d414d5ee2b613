package cli

import (
	"os"
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
