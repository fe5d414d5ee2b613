package wrk

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

const mib = 1 << 20

// Expected values are read off the captured files by hand (times in ms,
// sizes in bytes: wrk's KB/MB are powers of 1024).
func TestParse(t *testing.T) {
	cases := []struct {
		file string
		want map[string]float64
	}{
		{"wrk-4.1.0-latency.txt", map[string]float64{
			"requests_per_sec": 81812.25, "transfer_bytes_per_sec": 98.54 * mib, "requests": 246561, "total_time": 3.01,
			"latency_avg": 1.03, "latency_max": 47.04, "latency_p50": 0.491, "latency_p75": 0.792, "latency_p90": 1.83, "latency_p99": 14.06,
			"errors_connect": 0, "errors_read": 0, "errors_write": 0, "errors_timeout": 0, "non_2xx_responses": 0}},
		{"wrk-4.1.0-plain.txt", map[string]float64{
			"requests_per_sec": 73268.05, "transfer_bytes_per_sec": 88.25 * mib, "requests": 221662, "total_time": 3.03,
			"latency_avg": 1.25, "latency_max": 36.90,
			"errors_connect": 0, "errors_read": 0, "errors_write": 0, "errors_timeout": 0, "non_2xx_responses": 0}},
		{"wrk-4.1.0-non2xx.txt", map[string]float64{
			"requests_per_sec": 122123.49, "transfer_bytes_per_sec": 20.03 * mib, "requests": 256431, "total_time": 2.10,
			"latency_avg": 0.11054, "latency_max": 5.48, "latency_p50": 0.052, "latency_p75": 0.058, "latency_p90": 0.108, "latency_p99": 1.56,
			"errors_connect": 0, "errors_read": 0, "errors_write": 0, "errors_timeout": 0, "non_2xx_responses": 256431}},
		{"wrk-4.1.0-servergone.txt", map[string]float64{
			"requests_per_sec": 47791.19, "transfer_bytes_per_sec": 57.56 * mib, "requests": 148149, "total_time": 3.10,
			"latency_avg": 0.16470, "latency_max": 4.22, "latency_p50": 0.144, "latency_p75": 0.164, "latency_p90": 0.201, "latency_p99": 0.734,
			"errors_connect": 0, "errors_read": 24, "errors_write": 354596, "errors_timeout": 0, "non_2xx_responses": 0}},
		{"wrk-4.1.0-slow-timeouts.txt", map[string]float64{
			"requests_per_sec": 23.39, "transfer_bytes_per_sec": 2.68 * 1024, "requests": 95, "total_time": 4.06,
			"latency_avg": 617.75, "latency_max": 983.99, "latency_p50": 624.78, "latency_p75": 807.99, "latency_p90": 937.60, "latency_p99": 983.99,
			"errors_connect": 0, "errors_read": 0, "errors_write": 0, "errors_timeout": 45, "non_2xx_responses": 0}},
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
				case strings.HasPrefix(name, "latency_"):
					if m.Unit != "ms" || m.Better != sample.Lower {
						t.Errorf("%s: unit %s better %s", name, m.Unit, m.Better)
					}
				case strings.HasPrefix(name, "errors_") || name == "non_2xx_responses":
					if m.Unit != "count" || m.Better != sample.Lower || m.Agg != sample.Sum {
						t.Errorf("%s: unit %s better %s agg %s", name, m.Unit, m.Better, m.Agg)
					}
				case strings.HasSuffix(name, "_per_sec"):
					if m.Better != sample.Higher || m.Agg != sample.Sum {
						t.Errorf("%s: better %s agg %s", name, m.Better, m.Agg)
					}
				}
			}
			want := int64(c.want["errors_connect"] + c.want["errors_read"] + c.want["errors_write"] + c.want["errors_timeout"] + c.want["non_2xx_responses"])
			if res.Errors() != want {
				t.Errorf("Errors() = %d, want %d", res.Errors(), want)
			}
		})
	}
}

func TestParseThreadsAndConnections(t *testing.T) {
	b, err := os.ReadFile("testdata/wrk-4.1.0-latency.txt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if res.Threads != 2 || res.Connections != 50 || res.BytesRead != 296.98*mib || res.LatencyStdev != 2.92 {
		t.Errorf("threads %d connections %d bytes %v stdev %v", res.Threads, res.Connections, res.BytesRead, res.LatencyStdev)
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
	full := read("wrk-4.1.0-latency.txt")
	cases := map[string]struct {
		in, mention string
		noRequests  bool
	}{
		"empty":       {"", "missing", false},
		"closed port": {read("wrk-4.1.0-closedport.txt"), "unable to connect", false},
		// A server that accepts connections and never answers: wrk
		// prints a full report of zeros, which is a failure.
		"zero requests": {read("wrk-4.1.0-silent-zero.txt"), "no request completed", true},
		"usage":         {"Usage: wrk <options> <url>\n  Options:\n    -c, --connections <N>  Connections to keep open\n", "Usage", false},
		// Cut before the summary, and cut inside the latency distribution.
		"truncated summary":      {full[:strings.Index(full, "Requests/sec")], "Requests/sec", false},
		"truncated distribution": {full[:strings.Index(full, "     90%")] + full[strings.Index(full, "  246561"):], "90%", false},
		"huge number":            {strings.Replace(full, "81812.25", strings.Repeat("9", 400), 1), "number", false},
		"bad unit":               {strings.Replace(full, "47.04ms", "47.04xs", 1), "unit", false},
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
			if malformed := name == "huge number" || name == "bad unit"; malformed == errors.Is(err, ErrNoResult) {
				t.Errorf("err = %v: ErrNoResult only for missing numbers, not malformed ones", err)
			}
			if errors.Is(err, ErrNoRequests) != c.noRequests {
				t.Errorf("err = %v, ErrNoRequests %v", err, !c.noRequests)
			}
			if res != (Result{}) {
				t.Errorf("result on error: %+v", res)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	o := Options{URL: "http://127.0.0.1:8080/file", Connections: 100, Threads: 2, Duration: 2500 * time.Millisecond,
		Timeout: 500 * time.Millisecond, Latency: true, Headers: []string{"Connection: close"}}
	got, err := o.Args()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-t", "2", "-c", "100", "-d", "3s", "--timeout", "1s", "--latency", "-H", "Connection: close", "http://127.0.0.1:8080/file"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
	got, err = Options{URL: "https://example.test/", Connections: 1, Duration: time.Second}.Args()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"-t", "1", "-c", "1", "-d", "1s", "https://example.test/"}; !reflect.DeepEqual(got, want) {
		t.Errorf("defaults %q, want %q", got, want)
	}
	ok := Options{URL: "http://127.0.0.1/", Connections: 4, Threads: 2, Duration: time.Second}
	for name, bad := range map[string]func(o *Options){
		"no url":             func(o *Options) { o.URL = "" },
		"ftp url":            func(o *Options) { o.URL = "ftp://127.0.0.1/" },
		"no host":            func(o *Options) { o.URL = "http:///x" },
		"no connections":     func(o *Options) { o.Connections = 0 },
		"threads > conns":    func(o *Options) { o.Threads = 5 },
		"negative threads":   func(o *Options) { o.Threads = -1 },
		"no duration":        func(o *Options) { o.Duration = 0 },
		"negative timeout":   func(o *Options) { o.Timeout = -time.Second },
		"header newline":     func(o *Options) { o.Headers = []string{"A: b\r\nC: d"} },
		"header not a field": func(o *Options) { o.Headers = []string{"nocolon"} },
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
		if res.Requests <= 0 {
			t.Errorf("result with %d requests", res.Requests)
		}
		for _, m := range res.Metrics() {
			if err := m.Validate(); err != nil {
				t.Error(err)
			}
			if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				t.Errorf("non-finite %s", m.Name)
			}
		}
	})
}
