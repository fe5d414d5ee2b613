package gvisor

import (
	"os"
	"slices"
	"testing"
)

func TestChildPIDs(t *testing.T) {
	if kids := childPIDs(os.Getppid()); !slices.Contains(kids, os.Getpid()) {
		t.Errorf("childPIDs(%d) = %v: this process (%d) missing", os.Getppid(), kids, os.Getpid())
	}
}
