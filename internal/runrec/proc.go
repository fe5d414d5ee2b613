// Package runrec records which isobench processes are running, so that
// what a process left behind when it died (kill -9, a crash, a reboot) is
// recognised as nobody's: every run writes a record under Dir holding its
// pid and the process's start time (so a reused pid is not mistaken for
// it), its host, state directory and store, and removes it when it ends.
package runrec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StartTime is the start time of process pid in clock ticks after boot
// (field 22 of /proc/PID/stat), or 0 when there is no such process.
func StartTime(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// "pid (comm) state ppid ..."; comm may hold spaces and parentheses
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field 22 is f[19]
	if len(f) < 20 {
		return 0
	}
	st, _ := strconv.ParseUint(f[19], 10, 64)
	return st
}

// Alive reports whether process pid exists and, when start is not 0, is
// the process that started at start (not a later one given the same pid).
// A zombie counts as dead.
func Alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 0 && f[0] == "Z" {
				return false
			}
		}
	}
	return start == 0 || StartTime(pid) == start
}

// Self is this process's pid and start time.
func Self() (int, uint64) {
	pid := os.Getpid()
	return pid, StartTime(pid)
}

// StartedAt is when process pid started (from the boot time and its
// start time in clock ticks, USER_HZ being 100 on Linux), or the zero time.
func StartedAt(pid int) time.Time {
	st := StartTime(pid)
	if st == 0 {
		return time.Time{}
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			bt, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(bt, 0).Add(time.Duration(st) * 10 * time.Millisecond)
		}
	}
	return time.Time{}
}

// KillWait bounds the wait for a killed process to die (one in
// uninterruptible sleep on a hung mount can take long).
const KillWait = 10 * time.Second

// KillTree kills pid's descendants, deepest first, then pid, by pid (never
// by name); parent maps each process of the host to its parent. SIGKILL
// is delivered when a process next runs, so it then waits, at most
// KillWait, until pid is gone (or a zombie): what it holds (mounts, open
// files) must be released before those are removed and before it is said
// to be removed.
func KillTree(pid int, parent map[int]int) error {
	children := map[int][]int{}
	for p, pp := range parent {
		children[pp] = append(children[pp], p)
	}
	var kids []int
	queue := []int{pid}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		kids = append(kids, children[c]...)
		queue = append(queue, children[c]...)
	}
	for i := len(kids) - 1; i >= 0; i-- {
		syscall.Kill(kids[i], syscall.SIGKILL)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	deadline := time.Now().Add(KillWait)
	for Alive(pid, 0) {
		if time.Now().After(deadline) {
			return fmt.Errorf("kill %d: still running %v after SIGKILL", pid, KillWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}
