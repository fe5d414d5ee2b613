package redisbench

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/sample"
)

// lat is one test's expected rate and 7.x latency summary (avg min p50 p95
// p99 max, ms), read off the captured files by hand.
type lat struct{ rps, avg, min, p50, p95, p99, max float64 }

func full(op string, l lat) map[string]float64 {
	return map[string]float64{op + "_ops_per_sec": l.rps, op + "_latency_avg": l.avg, op + "_latency_p50": l.p50,
		op + "_latency_p95": l.p95, op + "_latency_p99": l.p99, op + "_latency_max": l.max}
}

func merge(ms ...map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestParse(t *testing.T) {
	cases := []struct {
		file  string
		tests []string
		want  map[string]float64
	}{
		{"redis-benchmark-7.0.15-P16-c16-csv.txt", []string{"SET", "GET"}, merge(
			full("set", lat{507614.22, 0.441, 0.040, 0.199, 2.223, 4.127, 8.231}),
			full("get", lat{442477.88, 0.487, 0.040, 0.183, 2.519, 5.303, 10.063}))},
		{"redis-benchmark-7.0.15-P16-c1-csv.txt", []string{"SET", "GET"}, merge(
			full("set", lat{917431.19, 0.013, 0.008, 0.015, 0.015, 0.031, 1.847}),
			full("get", lat{980392.19, 0.013, 0.008, 0.015, 0.015, 0.023, 1.623}))},
		{"redis-benchmark-7.0.15-c8-5ops-csv.txt", []string{"SET", "GET", "INCR", "LPUSH", "MSET (10 keys)"}, merge(
			full("set", lat{37453.18, 0.173, 0.008, 0.047, 0.183, 3.519, 44.927}),
			full("get", lat{40160.64, 0.162, 0.008, 0.047, 0.175, 3.231, 17.951}),
			full("incr", lat{39292.73, 0.162, 0.008, 0.047, 0.183, 3.679, 22.463}),
			full("lpush", lat{48192.77, 0.129, 0.008, 0.047, 0.111, 2.791, 27.567}),
			full("mset", lat{53050.40, 0.123, 0.008, 0.063, 0.119, 2.759, 7.055}))},
		{"redis-benchmark-7.0.15-P16-c16.txt", []string{"SET", "GET"}, merge(
			full("set", lat{457665.91, 0.487, 0.040, 0.191, 2.439, 5.527, 33.887}),
			full("get", lat{578034.69, 0.376, 0.040, 0.175, 1.103, 4.783, 28.639}))},
		{"redis-benchmark-7.0.15-P16-c4.txt", []string{"SET", "GET"}, merge(
			full("set", lat{699300.69, 0.079, 0.016, 0.055, 0.103, 1.143, 4.263}),
			full("get", lat{1000000.00, 0.055, 0.016, 0.055, 0.087, 0.119, 3.727}))},
		{"redis-benchmark-7.0.15-c8-4ops.txt", []string{"SET", "GET", "INCR", "LPUSH"}, merge(
			full("set", lat{58309.04, 0.102, 0.008, 0.047, 0.111, 2.047, 10.839}),
			full("get", lat{68493.15, 0.086, 0.008, 0.047, 0.087, 1.599, 16.183}),
			full("incr", lat{79051.38, 0.071, 0.008, 0.047, 0.135, 0.815, 4.607}),
			full("lpush", lat{49504.95, 0.121, 0.008, 0.047, 0.151, 2.551, 18.959}))},
		// -q: rate and p50 only, after carriage-return progress lines.
		{"redis-benchmark-7.0.15-P16-c1-q.txt", []string{"SET", "GET"}, map[string]float64{
			"set_ops_per_sec": 82987.55, "set_latency_p50": 0.063, "get_ops_per_sec": 354609.94, "get_latency_p50": 0.015}},
		// Before 6.2: rate only.
		{"redis-benchmark-old-d20-public.txt", []string{"SET", "GET"}, map[string]float64{
			"set_ops_per_sec": 67430.88, "get_ops_per_sec": 84317.03}},
		{"redis-benchmark-old-q-all-public.txt", []string{"PING_INLINE", "PING_BULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP", "SADD", "HSET", "SPOP",
			"LPUSH (needed to benchmark LRANGE)", "LRANGE_100 (first 100 elements)", "LRANGE_300 (first 300 elements)", "LRANGE_500 (first 450 elements)",
			"LRANGE_600 (first 600 elements)", "MSET (10 keys)"}, map[string]float64{
			"ping_inline_ops_per_sec": 106044.54, "ping_bulk_ops_per_sec": 104058.27, "set_ops_per_sec": 106382.98, "get_ops_per_sec": 106496.27,
			"incr_ops_per_sec": 109289.62, "lpush_ops_per_sec": 100806.45, "rpush_ops_per_sec": 105042.02, "lpop_ops_per_sec": 104602.52,
			"rpop_ops_per_sec": 88809.95, "sadd_ops_per_sec": 103842.16, "hset_ops_per_sec": 94250.71, "spop_ops_per_sec": 94517.96,
			"lpush_needed_to_benchmark_lrange_ops_per_sec": 93283.58, "lrange_100_ops_per_sec": 26795.28, "lrange_300_ops_per_sec": 11272.69,
			"lrange_500_ops_per_sec": 7966.22, "lrange_600_ops_per_sec": 6308.35, "mset_ops_per_sec": 77101.00}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := Parse(f)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var tests []string
			for _, o := range res.Ops {
				tests = append(tests, o.Test)
			}
			if !reflect.DeepEqual(tests, c.tests) {
				t.Errorf("tests %q, want %q", tests, c.tests)
			}
			ms := res.Metrics()
			got := map[string]sample.Metric{}
			for _, m := range ms {
				if err := m.Validate(); err != nil {
					t.Error(err)
				}
				got[m.Name] = m
			}
			if len(got) != len(c.want) || len(ms) != len(got) {
				t.Errorf("got %d metrics %v, want %d", len(ms), ms, len(c.want))
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
				switch {
				case strings.HasSuffix(name, "_ops_per_sec"):
					if m.Unit != "ops/s" || m.Better != sample.Higher || m.Agg != sample.Sum {
						t.Errorf("%s: unit %s better %s agg %s", name, m.Unit, m.Better, m.Agg)
					}
				default:
					if m.Unit != "ms" || m.Better != sample.Lower {
						t.Errorf("%s: unit %s better %s", name, m.Unit, m.Better)
					}
				}
			}
		})
	}
}

func TestParseTextDetails(t *testing.T) {
	b, err := os.ReadFile("testdata/redis-benchmark-7.0.15-P16-c16.txt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	set, ok := res.Op("set")
	if !ok || set.Requests != 200000 || set.Seconds != 0.44 || set.Min != 0.040 {
		t.Errorf("set = %+v, %v", set, ok)
	}
	if _, ok := res.Op("lpush"); ok {
		t.Error("found a test that was not run")
	}
}

func TestParseRejects(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	text := read("redis-benchmark-7.0.15-P16-c16.txt")
	csvOut := read("redis-benchmark-7.0.15-P16-c16-csv.txt")
	cases := map[string]struct {
		in, mention string
		noResult    bool
	}{
		"empty": {"", "no result", true},
		// The server wants a password; redis-benchmark exits 1.
		"noauth csv":  {read("redis-benchmark-7.0.15-noauth-csv.txt"), "NOAUTH Authentication required.", true},
		"noauth text": {read("redis-benchmark-7.0.15-noauth.txt"), "NOAUTH Authentication required.", true},
		// maxmemory reached: only the CSV header, then exit 1.
		"oom": {read("redis-benchmark-7.0.15-oom-csv.txt"), "OOM command not allowed", true},
		// Nothing listening: redis-benchmark printed this and retried
		// until it was killed.
		"closed port": {read("redis-benchmark-7.0.15-closedport-hangs.txt"), "Could not connect to Redis", true},
		// Cut after a section's header, and inside its latency summary.
		"truncated section": {text[:strings.Index(text, "throughput summary: 578034.69")], "GET: no rate", true},
		"truncated summary": {text[:strings.Index(text, "        0.376")], "latency summary cut short", true},
		"csv short row":     {strings.Replace(csvOut, `,"10.063"`, "", 1), "fields", false},
		"csv header only":   {csvOut[:strings.Index(csvOut, "\n")+1], "no result", true},
		"csv zero rate":     {strings.Replace(csvOut, "507614.22", "0.00", 1), "rate", true},
		"csv bad number":    {strings.Replace(csvOut, "507614.22", "fast", 1), "number", false},
		"csv inf":           {strings.Replace(csvOut, "507614.22", "inf", 1), "number", false},
		"twice":             {csvOut + `"SET","1.00","0.441","0.040","0.199","2.223","4.127","8.231"` + "\n", "twice", false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Parse(strings.NewReader(c.in))
			if err == nil {
				t.Fatalf("no error; result %+v", res)
			}
			if !strings.Contains(err.Error(), c.mention) {
				t.Errorf("err = %v, want it to mention %q", err, c.mention)
			}
			if errors.Is(err, ErrNoResult) != c.noResult {
				t.Errorf("err = %v: ErrNoResult is for missing numbers, not malformed ones", err)
			}
			if res.Ops != nil {
				t.Errorf("result on error: %+v", res)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	got, err := Options{Host: "10.0.0.2", Port: 6380, Clients: 16, Requests: 100000, Pipeline: 16, Tests: []string{"get", "set"},
		DataSize: 64, KeySpace: 1000, Threads: 2}.Args()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-h", "10.0.0.2", "-p", "6380", "-c", "16", "-n", "100000", "-P", "16", "-d", "64", "-r", "1000", "--threads", "2", "-t", "get,set", "--csv"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
	got, err = Options{Socket: "/run/redis.sock", Clients: 1, Requests: 10, Pipeline: 1, Tests: []string{"set"}}.Args()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"-s", "/run/redis.sock", "-c", "1", "-n", "10", "-t", "set", "--csv"}; !reflect.DeepEqual(got, want) {
		t.Errorf("socket %q, want %q", got, want)
	}
	got, err = Options{Clients: 1, Requests: 10, Tests: []string{"get"}}.Args()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"-h", "127.0.0.1", "-p", "6379", "-c", "1", "-n", "10", "-t", "get", "--csv"}; !reflect.DeepEqual(got, want) {
		t.Errorf("defaults %q, want %q", got, want)
	}
	ok := Options{Clients: 4, Requests: 100, Tests: []string{"get"}}
	for name, bad := range map[string]func(o *Options){
		"no clients":       func(o *Options) { o.Clients = 0 },
		"no requests":      func(o *Options) { o.Requests = 0 },
		"no tests":         func(o *Options) { o.Tests = nil },
		"upper-case test":  func(o *Options) { o.Tests = []string{"GET"} },
		"test with comma":  func(o *Options) { o.Tests = []string{"get,set"} },
		"negative pipe":    func(o *Options) { o.Pipeline = -1 },
		"negative size":    func(o *Options) { o.DataSize = -1 },
		"port too large":   func(o *Options) { o.Port = 70000 },
		"host with space":  func(o *Options) { o.Host = "a b" },
		"host like a flag": func(o *Options) { o.Host = "--csv" },
	} {
		o := ok
		bad(&o)
		if a, err := o.Args(); err == nil {
			t.Errorf("%s: no error, args %q", name, a)
		}
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		res, err := Parse(bytes.NewReader(in))
		if err != nil {
			return
		}
		if len(res.Ops) == 0 {
			t.Error("result without tests")
		}
		names := map[string]bool{}
		for _, m := range res.Metrics() {
			if err := m.Validate(); err != nil {
				t.Error(err)
			}
			if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				t.Errorf("non-finite %s", m.Name)
			}
			if names[m.Name] {
				t.Errorf("metric %s twice", m.Name)
			}
			names[m.Name] = true
		}
	})
}
