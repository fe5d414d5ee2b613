package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var barRe = regexp.MustCompile(`\[[#-]{20}\] cell \d+/\d+ (cpu(:\S+)?|startup) ×1 on native +\d+% rep \d/5, (~\S+ left|time left: \?)`)

// etaRe is the bar once a repetition is done: with the time left.
var etaRe = regexp.MustCompile(`\[#*-*\] cell \d+/2 (cpu(:\S+)?|startup) ×1 on native +\d+% rep [2-5]/5, ~\S+ left`)

// TestProgressBarInTmux runs isobench in a real terminal (a tmux pane on
// a private tmux server) and reads the screen: while it runs, the bar
// with the cell, the repetition and the time left; at the end the bar is
// gone and the summary and the report's path are printed.
func TestProgressBarInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary in tmux for a few seconds")
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("ISOBENCH_REQUIRE_PLATFORMS") != "" {
			t.Fatal("tmux is not installed (apt-get install -y tmux)")
		}
		t.Skip("tmux is not installed (apt-get install -y tmux)")
	}
	dir := t.TempDir()
	sock := fmt.Sprintf("isobench-test-%d", os.Getpid())
	tm := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-L", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	defer tm("kill-server")
	db := filepath.Join(dir, "tty.db")
	script := fmt.Sprintf("env ISOBENCH_STATE=%s TMPDIR=%s %s run --platform native --workload cpu:duration=400ms,max-prime=500 --workload startup --reps 5 --db %s; echo EXIT=$?; read x",
		filepath.Join(dir, "state"), dir, agentBin, db)
	if out, err := tm("new-session", "-d", "-s", "bar", "-x", "150", "-y", "50", script); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	screen := func() string {
		out, err := tm("capture-pane", "-p", "-t", "bar")
		if err != nil {
			t.Fatalf("tmux capture-pane: %v\n%s", err, out)
		}
		return out
	}
	var bar string
	waitFor(t, 2*time.Minute, "progress bar on the screen", func() bool {
		bar = etaRe.FindString(screen())
		return bar != ""
	})
	t.Logf("bar: %s", bar)
	var final string
	waitFor(t, 3*time.Minute, "end of the run", func() bool {
		final = screen()
		return strings.Contains(final, "EXIT=")
	})
	if !strings.Contains(final, "EXIT=0") {
		t.Fatalf("the run failed:\n%s", final)
	}
	for _, want := range []string{"Baseline: native.", "startup startup_ms (ms, lower is better)", "HTML report: " + strings.TrimSuffix(db, ".db") + "-run1.html"} {
		if !strings.Contains(final, want) {
			t.Errorf("final screen lacks %q:\n%s", want, final)
		}
	}
	if barRe.MatchString(final) {
		t.Errorf("the bar is still on the final screen:\n%s", final)
	}
}
