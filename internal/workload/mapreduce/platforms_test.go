package mapreduce_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
	"github.com/isobench/isobench/internal/workload/mapreduce"
)

var agentBin string

func TestMain(m *testing.M) {
	os.Exit(conformance.AgentTestMain(m, &agentBin, mapreduce.Name))
}

// TestWordCountAndTeraSortOnNativeAndDocker runs both jobs at a small
// size natively (the host's java) and in Docker (the spark image's Java)
// through the real binary: Hadoop's jars from Maven, the output verified
// in the instance, the job's time from its log.
func TestWordCountAndTeraSortOnNativeAndDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Hadoop jobs in instances")
	}
	for _, b := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s is not installed on the host (scripts/setup.sh test installs it)", b)
		}
	}
	ps := []string{"native"}
	if err := exec.Command("docker", "info").Run(); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	} else if err := exec.Command("python3", "-c", "import pyspark").Run(); err != nil {
		t.Logf("docker left out: the spark image (its Java) needs the host's pyspark: %v", err)
	} else {
		ps = append(ps, "docker")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	args := []string{"run", "--quiet", "--reps", "1", "--db", db, "--instances", "2",
		"--workload", "mapreduce:job=wordcount,size=2m", "--workload", "mapreduce:job=terasort,size=2m,reducers=2"}
	for _, p := range ps {
		args = append(args, "--platform", p)
	}
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
			Platform, Workload, Params, Metric string
			Instance                           int
			Value                              float64
			Tags                               map[string]string
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Workload != mapreduce.Name || r.Instance < 0 {
			continue
		}
		if !(r.Value > 0) || r.Tags["tool"] != "hadoop-3.3.6" {
			t.Errorf("%s %s instance %d: %s = %v %v", r.Platform, r.Params, r.Instance, r.Metric, r.Value, r.Tags)
		}
		seen[r.Platform+" "+r.Tags["job"]+" "+r.Metric] = true
		if r.Metric == "job_duration" {
			t.Logf("%s %s instance %d: %.2f s", r.Platform, r.Tags["job"], r.Instance, r.Value)
		}
	}
	for _, p := range ps {
		for _, j := range mapreduce.Jobs {
			for _, m := range []string{"job_duration", "throughput", "wall_time"} {
				if !seen[p+" "+j+" "+m] {
					t.Errorf("no %s %s on %s", j, m, p)
				}
			}
		}
	}
}
