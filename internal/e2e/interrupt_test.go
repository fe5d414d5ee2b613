package e2e

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform/conformance"

	_ "modernc.org/sqlite"
)

// TestCtrlCIsAnInterruption sends SIGINT to the whole process group of a
// running `isobench run` on native, as a terminal's Ctrl-C does, at
// several points of a run, each several times (agents mid-workload, between repetitions, at
// the first repetition, later ones), and checks each time that the run
// ends as interrupted (exit 130, status "interrupted"), never as failed,
// and that no agent process of the run is left.
func TestCtrlCIsAnInterruption(t *testing.T) {
	needBinary(t)
	// the race it guards against is lost about once in 20 signals: try
	// every point several times
	ctrlC(t, "native", 4)
}

// TestCtrlCIsAnInterruptionOnLXC is the same on LXC, where the workload
// runs under lxc-attach, a child of isobench.
func TestCtrlCIsAnInterruptionOnLXC(t *testing.T) {
	needBinary(t)
	if os.Geteuid() != 0 {
		conformance.SkipUnlessRequired(t, "lxc", errors.New("needs root"))
	}
	if _, err := exec.LookPath("lxc-attach"); err != nil {
		conformance.SkipUnlessRequired(t, "lxc", err)
	}
	ctrlC(t, "lxc", 2)
}

func ctrlC(t *testing.T, platform string, rounds int) {
	type point struct {
		name string
		// wait returns when the run reached the point (false: not yet)
		wait func(pid int, db string) bool
	}
	agentsRunning := func(reps int) func(int, string) bool {
		return func(pid int, db string) bool {
			return storedReps(db) >= reps && len(agentChildren(pid)) > 0
		}
	}
	betweenReps := func(reps int) func(int, string) bool {
		return func(pid int, db string) bool { return storedReps(db) >= reps }
	}
	points := []point{
		{"agents running, first repetition", agentsRunning(0)},
		{"right after the first repetition was stored", betweenReps(1)},
		{"agents running, second repetition", agentsRunning(1)},
		{"right after the third repetition was stored", betweenReps(3)},
		{"agents running, fourth repetition", agentsRunning(3)},
	}
	for i := range rounds * len(points) {
		pt := points[i%len(points)]
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "int.db")
			cmd := exec.Command(binary, "run", "--platform", platform,
				"--workload", "cpu:duration=1s,max-prime=2000", "--instances", "2", "--reps", "50", "--db", db)
			cmd.Env = append(os.Environ(), "ISOBENCH_STATE="+filepath.Join(dir, "state"), "TMPDIR="+dir)
			// isobench leads a group of its own, as in a shell, so the
			// group signal below reaches it and what it shares its
			// group with, and not this test
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			pid := cmd.Process.Pid
			deadline := time.Now().Add(2 * time.Minute)
			for !pt.wait(pid, db) {
				select {
				case err := <-done:
					t.Fatalf("isobench ended before %s: %v; stderr: %s", pt.name, err, stderr.String())
				case <-time.After(5 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					syscall.Kill(-pid, syscall.SIGKILL)
					t.Fatalf("never reached %s; stderr: %s", pt.name, stderr.String())
				}
			}
			// Ctrl-C: the terminal signals the foreground process group
			if err := syscall.Kill(-pid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute):
				syscall.Kill(-pid, syscall.SIGKILL)
				t.Fatalf("isobench did not exit within 2 minutes of SIGINT at %s", pt.name)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("SIGINT at %s: exit %v, want status 130 (interrupted); stderr: %s", pt.name, err, stderr.String())
			}
			if st := runStatus(t, db); st != "interrupted" {
				t.Fatalf("SIGINT at %s: run status %q, want interrupted; stderr: %s", pt.name, st, stderr.String())
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "isobench-native", "*")); len(left) > 0 {
				t.Errorf("native instance dirs left: %v", left)
			}
		})
	}
}

// storedReps counts the repetitions stored so far (one aggregate sample of
// the primary metric each); 0 when the store is not there yet.
func storedReps(db string) int {
	if _, err := os.Stat(db); err != nil {
		return 0
	}
	s, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(2000)")
	if err != nil {
		return 0
	}
	defer s.Close()
	var n int
	if err := s.QueryRow(`SELECT COUNT(*) FROM samples WHERE instance = -1 AND metric = 'events_per_sec'`).Scan(&n); err != nil {
		return 0
	}
	return n
}

func runStatus(t *testing.T, db string) string {
	t.Helper()
	s, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var status string
	if err := s.QueryRow(`SELECT status FROM runs ORDER BY id DESC LIMIT 1`).Scan(&status); err != nil {
		t.Fatal(err)
	}
	return status
}

// agentChildren lists the children of pid running "agent run" (the
// workload): directly, through "agent cgexec" or through an engine's
// helper (lxc-attach ... -- AGENT agent run ...).
func agentChildren(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so parse after ')'
		rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), "agent\x00run\x00") {
			out = append(out, p)
		}
	}
	return out
}
