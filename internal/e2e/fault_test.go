package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform/conformance"
)

// faultNeedLXC skips (or fails, when LXC is required) without LXC and root.
func faultNeedLXC(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		conformance.SkipUnlessRequired(t, "lxc", fmt.Errorf("needs root"))
	}
	if _, err := exec.LookPath("lxc-execute"); err != nil {
		conformance.SkipUnlessRequired(t, "lxc", err)
	}
}

var faultRunLine = regexp.MustCompile(`(?m)^run \d+ \((\w+)\): (\d+) samples`)

// TestConcurrentRunsShareTheBridge runs two `isobench run`s at once, each
// with tcp-rr between two LXC instances on the isobench bridge at 1 and 2
// instances, several repetitions (so each run's veths come and go while the
// other's instances talk), each run with a state directory of its own:
// both must finish with every sample.
func TestConcurrentRunsShareTheBridge(t *testing.T) {
	needBinary(t)
	faultNeedLXC(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const reps = 3
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	for i := range 2 {
		dir := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, binary, "run", "--platform", "lxc",
				"--workload", "tcp-rr:server=instance,client=instance,duration=2s",
				"--instances", "1,2", "--reps", strconv.Itoa(reps), "--quiet", "--db", filepath.Join(dir, "r.db"))
			cmd.Env = append(os.Environ(), "ISOBENCH_STATE="+filepath.Join(dir, "state"), "TMPDIR="+dir)
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Errorf("run %d: %v\n%s", i, errs[i], outs[i])
			continue
		}
		m := faultRunLine.FindSubmatch(outs[i])
		if m == nil || string(m[1]) != "done" {
			t.Errorf("run %d did not finish as done:\n%s", i, outs[i])
			continue
		}
		// every repetition of both cells stored at least one metric
		if n, _ := strconv.Atoi(string(m[2])); n < 2*reps {
			t.Errorf("run %d stored %d samples, want at least %d", i, n, 2*reps)
		}
	}
}
