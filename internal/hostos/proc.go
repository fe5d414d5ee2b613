package hostos

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ParseStat reads the command (the second field, in parentheses, which may
// itself hold spaces and parentheses) and the parent pid (the fourth) of
// a /proc/PID/stat line.
func ParseStat(stat string) (ppid int, comm string, err error) {
	i, j := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if i < 0 || j < i {
		return 0, "", fmt.Errorf("/proc stat %q: no command name", stat)
	}
	f := strings.Fields(stat[j+1:])
	if len(f) < 2 {
		return 0, "", fmt.Errorf("/proc stat %q: too few fields", stat)
	}
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return 0, "", fmt.Errorf("/proc stat %q: %w", stat, err)
	}
	return ppid, stat[i+1 : j], nil
}

// ProcStat reads process pid's parent pid and command name from
// /proc/PID/stat.
func ProcStat(pid int) (ppid int, comm string, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", err
	}
	return ParseStat(string(b))
}

// ParentPID is process pid's parent, or 0 when it is unknown (the process
// is gone, or pid is not positive).
func ParentPID(pid int) int {
	if pid <= 0 {
		return 0
	}
	ppid, _, err := ProcStat(pid)
	if err != nil {
		return 0
	}
	return ppid
}

// ProcExists reports whether /proc has process pid (a zombie included).
func ProcExists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// ProcArgv is process pid's argv from /proc/PID/cmdline, or one empty
// string when it cannot be read (a kernel thread, a process gone), so
// that argv[0] can always be looked at.
func ProcArgv(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return []string{""}
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}
