package cli

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/docker"
	"github.com/isobench/isobench/internal/runner"

	_ "modernc.org/sqlite"
)

// TestInterruptKeepsSamplesAndLeavesNothing runs the real binary on native
// and Docker, sends SIGINT once some repetitions are stored, and checks the
// exit status, the kept samples and that no instance of the run is left.
func TestInterruptKeepsSamplesAndLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real containers")
	}
	ctx := context.Background()
	dp, err := docker.New(ctx, platform.Options{Name: "docker", Raw: map[string]string{}, Extra: map[string]string{}}, platform.Env{AgentBinary: agentBin, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := dp.Available(ctx); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	dp.Close(ctx)
	dir := t.TempDir()
	db := filepath.Join(dir, "int.db")
	cmd := exec.Command(agentBin, "run", "--platform", "native", "--platform", "docker",
		"--workload", "cpu:duration=1s,max-prime=2000", "--instances", "2", "--reps", "50", "--db", db)
	cmd.Env = append(os.Environ(), "ISOBENCH_STATE="+filepath.Join(dir, "state"), "TMPDIR="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for countDocker(t, db) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no docker sample stored within 3 minutes; stderr: %s", stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Let the next repetition start, then interrupt in the middle of it.
	time.Sleep(700 * time.Millisecond)
	before := countAll(t, db)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("isobench did not exit within 2 minutes of SIGINT")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("exit: %v, want status %d; stderr: %s", err, ExitInterrupted, stderr.String())
	}
	after := countAll(t, db)
	if after < before || after == 0 {
		t.Fatalf("samples before SIGINT %d, after %d: finished samples lost", before, after)
	}
	var status string
	sdb, _ := sql.Open("sqlite", db)
	sdb.QueryRow(`SELECT status FROM runs`).Scan(&status)
	sdb.Close()
	if status != "interrupted" {
		t.Fatalf("run status %q, want interrupted", status)
	}
	// Only the runner sets the run label, and this is the only test that
	// runs it against Docker: no container may carry it now.
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label="+runner.RunLabel, "--format", "{{.Names}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	if left := strings.Fields(string(out)); len(left) > 0 {
		t.Errorf("containers of the interrupted run are left: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "isobench-native", "*")); len(left) > 0 {
		t.Errorf("native instance dirs left: %v", left)
	}
}

func countDocker(t *testing.T, db string) int {
	return count(t, db, `SELECT COUNT(*) FROM samples WHERE platform='docker'`)
}
func countAll(t *testing.T, db string) int { return count(t, db, `SELECT COUNT(*) FROM samples`) }

func count(t *testing.T, db, q string) int {
	if _, err := os.Stat(db); err != nil {
		return 0
	}
	s, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(2000)")
	if err != nil {
		return 0
	}
	defer s.Close()
	var n int
	if err := s.QueryRow(q).Scan(&n); err != nil {
		return 0
	}
	return n
}
