package e2e

import (
	"fmt"

	"bytes"
	"time"

	"github.com/isobench/isobench/internal/runrec"

	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform/conformance"
)

// TestEveryWorkloadOnNativeAndDocker runs each built-in compute, storage
// and file-system workload briefly on native, Docker with its overlay root
// and Docker with a volume, through the real binary, and checks that every
// platform produced plausible samples (positive, with the expected units)
// and that nothing is left behind.
func TestEveryWorkloadOnNativeAndDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real containers")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	workloads := map[string]struct{ spec, metric, unit string }{
		"cpu":     {"cpu:duration=300ms,max-prime=5000,threads=2", "events_per_sec", "events/s"},
		"memory":  {"memory:duration=300ms,block-size=1k,threads=2", "mib_per_sec", "MiB/s"},
		"stream":  {"stream:array-size=2000000,passes=3", "stream_triad", "MB/s"},
		"disk":    {"disk:pattern=randwrite,bs=4k,size=16m,duration=500ms,iodepth=4", "iops", "IO/s"},
		"blockio": {"blockio:size=16m,block-size=1m", "write_mb_per_sec", "MB/s"},
		"fs":      {"fs:personality=varmail,nfiles=100,nthreads=4,runtime=1s", "ops_per_sec", "ops/s"},
	}
	args := []string{"run", "--quiet", "--platform", "native", "--platform", "docker", "--platform", "docker:storage=volume",
		"--instances", "1,2", "--reps", "1", "--db", db}
	for _, w := range workloads {
		args = append(args, "--workload", w.spec)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "ISOBENCH_STATE="+filepath.Join(dir, "state"), "TMPDIR="+dir)
	var cmdOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &cmdOut, &cmdOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The run's token labels its containers (other tests' runs may have
	// containers at the same time): read it from the run's record.
	token := runToken(t, cmd)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, cmdOut.String())
	}
	out, err := exec.Command(binary, "results", "--db", db).Output()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Platform, Options, Workload, Metric, Unit string
		Instances, Instance                       int
		Value                                     float64
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		w, ok := workloads[r.Workload]
		if !ok || r.Metric != w.metric {
			continue
		}
		if r.Unit != w.unit || !(r.Value > 0) {
			t.Errorf("%s %s on %s:%s: %v %s, want a positive value in %s", r.Workload, r.Metric, r.Platform, r.Options, r.Value, r.Unit, w.unit)
		}
		seen[r.Workload+" "+r.Platform+":"+r.Options+" "+string(rune('0'+r.Instances))] = true
	}
	for name := range workloads {
		for _, p := range []string{"native:", "docker:", "docker:storage=volume"} {
			for _, n := range []string{"1", "2"} {
				if !seen[name+" "+p+" "+n] {
					t.Errorf("no %s sample on %s with %s instance(s)", name, p, n)
				}
			}
		}
	}
	// Cleanup: no native scratch dirs in our TMPDIR, no volume dirs in
	// our state dir, no container of the run.
	if left, _ := filepath.Glob(filepath.Join(dir, "isobench-native", "*")); len(left) > 0 {
		t.Errorf("native instances left: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "state", "volumes", "*")); len(left) > 0 {
		t.Errorf("docker volumes left: %v", left)
	}
	ps, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=isobench.run="+token).Output()
	if strings.TrimSpace(string(ps)) != "" {
		t.Errorf("containers of run %s left: %s", token, ps)
	}
}

// runToken waits until the started isobench run cmd has written its run
// record (before it creates any instance) and returns the token its
// instances carry.
func runToken(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, r := range runrec.List("") {
			if r.Pid == cmd.Process.Pid && r.Token != "" {
				return r.Token
			}
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)); err != nil || strings.Contains(string(st), ") Z ") {
			t.Fatal("the run ended before its record could be read")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no run record within a minute")
	return ""
}
