package e2e

import (
	"bytes"
	"context"
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
)

type failureRow struct {
	platform, options, workload, class, err string
}

func failureRows(t *testing.T, db string) []failureRow {
	t.Helper()
	s, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.Query(`SELECT platform, options, workload, class, error FROM failures WHERE kind = 'cell' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []failureRow
	for rows.Next() {
		var f failureRow
		if err := rows.Scan(&f.platform, &f.options, &f.workload, &f.class, &f.err); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// countReps counts the stored repetitions of workload on one platform.
func countReps(t *testing.T, db, platform, options, workload string) int {
	t.Helper()
	s, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.QueryRow(`SELECT COUNT(DISTINCT params || ' ' || rep) FROM samples WHERE platform = ? AND options = ? AND workload = ? AND warmup = 0`, platform, options, workload).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestOOMKillIsAReportedFailureAndTheRunGoesOn runs a workload that needs
// 256 MiB on a platform limited to 64 MiB, between two cells that fit: the
// OOM kill is reported as "out of memory (limit 64m)" (not as an exit
// status), stored with the run, listed in the summary, and every other
// cell runs. On native, Docker and Podman the platform itself confirms the
// OOM kill (cgroup counters, the engine's State.OOMKilled).
func TestOOMKillIsAReportedFailureAndTheRunGoesOn(t *testing.T) {
	needBinary(t)
	for _, pl := range []string{"native", "docker", "podman"} {
		t.Run(pl, func(t *testing.T) {
			if pl != "native" {
				if err := exec.Command(pl, "version").Run(); err != nil {
					conformance.SkipUnlessRequired(t, pl, err)
				}
			}
			if pl == "native" && os.Geteuid() != 0 {
				t.Skip("native memory limits need a cgroup: root")
			}
			dir := t.TempDir()
			db := filepath.Join(dir, "oom.db")
			cmd := exec.Command(binary, "run", "--platform", "native", "--platform", pl+":memory=64m",
				"--workload", "cpu:duration=200ms,max-prime=2000",
				"--workload", "memory:block-size=256m,total-size=256m,duration=2s",
				"--workload", "cpu:duration=300ms,max-prime=2000",
				"--reps", "1", "--db", db)
			cmd.Env = append(os.Environ(), "ISOBENCH_STATE="+filepath.Join(dir, "state"), "TMPDIR="+dir)
			// conmon (podman) writes a file "oom" into its working directory
			// when a container is OOM-killed: keep it out of the source tree
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit %v, want 1 (a cell failed); stdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), "failed cells (1") || !strings.Contains(stdout.String(), "out of memory (limit 64m)") {
				t.Fatalf("summary does not list the OOM kill:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
			if strings.Contains(stdout.String()+stderr.String(), "status 137") && !strings.Contains(stdout.String(), "killed with status 137") {
				t.Errorf("the OOM kill is reported as an exit status:\n%s", stdout.String())
			}
			fs := failureRows(t, db)
			if len(fs) != 1 || fs[0].platform != pl || fs[0].options != "memory=64m" || fs[0].workload != "memory" || fs[0].class != "oom" {
				t.Fatalf("stored failures %+v, want the one OOM kill of memory on %s:memory=64m", fs, pl)
			}
			// the platform confirmed it (no inference from status 137)
			if strings.Contains(fs[0].err, "killed with status 137") {
				t.Errorf("%s did not confirm the OOM kill itself: %s", pl, fs[0].err)
			}
			// the run went on: both cpu cells on the limited platform, and
			// the memory cell on the unlimited one
			if n := countReps(t, db, pl, "memory=64m", "cpu"); n != 2 {
				t.Errorf("%d cpu repetitions on %s:memory=64m, want 2", n, pl)
			}
			if n := countReps(t, db, "native", "", "memory"); n != 1 {
				t.Errorf("%d memory repetitions on native, want 1", n)
			}
		})
	}
}

// TestStoppedAgentIsGivenUpOn stops (SIGSTOP) the agent of a 20 s workload
// while it runs, as a hung instance: the run gives up on it after the
// heartbeat silence bound, long before the bound of its timed part
// (3× 20 s + 30 s),
// names the instance and what it was doing, and goes on with the next cell.
func TestStoppedAgentIsGivenUpOn(t *testing.T) {
	needBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "hung.db")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "run", "--platform", "native",
		"--workload", "cpu:duration=20s,max-prime=2000",
		"--workload", "cpu:duration=300ms,max-prime=2000",
		"--reps", "1", "--db", db)
	cmd.Env = append(os.Environ(), "ISOBENCH_STATE="+filepath.Join(dir, "state"), "TMPDIR="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// wait until the agent runs its timed part: it has burnt CPU time
	// (setup and the barrier take next to none for one cpu instance)
	var agents []int
	for len(agents) == 0 || cpuTicks(agents[0]) < 30 {
		select {
		case err := <-done:
			t.Fatalf("isobench ended before its agent ran: %v\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		agents = agentChildren(cmd.Process.Pid)
	}
	if err := syscall.Kill(agents[0], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	err := <-done
	gaveUp := time.Since(stopped)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1; stdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	// the timed part's bound is 3× 20 s + 30 s: giving up well before it
	// proves the silence was noticed
	if gaveUp >= 60*time.Second {
		t.Fatalf("gave up %v after SIGSTOP: not before the workload's own bound", gaveUp)
	}
	out := stdout.String()
	if !strings.Contains(out, "failed cells (1") || !strings.Contains(out, "hung while running: no heartbeat") {
		t.Fatalf("summary does not name the hung instance and its phase:\n%s\nstderr:\n%s", out, stderr.String())
	}
	fs := failureRows(t, db)
	if len(fs) != 1 || fs[0].class != "hung" || !strings.Contains(fs[0].err, "hung while running") {
		t.Fatalf("stored failures %+v", fs)
	}
	if n := countReps(t, db, "native", "", "cpu"); n != 1 {
		t.Fatalf("%d cpu repetitions stored, want the second cell's 1", n)
	}
	t.Logf("gave up %v after SIGSTOP", gaveUp.Round(100*time.Millisecond))
	if left, _ := filepath.Glob(filepath.Join(dir, "isobench-native", "*")); len(left) > 0 {
		t.Errorf("native instance dirs left: %v", left)
	}
}

// cpuTicks is the CPU time (user + system, in clock ticks) process pid
// used so far; 0 when it is gone.
func cpuTicks(pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	// after the command: state(0) ppid(1) ... utime(11) stime(12)
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}
