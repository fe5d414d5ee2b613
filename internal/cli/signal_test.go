package cli

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	// Docker's own event stream says when a container of this run starts;
	// it is opened before the run so no start is missed.
	evctx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	starts := dockerStarts(t, evctx)
	cmd := exec.Command(agentBin, "run", "--platform", "native", "--platform", "docker",
		"--workload", "cpu:duration=1s,max-prime=2000", "--instances", "2", "--reps", "50", "--db", db)
	cmd.Env = append(os.Environ(), "ISOBENCH_STATE="+filepath.Join(dir, "state"), "TMPDIR="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The run's token, from its first native instance (native runs first
	// in repetition 0, in this test's private TMPDIR): instance names are
	// r<run id><token>-<n>, and Docker containers carry the token as a label.
	var token string
	waitFor(t, 3*time.Minute, "a native instance of the run", func() bool {
		dirs, _ := filepath.Glob(filepath.Join(dir, "isobench-native", "r*"))
		for _, d := range dirs {
			if m := instanceName.FindStringSubmatch(filepath.Base(d)); m != nil {
				token = m[1]
				return true
			}
		}
		return false
	})
	// Repetition 0 starts 2 containers (--instances 2); the third start of
	// this run is repetition 1 on Docker, after repetition 0's samples are
	// stored. Interrupt while it runs.
	for seen := 0; seen < 3; {
		select {
		case tok := <-starts:
			if tok == token {
				seen++
			}
		case <-time.After(3 * time.Minute):
			t.Fatalf("fewer than 3 Docker starts of run %s within 3 minutes; stderr: %s", token, stderr.String())
		}
	}
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
	if after < before || after == 0 || countDocker(t, db) == 0 {
		t.Fatalf("samples before SIGINT %d, after %d (docker %d): finished samples lost", before, after, countDocker(t, db))
	}
	var status string
	sdb, _ := sql.Open("sqlite", db)
	sdb.QueryRow(`SELECT status FROM runs`).Scan(&status)
	sdb.Close()
	if status != "interrupted" {
		t.Fatalf("run status %q, want interrupted", status)
	}
	// No container of this run may be left (other runs may be going on).
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label="+runner.RunLabel+"="+token, "--format", "{{.Names}}").Output()
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

// instanceName matches a native instance directory: r<run id><token>-<n>-<random>.
var instanceName = regexp.MustCompile(`^r[0-9]+([0-9a-f]{6})-[0-9]+-`)

// dockerStarts streams the run-label value of every container that starts
// from now on (docker events), until ctx ends.
func dockerStarts(t *testing.T, ctx context.Context) <-chan string {
	t.Helper()
	ev := exec.CommandContext(ctx, "docker", "events", "--filter", "type=container", "--filter", "event=start",
		"--filter", "label="+runner.RunLabel, "--format", `{{index .Actor.Attributes "`+runner.RunLabel+`"}}`)
	out, err := ev.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 64)
	go func() {
		defer ev.Wait()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case ch <- strings.TrimSpace(sc.Text()):
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, timeout)
		}
		<-tick.C
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
