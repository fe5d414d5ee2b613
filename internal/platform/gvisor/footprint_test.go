package gvisor

import (
	"os"
	"testing"
)

func TestParseStatPPID(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want int
	}{
		{"31703 (exe) S 31693 31703 31650 0 -1 4194560 2761 0 0 0", 31693},
		{"42 (a) b (c)) R 7 42 42 0", 7}, // a command name with spaces and parentheses
	} {
		if got, err := ParseStatPPID(tc.stat); err != nil || got != tc.want {
			t.Errorf("ParseStatPPID(%q) = %d, %v; want %d", tc.stat, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "12 (x", "12 (x) S"} {
		if got, err := ParseStatPPID(bad); err == nil {
			t.Errorf("ParseStatPPID(%q) = %d, want an error", bad, got)
		}
	}
	// this process's parent, as the kernel reports it
	if got, err := parentPID(os.Getpid()); err != nil || got != os.Getppid() {
		t.Errorf("parentPID(self) = %d, %v; want %d", got, err, os.Getppid())
	}
	if kids := childPIDs(os.Getppid()); !contains(kids, os.Getpid()) {
		t.Errorf("childPIDs(%d) = %v: this process (%d) missing", os.Getppid(), kids, os.Getpid())
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
