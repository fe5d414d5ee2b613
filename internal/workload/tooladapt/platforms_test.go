package tooladapt_test

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/tooladapt"
)

var agentBin string

func TestMain(m *testing.M) {
	os.Exit(conformance.AgentTestMain(m, &agentBin, tooladapt.Iperf2))
}

// row is one line of `isobench results`.
type row struct {
	Platform, Workload, Params, Metric, Unit string
	Instance, Instances                      int
	Value                                    float64
	Tags                                     map[string]string
}

// runBinary runs `isobench run` with args on the platforms (the tools
// image profile) and returns the run's samples.
func runBinary(t *testing.T, platforms []string, args ...string) []row {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	full := []string{"run", "--quiet", "--image", "tools", "--reps", "1", "--db", db}
	for _, p := range platforms {
		full = append(full, "--platform", p)
	}
	cmd := exec.Command(agentBin, append(full, args...)...)
	cmd.Env = append(os.Environ(), "ISOBENCH_STATE="+local.TestStateDir(), "TMPDIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	out, err := exec.Command(agentBin, "results", "--db", db).Output()
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		rows = append(rows, r)
	}
	return rows
}

// toolPlatforms are native and, where Docker answers, docker.
func toolPlatforms(t *testing.T, bins ...string) []string {
	t.Helper()
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s is not installed on the host (scripts/setup.sh test installs it)", b)
		}
	}
	ps := []string{"native"}
	if err := exec.Command("docker", "info").Run(); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	} else {
		ps = append(ps, "docker")
	}
	return ps
}

// TestIperf2OnNativeAndDocker runs study 000's layout, one iperf 2 server
// instance and two client instances with the paper's 64 KByte window, on
// native and Docker, and checks that each client measured a throughput
// and moved data, with the window it ran at.
func TestIperf2OnNativeAndDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts iperf in instances")
	}
	ps := toolPlatforms(t, "iperf")
	rows := runBinary(t, ps, "--instances", "2", "--workload", tooladapt.Iperf2+":duration=1s")
	seen := map[string]bool{}
	sums := map[string]float64{} // platform metric -> sum over the clients
	aggs := map[string]float64{} // platform metric -> the cell's aggregate
	for _, r := range rows {
		if r.Workload != tooladapt.Iperf2 {
			continue
		}
		if r.Instance < 0 {
			aggs[r.Platform+" "+r.Metric] = r.Value
		} else {
			sums[r.Platform+" "+r.Metric] += r.Value
		}
		if r.Instances != 2 {
			t.Errorf("%s: %d instances, want 2", r.Platform, r.Instances)
		}
		if !(r.Value > 0) {
			t.Errorf("%s instance %d: %s = %v %s", r.Platform, r.Instance, r.Metric, r.Value, r.Unit)
		}
		if r.Tags["window"] != "64K" || r.Tags["server"] != "instance" || r.Tags["client"] != "instance" {
			t.Errorf("%s instance %d: tags %v", r.Platform, r.Instance, r.Tags)
		}
		seen[r.Platform+" "+r.Metric+" "+string(rune('0'+r.Instance))] = true
		t.Logf("%s instance %d: %s = %.4g %s", r.Platform, r.Instance, r.Metric, r.Value, r.Unit)
	}
	// the paper's figure plots the server's total: the clients' sum
	for k, v := range sums {
		if a := aggs[k]; math.Abs(a-v) > 1e-9*v {
			t.Errorf("%s: aggregate %v, want the clients' sum %v", k, a, v)
		}
	}
	for _, p := range ps {
		for _, m := range []string{"throughput", "transferred"} {
			for _, i := range []string{"0", "1"} {
				if !seen[p+" "+m+" "+i] {
					t.Errorf("%s: no %s from client instance %s", p, m, i)
				}
			}
		}
	}
}

// TestIperf2ClientRefused: iperf 2 exits 0 when nothing listens; the
// client half reports iperf's own message as its failure, not a number.
func TestIperf2ClientRefused(t *testing.T) {
	if _, err := exec.LookPath("iperf"); err != nil {
		t.Skip("iperf is not installed")
	}
	t.Setenv(workload.ScratchEnv, t.TempDir())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	p, err := tooladapt.Iperf2ClientDef.Resolve(map[string]string{"server": "127.0.0.1", "port": port, "duration": "1s"})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := tooladapt.Iperf2ClientDef.Agent(context.Background(), p, func() error { return nil })
	if err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("metrics %v, err = %v; want iperf's connection refused", ms, err)
	}
}

// TestPaperToolsInInstances runs the tools studies 000 and 003 take from
// their papers, with the papers' flags at small sizes, in the tools image
// on native and Docker: sysbench cpu and memory (8 threads, 1 KiB
// blocks), fio with libaio, O_DIRECT, iodepth 16 and several jobs for
// random reads and writes; each reports its own numbers.
func TestPaperToolsInInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tools in instances")
	}
	ps := toolPlatforms(t, "sysbench", "fio")
	fio := "tool:fio:bs=4k,size=16m,direct=true,iodepth=16,jobs=2,ioengine=libaio,duration=1s,pattern="
	rows := runBinary(t, ps,
		"--workload", "tool:sysbench-cpu:threads=8,max-prime=10000,duration=1s",
		"--workload", "tool:sysbench-memory:block-size=1k,threads=8,duration=1s",
		"--workload", fio+"randread", "--workload", fio+"randwrite")
	want := map[string]string{
		"tool:sysbench-cpu events_per_sec": "", "tool:sysbench-memory mib_per_sec": "",
		"tool:fio read_iops": "pattern=randread", "tool:fio write_iops": "pattern=randwrite",
	}
	seen := map[string]bool{}
	for _, r := range rows {
		k := r.Workload + " " + r.Metric
		sel, ok := want[k]
		if !ok || r.Instance < 0 || !strings.Contains(r.Params, sel) {
			continue
		}
		if !(r.Value > 0) {
			t.Errorf("%s %s: %s = %v", r.Platform, r.Params, r.Metric, r.Value)
		}
		seen[r.Platform+" "+k] = true
		t.Logf("%s %s: %.4g %s", r.Platform, k, r.Value, r.Unit)
	}
	for _, p := range ps {
		for k := range want {
			if !seen[p+" "+k] {
				t.Errorf("%s: no %s", p, k)
			}
		}
	}
}
