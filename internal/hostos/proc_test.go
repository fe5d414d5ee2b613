package hostos

import (
	"os"
	"testing"
)

// The command may hold spaces and parentheses; cut or malformed lines are
// errors; this process's parent is the kernel's.
func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		stat, comm string
		ppid       int
	}{
		{"31703 (exe) S 31693 31703 31650 0 -1 4194560 2761 0 0 0", "exe", 31693},
		{"4242 (containerd-shim) S 1 4242 4242 0 -1", "containerd-shim", 1},
		{"77 (a (b) c) R 4242 77 77 0", "a (b) c", 4242},
		{"42 (a) b (c)) R 7 42 42 0", "a) b (c)", 7},
		{"30396 (isobench (x) y) S 30387 30396 30396 0 -1 4194560 1 0", "isobench (x) y", 30387},
	} {
		ppid, comm, err := ParseStat(tc.stat)
		if err != nil || ppid != tc.ppid || comm != tc.comm {
			t.Errorf("ParseStat(%q) = %d %q %v; want %d %q", tc.stat, ppid, comm, err, tc.ppid, tc.comm)
		}
	}
	for _, bad := range []string{"", "12 (x", "12 (x) S", "30396 (isobench", "12 (x) S y"} {
		if ppid, _, err := ParseStat(bad); err == nil {
			t.Errorf("ParseStat(%q) = %d, want an error", bad, ppid)
		}
	}
	if got := ParentPID(os.Getpid()); got != os.Getppid() {
		t.Errorf("ParentPID(self) = %d, want %d", got, os.Getppid())
	}
	if got := ParentPID(0); got != 0 {
		t.Errorf("ParentPID(0) = %d", got)
	}
}

// This process's argv as the kernel has it; one empty string for a
// process that is not there.
func TestProcArgv(t *testing.T) {
	if got := ProcArgv(os.Getpid()); len(got) != len(os.Args) || got[0] != os.Args[0] {
		t.Errorf("ProcArgv(self) = %q, want %q", got, os.Args)
	}
	if got := ProcArgv(-1); len(got) != 1 || got[0] != "" {
		t.Errorf("ProcArgv(-1) = %q", got)
	}
}

func TestProcExists(t *testing.T) {
	if !ProcExists(os.Getpid()) || ProcExists(-1) {
		t.Errorf("ProcExists: own pid %v, pid -1 %v", ProcExists(os.Getpid()), ProcExists(-1))
	}
}
