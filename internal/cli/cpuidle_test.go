package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/cpuidle"
)

// TestRunCPUIdle runs native with --cpu-idle poll: the run records that
// it held the CPUs polling (and how they idle otherwise), and leaves the
// kernel's latency request as it found it. Without it, a platform given a
// fraction of a CPU on a host whose CPUs halt is warned about, and one
// given whole CPUs is not.
func TestRunCPUIdle(t *testing.T) {
	before, err := cpuidle.Current(cpuidle.QoSPath)
	if err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and %s: %v", cpuidle.QoSPath, err)
	}
	db := filepath.Join(t.TempDir(), "idle.db")
	st, _, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"run", "--cpu-idle", "poll", "--platform", "native:cpus=0.5",
		"--workload", "cpu:duration=100ms,max-prime=2000", "--reps", "1", "--html", "none", "--db", db}); code != 0 {
		t.Fatalf("run exit %d: %s", code, errb.String())
	}
	if strings.Contains(errb.String(), "--cpu-idle poll holds") {
		t.Errorf("a run holding the CPUs polling was told to hold them:\n%s", errb.String())
	}
	if after, err := cpuidle.Current(cpuidle.QoSPath); err != nil || after != before {
		t.Errorf("after the run the CPU latency request reads %d µs (%v), before it %d", after, err, before)
	}
	st, out, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"report", "--db", db, "--format", "json"}); code != 0 {
		t.Fatalf("report exit %d: %s", code, errb.String())
	}
	var doc struct {
		Fingerprint map[string]string `json:"fingerprint"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	info := cpuidle.Read(cpuidle.SysfsPath)
	f := doc.Fingerprint
	if f["cpu_idle"] != "poll" || f["cpuidle_halts"] == "" || f["cpuidle_driver"] != info.Driver || f["cpu_limited"] != "native:cpus=0.5" {
		t.Errorf("fingerprint: cpu_idle %q, cpuidle_halts %q, cpuidle_driver %q (sysfs %q), cpu_limited %q",
			f["cpu_idle"], f["cpuidle_halts"], f["cpuidle_driver"], info.Driver, f["cpu_limited"])
	}

	// the same limited platform with the host's idle states: warned
	// where the CPUs halt
	st, _, errb = newTestState(t)
	if code := Main(context.Background(), st, []string{"run", "--platform", "native:cpus=0.5",
		"--workload", "cpu:duration=100ms,max-prime=2000", "--reps", "1", "--html", "none", "--db", filepath.Join(t.TempDir(), "host.db")}); code != 0 {
		t.Fatalf("run exit %d: %s", code, errb.String())
	}
	if warned := strings.Contains(errb.String(), "--cpu-idle poll holds"); warned != info.Halts {
		t.Errorf("CPUs halt: %v, warned: %v\n%s", info.Halts, warned, errb.String())
	}
	// a whole CPU throttles no 1-thread workload: no warning
	st, _, errb = newTestState(t)
	if code := Main(context.Background(), st, []string{"run", "--platform", "native:cpus=1",
		"--workload", "cpu:duration=100ms,max-prime=2000", "--reps", "1", "--html", "none", "--db", filepath.Join(t.TempDir(), "whole.db")}); code != 0 {
		t.Fatalf("run exit %d: %s", code, errb.String())
	}
	if strings.Contains(errb.String(), "--cpu-idle poll holds") {
		t.Errorf("a whole-CPU limit was warned about:\n%s", errb.String())
	}
}
