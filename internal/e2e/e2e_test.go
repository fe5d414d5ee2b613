// Package e2e holds end-to-end checks of isobench's statistics with real
// processes: the binary is built, run on the native platform, and its
// JSON report is read back.
//
// These are checks of statistical behaviour, not of speed. No test here
// compares a duration or a throughput with a fixed number: every assertion
// is about what the report concludes (a verdict, a ratio between two
// platforms measured side by side in the same run), which stays true on a
// slow or busy machine. Where the machine's state can make a conclusion
// wrong (another tenant saturating the CPUs), the test measures that state
// and says so.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// binary is the isobench built by TestMain.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	code := 0
	if !testing.Short() {
		dir, err := os.MkdirTemp("", "isobench-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		binary = filepath.Join(dir, "isobench")
		cmd := exec.Command("go", "build", "-o", binary, "./cmd/isobench")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building isobench: %v\n%s", err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
		code = m.Run()
		os.RemoveAll(dir)
	} else {
		code = m.Run()
	}
	os.Exit(code)
}

// cell is the part of `isobench report --format jsonl` these tests read.
type cell struct {
	Platform    string    `json:"platform"`
	Options     string    `json:"options"`
	Workload    string    `json:"workload"`
	Instances   int       `json:"instances"`
	Metric      string    `json:"metric"`
	N           int       `json:"n"`
	Median      float64   `json:"median"`
	CV          float64   `json:"cv"`
	Ratio       float64   `json:"ratio"`
	RatioCILow  float64   `json:"ratio_ci_low"`
	RatioCIHigh float64   `json:"ratio_ci_high"`
	RatioValid  bool      `json:"ratio_valid"`
	Verdict     string    `json:"verdict"`
	Values      []float64 `json:"values"`
}

func (c cell) String() string {
	return fmt.Sprintf("%s:%s median %.0f (CV %.1f%%), ratio %.3f [%.3f, %.3f] %s", c.Platform, c.Options, c.Median, 100*c.CV, c.Ratio, c.RatioCILow, c.RatioCIHigh, c.Verdict)
}

func needBinary(t *testing.T) {
	t.Helper()
	if testing.Short() || binary == "" {
		t.Skip("end-to-end runs take minutes; not in -short")
	}
}

// isobench runs the binary in dir and returns its stdout.
func isobench(t *testing.T, ctx context.Context, dir string, args ...string) (string, error) {
	t.Helper()
	out, _, err := isobenchLoad(ctx, dir, args...)
	return out, err
}

// isobenchLoad runs the binary in dir and also returns how many CPUs
// other processes of the host kept busy meanwhile, on average: the busy
// time of all CPUs (/proc/stat) minus the CPU time of isobench and the
// children it waited for, divided by the wall time.
func isobenchLoad(ctx context.Context, dir string, args ...string) (string, float64, error) {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	busy0, ok0 := busyCPUSeconds()
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	busy1, ok1 := busyCPUSeconds()
	foreign := -1.0
	if ok0 && ok1 && cmd.ProcessState != nil && wall > 0 {
		own := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		foreign = max(0, (busy1-busy0-own)/wall.Seconds())
	}
	if err != nil {
		return out.String(), foreign, fmt.Errorf("isobench %s: %w\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), foreign, nil
}

// busyCPUSeconds sums the non-idle time of all CPUs since boot from the
// first line of /proc/stat (user, nice, system, irq, softirq, steal), in
// seconds (USER_HZ is 100 on Linux).
func busyCPUSeconds() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var sum float64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return 0, false
		}
		sum += v
	}
	return sum / 100, true
}

// runPair runs the cpu workload on native and on native:opts with reps
// interleaved repetitions into a new store and returns the report's cells
// for events_per_sec, keyed by options ("" for native), the store, and the
// CPUs other processes kept busy during the run (see isobenchLoad).
func runPair(t *testing.T, ctx context.Context, opts string, reps int) (map[string]cell, string, float64) {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	_, foreign, err := isobenchLoad(ctx, dir, "run", "--db", db, "--state-dir", filepath.Join(dir, "state"), "--quiet",
		"--platform", "native", "--platform", "native:"+opts,
		"--workload", "cpu:threads=1,duration=1s,max-prime=5000", "--reps", fmt.Sprint(reps))
	if err != nil {
		if strings.Contains(err.Error(), "not available") || strings.Contains(err.Error(), "cgroup") {
			if os.Getenv("ISOBENCH_REQUIRE_PLATFORMS") != "" {
				t.Fatalf("native with a cgroup is required: %v", err)
			}
			t.Skipf("native:%s cannot run here: %v", opts, err)
		}
		t.Fatal(err)
	}
	out, err := isobench(t, ctx, dir, "report", "--db", db, "--format", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]cell{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c cell
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("report json: %v: %s", err, sc.Text())
		}
		if c.Metric == "events_per_sec" && c.Workload == "cpu" && c.Instances == 1 {
			cells[c.Options] = c
		}
	}
	if _, ok := cells[""]; !ok {
		t.Fatalf("no native events_per_sec cell in:\n%s", out)
	}
	if c, ok := cells[opts]; !ok || c.N != reps {
		t.Fatalf("native:%s cell missing or with n != %d: %+v", opts, reps, c)
	}
	return cells, db, foreign
}

// TestAA runs the same workload on two platforms that are the same
// machine: native, and native in a cgroup allowed 2 CPUs on a 2-core host
// (a limit that never binds). Any difference the report claims is a false
// positive.
//
// Why a majority rule: the verdict comes from a 95% bootstrap interval of
// the paired median ratio, so even on a perfectly quiet host about 1 run
// in 20 will wrongly report a difference — that is what 95% means. This
// host is a shared 2-core VM where other jobs come and go during a run;
// interleaving the platforms rep by rep cancels slow drifts, but a burst
// of load landing on one platform's repetitions can still push a short
// run's interval off 1, and with 8 repetitions the percentile bootstrap is
// somewhat narrower than nominal. So a single trial that says "different"
// is not a bug, while a method that is biased (e.g. pairing wrongly, or an
// interval far too narrow) says "different" most of the time. Requiring
// "no detectable difference" in at least 3 of 5 independent trials
// separates the two: with a false-positive rate of even 20% per trial the
// chance of 3 or more failures is under 6%, while a broken method fails
// nearly every trial.
func TestAA(t *testing.T) {
	needBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const trials, reps, need = 5, 8, 3
	same := 0
	var ratios []float64
	for i := 0; i < trials; i++ {
		cells, _, foreign := runPair(t, ctx, "cpus=2", reps)
		c := cells["cpus=2"]
		t.Logf("trial %d: other load %.2f CPUs; native median %.0f (CV %.1f%%); %s", i+1, foreign, cells[""].Median, 100*cells[""].CV, c)
		if !c.RatioValid {
			t.Errorf("trial %d: no ratio interval: %s", i+1, c)
			continue
		}
		ratios = append(ratios, c.Ratio)
		if c.Verdict == "no detectable difference" {
			same++
		}
	}
	t.Logf("A/A: %d of %d trials found no detectable difference; ratios %v", same, trials, fmtRatios(ratios))
	if same < need {
		t.Errorf("A/A: only %d of %d trials found no detectable difference (want ≥ %d): the comparison reports differences that do not exist", same, trials, need)
	}
}

// TestInjectedSlowdown limits one platform to half a CPU (a cgroup CPU
// quota) for a single-threaded CPU workload, so its throughput must be
// about half of native's: the report must see a ratio near 0.5 whose
// interval excludes 1, and call it slower.
//
// The ratio is between two platforms measured alternately in the same run,
// so it does not depend on how fast this machine is. It does depend on
// native getting a whole core: when other tenants keep the CPUs busy, the
// native thread gets, say, 60% of a core, a 50% quota hardly binds and the
// true ratio is 0.5/0.6 ≈ 0.83 — the report would be right and a check
// for 0.5 wrong. So the test measures the CPU time other processes used
// during each run (/proc/stat minus isobench's own time) and judges only
// a run during which they left at least one core free; it tries up to three
// times and skips, saying what it measured, when the host never was that
// quiet.
func TestInjectedSlowdown(t *testing.T) {
	needBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cores := runtime.NumCPU()
	// Other processes may use this many CPUs and still leave our single
	// thread a full core. (Measured here: other load 0.98 CPU of 2 gave a
	// ratio of 0.517, 1.27 CPUs gave 0.76.)
	quiet := float64(cores) - 1
	var (
		cells   map[string]cell
		db      string
		loads   []string
		judged  bool
		foreign float64
	)
	for attempt := 1; attempt <= 3 && !judged; attempt++ {
		waitForCPU(t, 0.9, 30*time.Second)
		cells, db, foreign = runPair(t, ctx, "cpus=0.5", 8)
		t.Logf("attempt %d: other load %.2f CPUs of %d; native median %.0f (CV %.1f%%); %s", attempt, foreign, cores, cells[""].Median, 100*cells[""].CV, cells["cpus=0.5"])
		loads = append(loads, fmt.Sprintf("%.2f", foreign))
		judged = foreign >= 0 && foreign <= quiet
	}
	if !judged {
		t.Skipf("other processes kept %s CPUs (of %d) busy during the runs: native never had a core to itself, so a 0.5 CPU quota is not a 2× slowdown and the check would be meaningless", strings.Join(loads, ", "), cores)
	}
	c := cells["cpus=0.5"]
	if !c.RatioValid {
		t.Fatalf("no ratio interval: %s", c)
	}
	if c.Ratio < 0.35 || c.Ratio > 0.65 {
		t.Errorf("ratio %.3f, want about 0.5 (0.35–0.65) for a 0.5 CPU quota (other load during the run %.2f CPUs)", c.Ratio, foreign)
	}
	if !(c.RatioCIHigh < 1) {
		t.Errorf("ratio interval [%.3f, %.3f] includes 1", c.RatioCILow, c.RatioCIHigh)
	}
	if c.Verdict != "slower" {
		t.Errorf("verdict %q, want slower", c.Verdict)
	}

	// The same store through the HTML report, with its default output
	// file: one line chart per metric of the run.
	dir := t.TempDir()
	if _, err := isobench(t, ctx, dir, "report", "--db", db, "--format", "html"); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatalf("report --format html did not write report.html: %v", err)
	}
	js, err := isobench(t, ctx, dir, "report", "--db", db, "--format", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	metrics := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(js), "\n") {
		var c cell
		if json.Unmarshal([]byte(line), &c) == nil {
			metrics[c.Workload+" "+c.Metric] = true
		}
	}
	if n := strings.Count(string(page), `class="chart line"`); n != len(metrics) {
		t.Errorf("report.html has %d line charts, want %d (one per metric)", n, len(metrics))
	}
	if !strings.Contains(string(page), "native:cpus=0.5") || !strings.Contains(string(page), "slower") {
		t.Error("report.html does not show native:cpus=0.5 as slower")
	}
}

// cpuShare is the fraction of a CPU one busy thread of this process gets
// over 300 ms of wall time (CPU time of the thread / wall time).
func cpuShare() float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const rusageThread = 1 // RUSAGE_THREAD
	var r0, r1 syscall.Rusage
	if syscall.Getrusage(rusageThread, &r0) != nil {
		return 0
	}
	start := time.Now()
	x := 0
	for time.Since(start) < 300*time.Millisecond {
		for i := 0; i < 10000; i++ {
			x += i * i
		}
	}
	wall := time.Since(start)
	if syscall.Getrusage(rusageThread, &r1) != nil || x == 42 {
		return 0
	}
	cpu := time.Duration(r1.Utime.Nano()-r0.Utime.Nano()) + time.Duration(r1.Stime.Nano()-r0.Stime.Nano())
	return float64(cpu) / float64(wall)
}

// waitForCPU samples cpuShare until one thread gets at least want of a CPU
// (median of 3 samples) or patience runs out, and returns the last median.
func waitForCPU(t *testing.T, want float64, patience time.Duration) float64 {
	deadline := time.Now().Add(patience)
	for {
		s := []float64{cpuShare(), cpuShare(), cpuShare()}
		sort.Float64s(s)
		if s[1] >= want || time.Now().After(deadline) {
			return s[1]
		}
		t.Logf("one thread gets %.0f%% of a CPU; waiting for the host to calm down", 100*s[1])
		time.Sleep(5 * time.Second)
	}
}

func fmtRatios(rs []float64) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%.3f", r))
	}
	return "[" + strings.Join(s, " ") + "]"
}
