package sysbench

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
)

func metricMap(t *testing.T, ms []sample.Metric) map[string]sample.Metric {
	t.Helper()
	out := map[string]sample.Metric{}
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			t.Errorf("invalid metric: %v", err)
		}
		if _, dup := out[m.Name]; dup {
			t.Errorf("metric %s reported twice", m.Name)
		}
		out[m.Name] = m
	}
	return out
}

func TestParse(t *testing.T) {
	// want: metric -> value; every metric Parse returns must be listed.
	cases := []struct {
		file string
		want map[string]float64
	}{
		{"sysbench-cpu-1.0.20.txt", map[string]float64{"events_per_sec": 6867.00, "latency_avg": 0.29, "latency_p95": 0.31, "latency_max": 1.97}},
		{"sysbench-cpu-interval-1.0.20.txt", map[string]float64{"events_per_sec": 2303.88, "latency_avg": 0.87, "latency_p95": 1.03, "latency_max": 9.52}},
		{"sysbench-memory-interval-1.0.20.txt", map[string]float64{"ops_per_sec": 8113621.16, "mib_per_sec": 7923.46, "latency_avg": 0.00, "latency_p95": 0.00, "latency_max": 2.10}},
		{"sysbench-cpu-1.0.11.txt", map[string]float64{"events_per_sec": 9093.38, "latency_avg": 0.88, "latency_p95": 1.55, "latency_max": 24.65}},
		{"sysbench-cpu-0.4.12.txt", map[string]float64{"events_per_sec": 10000 / 42.9285, "latency_avg": 4.29, "latency_p95": 4.81, "latency_max": 15.26}},
		{"sysbench-memory-1.0.20.txt", map[string]float64{"ops_per_sec": 8727256.05, "mib_per_sec": 8522.71, "latency_avg": 0.00, "latency_p95": 0.00, "latency_max": 0.10}},
		{"sysbench-memory-1.0.11.txt", map[string]float64{"ops_per_sec": 9597428.64, "mib_per_sec": 9372.49, "latency_avg": 0.00, "latency_p95": 0.00, "latency_max": 0.21}},
		{"sysbench-memory-0.4.12.txt", map[string]float64{"ops_per_sec": 4216.35, "mib_per_sec": 4216.35, "latency_avg": 0.24, "latency_p95": 0.28, "latency_max": 14.43}},
		{"sysbench-fileio-rndrw-1.0.20.txt", map[string]float64{
			"reads_per_sec": 88113.31, "writes_per_sec": 58742.21, "fsyncs_per_sec": 5878.22,
			"read_mib_per_sec": 344.19, "written_mib_per_sec": 229.46,
			"latency_avg": 0.01, "latency_p95": 0.00, "latency_max": 2.37}},
		{"sysbench-fileio-seqwr-1.0.20.txt", map[string]float64{
			"reads_per_sec": 0, "writes_per_sec": 77877.97, "fsyncs_per_sec": 3116.12,
			"read_mib_per_sec": 0, "written_mib_per_sec": 1216.84,
			"latency_avg": 0.01, "latency_p95": 0.00, "latency_max": 2.75}},
		{"sysbench-fileio-seqrd-direct-1.0.20.txt", map[string]float64{
			"reads_per_sec": 17172.60, "writes_per_sec": 0, "fsyncs_per_sec": 0,
			"read_mib_per_sec": 268.32, "written_mib_per_sec": 0,
			"latency_avg": 0.06, "latency_p95": 0.07, "latency_max": 2.20}},
		{"sysbench-fileio-rndrw-0.4.12.txt", map[string]float64{
			"reads_per_sec": 329820 / 300.0005, "writes_per_sec": 219880 / 300.0005, "fsyncs_per_sec": 703501 / 300.0005,
			"read_mib_per_sec": 5.0327 * 1024 / 300.0005, "written_mib_per_sec": 3.3551 * 1024 / 300.0005,
			"latency_avg": 0.27, "latency_p95": 0.52, "latency_max": 23.69}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ms, err := Parse(f)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := metricMap(t, ms)
			if len(got) != len(c.want) {
				t.Errorf("got %d metrics %v, want %d", len(got), ms, len(c.want))
			}
			for name, v := range c.want {
				m, ok := got[name]
				if !ok {
					t.Errorf("metric %s missing", name)
					continue
				}
				if math.Abs(m.Value-v) > 1e-9*math.Max(1, math.Abs(v)) {
					t.Errorf("%s = %v, want %v", name, m.Value, v)
				}
			}
			// Directions and aggregation rules.
			for name, m := range got {
				switch {
				case strings.HasPrefix(name, "latency_"):
					if m.Better != sample.Lower || m.Unit != "ms" {
						t.Errorf("%s: better=%s unit=%s", name, m.Better, m.Unit)
					}
					if name == "latency_avg" && m.Agg != sample.Mean || name != "latency_avg" && m.Agg != sample.Max {
						t.Errorf("%s: agg=%s", name, m.Agg)
					}
				default:
					if m.Better != sample.Higher || m.Agg != sample.Sum {
						t.Errorf("%s: better=%s agg=%s", name, m.Better, m.Agg)
					}
				}
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	prep, err := os.ReadFile("testdata/sysbench-fileio-prepare-1.0.20.txt")
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]string{
		"empty":   "",
		"prepare": string(prep),
		"fatal":   "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\nFATAL: Cannot open file 'test_file.0' errno = 2 (No such file or directory)\n",
		"garbage": "hello\nworld\n",
	} {
		_, err := Parse(strings.NewReader(in))
		if !errors.Is(err, ErrNoResult) {
			t.Errorf("%s: err = %v, want ErrNoResult", name, err)
		}
		if name == "fatal" && (err == nil || !strings.Contains(err.Error(), "Cannot open file")) {
			t.Errorf("fatal: error should carry sysbench's message, got %v", err)
		}
	}
}

func TestArgs(t *testing.T) {
	got := CPU{Threads: 2, MaxPrime: 20000, Duration: 1500 * time.Millisecond}.Args()
	want := []string{"cpu", "--threads=2", "--time=2", "--events=0", "--percentile=95", "--cpu-max-prime=20000", "run"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cpu args %q, want %q", got, want)
	}
	got = Memory{Threads: 1, BlockSize: 1024, TotalSize: 1 << 30, Oper: "read", Access: "rnd", Duration: 10 * time.Second}.Args()
	want = []string{"memory", "--threads=1", "--time=10", "--events=0", "--percentile=95",
		"--memory-block-size=1024", "--memory-total-size=1073741824", "--memory-oper=read", "--memory-access-mode=rnd", "run"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("memory args %q, want %q", got, want)
	}
	f := FileIO{Threads: 4, BlockSize: 16384, TotalSize: 64 << 20, Files: 4, Mode: "rndrw", Direct: true, Duration: 100 * time.Millisecond}
	if got, want := f.Args("prepare"), []string{"fileio", "--file-total-size=67108864", "--file-num=4", "--file-extra-flags=direct", "prepare"}; !reflect.DeepEqual(got, want) {
		t.Errorf("prepare args %q, want %q", got, want)
	}
	want = []string{"fileio", "--threads=4", "--time=1", "--events=0", "--percentile=95", "--file-total-size=67108864", "--file-num=4",
		"--file-block-size=16384", "--file-test-mode=rndrw", "--file-extra-flags=direct", "run"}
	if got := f.Args("run"); !reflect.DeepEqual(got, want) {
		t.Errorf("run args %q, want %q", got, want)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ms, err := Parse(bytes.NewReader(in))
		if err != nil {
			return
		}
		for _, m := range ms {
			if err := m.Validate(); err != nil {
				t.Errorf("invalid metric from fuzz input: %v", err)
			}
			if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				t.Errorf("non-finite %s", m.Name)
			}
		}
	})
}

// TestFixedWork: --events=N --time=0 (study 004's figure 3, sysbench
// 0.4.12's --max-requests), and its total time read back from 1.0's
// report and from 0.4.12's; a count other than asked is an error.
func TestFixedWork(t *testing.T) {
	got := strings.Join(CPU{Threads: 4, MaxPrime: 10000, Duration: time.Second, Events: 10000}.Args(), " ")
	if want := "cpu --threads=4 --time=0 --events=10000 --percentile=95 --cpu-max-prime=10000 run"; got != want {
		t.Errorf("args %q, want %q", got, want)
	}
	for _, c := range []struct {
		file   string
		events int
		total  float64
	}{
		{"sysbench-cpu-events-1.0.20.txt", 2000, 0.9938},
		{"sysbench-cpu-0.4.12.txt", 10000, 42.9285},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		ms, err := ParseFixedWork(bytes.NewReader(b), c.events)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		var total float64
		for _, m := range ms {
			if m.Name == "total_time" {
				total = m.Value
			}
		}
		if total != c.total {
			t.Errorf("%s: total_time %v, want %v (%v)", c.file, total, c.total, ms)
		}
		if _, err := ParseFixedWork(bytes.NewReader(b), c.events+1); err == nil || !strings.Contains(err.Error(), "events done of the") {
			t.Errorf("%s: a short count: %v", c.file, err)
		}
	}
	// A time-based report has no fixed count to check against.
	b, _ := os.ReadFile(filepath.Join("testdata", "sysbench-fileio-prepare-1.0.20.txt"))
	if _, err := ParseFixedWork(bytes.NewReader(b), 10); err == nil {
		t.Error("a prepare step parsed as fixed work")
	}
}

// TestInterim reads the intermediate reports (--report-interval=1) of
// captured cpu and memory runs, and nothing else from any test file.
func TestInterim(t *testing.T) {
	want := map[string][]Interim{
		"sysbench-cpu-interval-1.0.20.txt":    {{1, 2263.31, "events/s"}, {2, 2394.33, "events/s"}},
		"sysbench-memory-interval-1.0.20.txt": {{1, 8150.19, "MiB/s"}, {2, 7950.14, "MiB/s"}},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var got []Interim
		for _, l := range strings.Split(string(b), "\n") {
			if in, ok := ParseInterim(l); ok {
				got = append(got, in)
			}
		}
		if w := want[filepath.Base(f)]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s: intermediate reports %v, want %v", f, got, w)
		}
	}
	for name, events := range map[string]float64{"sysbench-cpu-interval-1.0.20.txt": 6918, "sysbench-memory-interval-1.0.20.txt": 24353002} {
		b, _ := os.ReadFile(filepath.Join("testdata", name))
		rep, err := ParseReport(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := rep.TotalEvents(); !ok || n != events {
			t.Errorf("%s: TotalEvents = %v, %v; want %v", name, n, ok, events)
		}
	}
	if rep, err := ParseReport(strings.NewReader("FATAL: no such test")); err != nil {
		t.Fatal(err)
	} else if _, ok := rep.TotalEvents(); ok {
		t.Error("TotalEvents of an error message: a count")
	}
	cpu := strings.Join(CPU{Threads: 8, MaxPrime: 10000, Duration: 2 * time.Second, ReportInterval: 1}.Args(), " ")
	if !strings.Contains(cpu, "--report-interval=1") {
		t.Errorf("cpu args %q: no --report-interval=1", cpu)
	}
	if fixed := strings.Join(CPU{Threads: 8, MaxPrime: 10000, Events: 100, ReportInterval: 1}.Args(), " "); strings.Contains(fixed, "report-interval") {
		t.Errorf("fixed-work cpu args %q: a report interval (fixed work is timed as a whole)", fixed)
	}
	if mem := strings.Join(Memory{Threads: 1, BlockSize: 1024, TotalSize: 1 << 30, Duration: time.Second, ReportInterval: 1}.Args(), " "); !strings.Contains(mem, "--report-interval=1") {
		t.Errorf("memory args %q: no --report-interval=1", mem)
	}
}
