package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/builtin"
)

// agentBin is a real static isobench binary, built once for the tests:
// native instances run it as the agent.
var agentBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(m.Run()) // a fuzzing worker runs only the fuzz target: no binary needed
	}
	dir, err := os.MkdirTemp("", "isobench-cli-test-")
	if err != nil {
		panic(err)
	}
	agentBin = filepath.Join(dir, "isobench")
	cmd := exec.Command("go", "build", "-o", agentBin, "github.com/isobench/isobench/cmd/isobench")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func newTestState(t *testing.T) (*State, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errb bytes.Buffer
	state := t.TempDir()
	return &State{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string {
			if k == "ISOBENCH_STATE" {
				return state
			}
			return ""
		},
		Executable: agentBin,
		Platforms:  builtin.Platforms(), Workloads: builtin.Workloads(),
	}, &out, &errb
}

func TestBadInputIsOneLineExit2AndStartsNothing(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("platforms: [native]\nworkloads: [cpu]\nrepz: 3\n"), 0o644)
	notYAML := filepath.Join(dir, "broken.yaml")
	os.WriteFile(notYAML, []byte("platforms: [native\n"), 0o644)
	badCap := filepath.Join(dir, "cap.yaml")
	os.WriteFile(badCap, []byte("platforms: [native]\nworkloads: [cpu]\nplatform_reps: {qemu: 2}\n"), 0o644)
	badIdle := filepath.Join(dir, "idle.yaml")
	os.WriteFile(badIdle, []byte("platforms: [native]\nworkloads: [cpu]\ncpu_idle: nap\n"), 0o644)
	zeroCap := filepath.Join(dir, "zero.yaml")
	os.WriteFile(zeroCap, []byte("platforms: [native]\nworkloads: [cpu]\nplatform_reps: {native: 0}\n"), 0o644)
	cases := map[string][]string{
		"unknown platform":   {"run", "--platform", "vmware", "--workload", "cpu"},
		"unknown workload":   {"run", "--platform", "native", "--workload", "prime95"},
		"unknown parameter":  {"run", "--platform", "native", "--workload", "cpu:primes=3"},
		"impossible param":   {"run", "--platform", "native", "--workload", "cpu:threads=0"},
		"bad instances":      {"run", "--platform", "native", "--workload", "cpu", "--instances", "0"},
		"bad reps":           {"run", "--platform", "native", "--workload", "cpu", "--reps", "many"},
		"bad option":         {"run", "--platform", "native:network=bridge", "--workload", "cpu"},
		"bad baseline":       {"run", "--platform", "native", "--workload", "cpu", "--baseline", "docker"},
		"unknown key":        {"run", bad},
		"malformed yaml":     {"run", notYAML},
		"cap of no platform": {"run", badCap},
		"cap of zero":        {"run", zeroCap},
		"bad cpu idle":       {"run", "--platform", "native", "--workload", "cpu", "--cpu-idle", "halt"},
		"bad cpu_idle key":   {"run", badIdle},
		"missing study":      {"run", filepath.Join(dir, "nope.yaml")},
		"no platform":        {"run", "--workload", "cpu"},
		"unknown command":    {"frobnicate"},
		"results no db":      {"results", "--db", filepath.Join(dir, "none.db")},
		"results format":     {"results", "--format", "xml"},
		"run empty db":       {"run", "--platform", "native", "--workload", "cpu", "--db", ""},
		"results empty db":   {"results", "--db", ""},
		"report empty db":    {"report", "--db", ""},
		"compare empty db":   {"compare", "", "x.db"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			// A private temp dir: other packages' tests create native
			// instances in the shared one while this runs.
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			st, out, errb := newTestState(t)
			t.Chdir(dir)
			code := Main(context.Background(), st, args)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, ExitUsage, errb.String())
			}
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "isobench: ") {
				t.Fatalf("want one 'isobench: ...' line, got %q", errb.String())
			}
			if out.Len() != 0 {
				t.Fatalf("stdout not empty: %q", out.String())
			}
			if _, err := os.Stat(filepath.Join(dir, "isobench.db")); err == nil {
				t.Fatal("bad input created a store")
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Fatalf("bad input left files in the temp dir: %v", left)
			}
		})
	}
}

func TestRunNativeThenResultsAndReport(t *testing.T) {
	st, out, errb := newTestState(t)
	db := filepath.Join(t.TempDir(), "x.db")
	code := Main(context.Background(), st, []string{"run", "--platform", "native", "--platform", "native:cpus=1",
		"--workload", "cpu:duration=200ms,max-prime=2000", "--workload", "startup", "--instances", "1,2", "--reps", "5", "--db", db})
	if code != 0 {
		t.Fatalf("run exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"events_per_sec", "startup_ms", "native:cpus=1", "baseline"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("run table lacks %q:\n%s", want, out.String())
		}
	}
	st, out, errb = newTestState(t)
	if code := Main(context.Background(), st, []string{"results", "--db", db, "--format", "jsonl"}); code != 0 {
		t.Fatalf("results exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	platforms := map[string]bool{}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if got := strings.Join(keys, ","); got != "better,duration_ns,instance,instances,metric,options,params,platform,rep,run_id,start,tags,unit,value,warmup,workload" &&
			got != "better,duration_ns,instance,instances,metric,options,params,platform,rep,run_id,start,unit,value,warmup,workload" {
			t.Fatalf("jsonl keys %s", got)
		}
		// every sample carries its run id, start time and duration
		if m["run_id"] != 1.0 {
			t.Fatalf("run_id %v: %s", m["run_id"], l)
		}
		if ts, err := time.Parse(time.RFC3339Nano, m["start"].(string)); err != nil || ts.IsZero() {
			t.Fatalf("start %v (%v): %s", m["start"], err, l)
		}
		if d, _ := m["duration_ns"].(float64); d <= 0 {
			t.Fatalf("duration_ns %v: %s", m["duration_ns"], l)
		}
		platforms[m["platform"].(string)+":"+m["options"].(string)] = true
	}
	if !platforms["native:"] || !platforms["native:cpus=1"] {
		t.Fatalf("platforms in results: %v", platforms)
	}
	st, out, errb = newTestState(t)
	if code := Main(context.Background(), st, []string{"results", "--db", db, "--format", "csv"}); code != 0 {
		t.Fatalf("results csv exit %d: %s", code, errb.String())
	}
	recs, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("results csv: %v\n%s", err, out.String())
	}
	if got, want := strings.Join(recs[0], ","), "run_id,platform,options,workload,params,instances,instance,rep,warmup,metric,unit,better,value,start,duration_ns"; got != want {
		t.Fatalf("results csv header %s, want %s", got, want)
	}
	if r := recs[1]; r[0] != "1" || r[13] == "" || r[14] == "" || r[14] == "0" {
		t.Fatalf("results csv row lacks run id, start or duration: %v", r)
	}
	for _, format := range []string{"csv", "markdown", "json", "jsonl", "table"} {
		st, out, errb = newTestState(t)
		if code := Main(context.Background(), st, []string{"report", "--db", db, "--format", format}); code != 0 || out.Len() == 0 {
			t.Fatalf("report %s: exit %d %s", format, code, errb.String())
		}
	}
	cellKeys := []string{"platform", "options", "workload", "params", "instances", "metric", "unit", "better", "n", "median", "stdev", "cv", "ci_low", "ci_high", "baseline", "ratio", "ratio_ci_low", "ratio_ci_high", "verdict"}
	// --format jsonl: one cell per line
	st, out, _ = newTestState(t)
	Main(context.Background(), st, []string{"report", "--db", db, "--format", "jsonl"})
	jsonl := strings.Split(strings.TrimSpace(out.String()), "\n")
	for _, l := range jsonl {
		var c map[string]any
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("jsonl: %v: %s", err, l)
		}
		for _, k := range cellKeys {
			if _, ok := c[k]; !ok {
				t.Fatalf("jsonl cell lacks %q: %s", k, l)
			}
		}
	}
	// --format json: one document, the run and its cells
	st, out, _ = newTestState(t)
	Main(context.Background(), st, []string{"report", "--db", db, "--format", "json"})
	dec := json.NewDecoder(strings.NewReader(out.String()))
	var doc struct {
		Run         *int64            `json:"run"`
		Status      string            `json:"status"`
		Fingerprint map[string]string `json:"fingerprint"`
		Cells       []map[string]any  `json:"cells"`
	}
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("report --format json is not one JSON document: %v\n%.300s", err, out.String())
	}
	if dec.More() {
		t.Fatalf("report --format json wrote more than one JSON document:\n%.300s", out.String())
	}
	if doc.Run == nil || *doc.Run != 1 || doc.Status != "done" || doc.Fingerprint["kernel"] == "" || len(doc.Cells) != len(jsonl) {
		t.Fatalf("report --format json: run %v, status %q, %d fingerprint keys, %d cells (jsonl: %d)", doc.Run, doc.Status, len(doc.Fingerprint), len(doc.Cells), len(jsonl))
	}
	for _, c := range doc.Cells {
		for _, k := range cellKeys {
			if _, ok := c[k]; !ok {
				t.Fatalf("json cell lacks %q: %v", k, c)
			}
		}
	}
	st, out, errb = newTestState(t)
	if code := Main(context.Background(), st, []string{"compare", db, db}); code != 0 || !strings.Contains(out.String(), "no detectable difference") {
		t.Fatalf("compare a store with itself: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

func TestStudyFileEqualsFlags(t *testing.T) {
	dir := t.TempDir()
	study := filepath.Join(dir, "s.yaml")
	os.WriteFile(study, []byte("platforms: [native]\nworkloads: [\"cpu:duration=100ms,max-prime=1000\"]\ninstances: [1]\nreps: 2\nwarmup: 1\n"), 0o644)
	st, out, errb := newTestState(t)
	db := filepath.Join(dir, "s.db")
	if code := Main(context.Background(), st, []string{"run", study, "--db", db}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "events_per_sec") {
		t.Fatalf("no table: %s", out.String())
	}
	st, out, _ = newTestState(t)
	Main(context.Background(), st, []string{"results", "--db", db, "--warmup"})
	warm, measured := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.Contains(l, `"metric":"events_per_sec"`) && strings.Contains(l, `"instance":0`) {
			if strings.Contains(l, `"warmup":true`) {
				warm++
			} else {
				measured++
			}
		}
	}
	if warm != 1 || measured != 2 {
		t.Fatalf("warm-up %d measured %d, want 1 and 2", warm, measured)
	}
}

func TestRepsAutoAnnouncesItsRuleAndStops(t *testing.T) {
	st, _, errb := newTestState(t)
	db := filepath.Join(t.TempDir(), "a.db")
	// A generous target so a quiet cell can stop before the cap.
	code := Main(context.Background(), st, []string{"run", "--platform", "native", "--workload", "cpu:duration=100ms,max-prime=2000",
		"--reps", "auto", "--target", "50", "--reps-cap", "12", "--db", db})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "stopping rule: each cell repeats until") || !strings.Contains(errb.String(), "±50%") {
		t.Fatalf("rule not announced: %q", errb.String())
	}
	if !strings.Contains(errb.String(), "stopping early") && !strings.Contains(errb.String(), "cap of 12 repetitions was reached") {
		t.Fatalf("outcome of the rule not said: %q", errb.String())
	}
	st, out, _ := newTestState(t)
	Main(context.Background(), st, []string{"results", "--db", db})
	n := strings.Count(out.String(), `"metric":"events_per_sec","unit":"events/s","better":"higher","value"`) / 2 // instance 0 and aggregate
	if n < 5 || n > 12 {
		t.Fatalf("%d repetitions, want between the rule's minimum 5 and the cap 12", n)
	}
}
