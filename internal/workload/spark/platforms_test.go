package spark_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
	"github.com/isobench/isobench/internal/workload/spark"
)

var agentBin string

func TestMain(m *testing.M) {
	os.Exit(conformance.AgentTestMain(m, &agentBin, "spark"))
}

// TestWordCountAndTeraSortOnNativeAndDocker runs wordcount and terasort at
// a small size natively (the host's java and pyspark) and in Docker (the
// spark image profile) through the real binary, and checks that every
// platform produced verified, positive durations and throughputs.
func TestWordCountAndTeraSortOnNativeAndDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Spark and containers")
	}
	if _, err := spark.Find(t.Context()); err != nil {
		t.Skipf("no Spark on the host: %v", err)
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	jobs := []string{"spark:job=wordcount,size=4m", "spark:job=terasort,size=4m"}
	args := []string{"run", "--quiet", "--platform", "native", "--platform", "docker", "--image", "spark", "--reps", "1", "--db", db}
	for _, j := range jobs {
		args = append(args, "--workload", j)
	}
	cmd := exec.Command(agentBin, args...)
	// The spark image's Debian tree is kept in the shared test state
	// directory: built once, reused by later runs.
	cmd.Env = append(os.Environ(), "ISOBENCH_STATE="+local.TestStateDir(), "TMPDIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	out, err := exec.Command(agentBin, "results", "--db", db).Output()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Platform, Workload, Params, Metric, Unit string
		Value                                    float64
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Workload != "spark" {
			continue
		}
		if !(r.Value > 0) {
			t.Errorf("%s %s on %s: %v %s", r.Params, r.Metric, r.Platform, r.Value, r.Unit)
		}
		job := "wordcount"
		if strings.Contains(r.Params, "job=terasort") {
			job = "terasort"
		}
		seen[r.Platform+" "+job+" "+r.Metric] = true
		t.Logf("%s %s %s = %.4g %s", r.Platform, job, r.Metric, r.Value, r.Unit)
	}
	for _, p := range []string{"native", "docker"} {
		for _, j := range []string{"wordcount", "terasort"} {
			for _, m := range []string{"duration", "throughput"} {
				if !seen[p+" "+j+" "+m] {
					t.Errorf("no %s %s sample on %s", j, m, p)
				}
			}
		}
	}
}

// TestClusterOnDocker runs wordcount and terasort on a Spark standalone
// cluster of a master and two workers in Docker containers, checked as in
// local mode (TeraSort through the job's per-partition summaries).
func TestClusterOnDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Spark cluster in containers")
	}
	if _, err := spark.Find(t.Context()); err != nil {
		t.Skipf("no Spark on the host to build the image from: %v", err)
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	runCluster(t, "docker", "--image", "spark")
}

// TestClusterOnNative runs the same cluster as processes of the host (the
// native baseline of study 003's cluster figures): every instance has the
// host's address, so each daemon gets a port of its own; the host's Spark.
func TestClusterOnNative(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Spark cluster")
	}
	if _, err := spark.Find(t.Context()); err != nil {
		t.Skipf("no Spark on the host: %v", err)
	}
	runCluster(t, "native")
}

// runCluster runs wordcount and terasort on a master and two workers of
// platform pl through the real binary and checks both were measured.
func runCluster(t *testing.T, pl string, extra ...string) {
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	args := append([]string{"run", "--quiet", "--platform", pl, "--reps", "1", "--db", db,
		"--workload", "spark-cluster:job=wordcount,size=2m,cluster=2,cores=1,executor-memory=512m",
		"--workload", "spark-cluster:job=terasort,size=2m,cluster=2,cores=1,executor-memory=512m"}, extra...)
	cmd := exec.Command(agentBin, args...)
	cmd.Env = append(os.Environ(), "ISOBENCH_STATE="+local.TestStateDir(), "TMPDIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	out, err := exec.Command(agentBin, "results", "--db", db).Output()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Workload, Params, Metric string
			Value                    float64
			Instance                 int
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Workload != spark.ClusterName || r.Metric != "duration" || r.Instance != 0 {
			continue
		}
		if !(r.Value > 0) {
			t.Errorf("%s: duration %v", r.Params, r.Value)
		}
		seen[r.Params] = true
		t.Logf("%s: %.2fs", r.Params, r.Value)
	}
	if len(seen) != 2 {
		t.Errorf("%d cluster jobs measured, want 2: %s", len(seen), out)
	}
}
