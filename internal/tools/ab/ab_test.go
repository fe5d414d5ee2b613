package ab

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

// zeroFailures are the error counters of a report without failures.
func zeroFailures(m map[string]float64) map[string]float64 {
	for _, k := range []string{"failed_requests", "failed_connect", "failed_receive", "failed_length", "failed_exceptions", "write_errors", "non_2xx_responses"} {
		if _, ok := m[k]; !ok {
			m[k] = 0
		}
	}
	return m
}

// Expected values are read off the captured files by hand (ab's Kbytes are
// 1024 bytes; percentiles and connection times in whole ms).
func TestParse(t *testing.T) {
	cases := []struct {
		file string
		want map[string]float64
	}{
		{"ab-2.3-c50-n20000.txt", zeroFailures(map[string]float64{"total_time": 1.706, "requests_per_sec": 11723.60, "transfer_bytes_per_sec": 14402.62 * 1024,
			"requests": 20000, "time_per_request": 4.265, "latency_avg": 4, "latency_max": 60,
			"latency_p50": 3, "latency_p75": 5, "latency_p90": 8, "latency_p99": 28})},
		{"ab-2.3-c1000-n5000.txt", zeroFailures(map[string]float64{"total_time": 0.513, "requests_per_sec": 9738.31, "transfer_bytes_per_sec": 11963.67 * 1024,
			"requests": 5000, "time_per_request": 102.687, "latency_avg": 93, "latency_max": 126,
			"latency_p50": 91, "latency_p75": 102, "latency_p90": 107, "latency_p99": 126})},
		{"ab-2.3-keepalive-c100.txt", zeroFailures(map[string]float64{"total_time": 0.343, "requests_per_sec": 58380.01, "transfer_bytes_per_sec": 72005.82 * 1024,
			"requests": 20000, "time_per_request": 1.713, "latency_avg": 2, "latency_max": 9,
			"latency_p50": 1, "latency_p75": 2, "latency_p90": 4, "latency_p99": 7})},
		{"ab-2.3-t2-c8.txt", zeroFailures(map[string]float64{"total_time": 2.000, "requests_per_sec": 15342.15, "transfer_bytes_per_sec": 18848.07 * 1024,
			"requests": 30685, "time_per_request": 0.521, "latency_avg": 1, "latency_max": 44,
			"latency_p50": 0, "latency_p75": 0, "latency_p90": 1, "latency_p99": 4})},
		// One request: ab prints no percentile table.
		{"ab-2.3-n1.txt", zeroFailures(map[string]float64{"total_time": 0.005, "requests_per_sec": 191.94, "transfer_bytes_per_sec": 235.80 * 1024,
			"requests": 1, "time_per_request": 5.210, "latency_avg": 5, "latency_max": 5})},
		{"ab-2.3-non2xx.txt", zeroFailures(map[string]float64{"total_time": 0.236, "requests_per_sec": 21200.45, "transfer_bytes_per_sec": 3457.50 * 1024,
			"requests": 5000, "time_per_request": 0.943, "latency_avg": 1, "latency_max": 5,
			"latency_p50": 1, "latency_p75": 1, "latency_p90": 1, "latency_p99": 5, "non_2xx_responses": 5000})},
		{"ab-2.3-failed-length.txt", zeroFailures(map[string]float64{"total_time": 0.883, "requests_per_sec": 2265.76, "transfer_bytes_per_sec": 461.44 * 1024,
			"requests": 2000, "time_per_request": 4.414, "latency_avg": 4, "latency_max": 25,
			"latency_p50": 3, "latency_p75": 6, "latency_p90": 9, "latency_p99": 21, "failed_requests": 1519, "failed_length": 1519})},
		{"ab-2.3-failed-length-r.txt", zeroFailures(map[string]float64{"total_time": 0.745, "requests_per_sec": 2686.11, "transfer_bytes_per_sec": 540.93 * 1024,
			"requests": 2000, "time_per_request": 3.723, "latency_avg": 4, "latency_max": 20,
			"latency_p50": 2, "latency_p75": 5, "latency_p90": 8, "latency_p99": 16, "failed_requests": 591, "failed_length": 591})},
		{"ab-2.3-servergone-r.txt", zeroFailures(map[string]float64{"total_time": 16.171, "requests_per_sec": 12368.04, "transfer_bytes_per_sec": 1159.48 * 1024,
			"requests": 200000, "time_per_request": 0.809, "latency_avg": 1, "latency_max": 88,
			"latency_p50": 0, "latency_p75": 0, "latency_p90": 0, "latency_p99": 14,
			"failed_requests": 465008, "failed_receive": 184750, "failed_length": 184756, "failed_exceptions": 95502})},
		// ab 2.0.40: no "Receive:" in the breakdown, so no failed_receive.
		{"ab-2.0.40-k-c5000-public.txt", map[string]float64{"total_time": 4.381580, "requests_per_sec": 5705.70, "transfer_bytes_per_sec": 1750.05 * 1024,
			"requests": 25000, "time_per_request": 876.316, "latency_avg": 133, "latency_max": 3950,
			"latency_p50": 27, "latency_p75": 90, "latency_p90": 125, "latency_p99": 3139,
			"failed_requests": 5620, "failed_connect": 0, "failed_length": 5620, "failed_exceptions": 0, "write_errors": 0, "non_2xx_responses": 19380}},
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
				case strings.HasPrefix(name, "latency_") || name == "time_per_request":
					if m.Unit != "ms" || m.Better != sample.Lower {
						t.Errorf("%s: unit %s better %s", name, m.Unit, m.Better)
					}
				case strings.HasPrefix(name, "failed_") || name == "write_errors" || name == "non_2xx_responses":
					if m.Unit != "count" || m.Better != sample.Lower || m.Agg != sample.Sum {
						t.Errorf("%s: unit %s better %s agg %s", name, m.Unit, m.Better, m.Agg)
					}
				case name == "total_time":
					if m.Unit != "s" || m.Better != sample.Lower || m.Agg != sample.Max {
						t.Errorf("%s: unit %s better %s agg %s", name, m.Unit, m.Better, m.Agg)
					}
				default:
					if m.Better != sample.Higher || m.Agg != sample.Sum {
						t.Errorf("%s: better %s agg %s", name, m.Better, m.Agg)
					}
				}
			}
			if want := int64(c.want["failed_requests"] + c.want["write_errors"] + c.want["non_2xx_responses"]); res.Errors() != want {
				t.Errorf("Errors() = %d, want %d", res.Errors(), want)
			}
		})
	}
}

func TestParseDetails(t *testing.T) {
	b, err := os.ReadFile("testdata/ab-2.3-c1000-n5000.txt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]float64{50: 91, 66: 97, 75: 102, 80: 104, 90: 107, 95: 114, 98: 125, 99: 126, 100: 126}
	if !reflect.DeepEqual(res.Percentiles, want) {
		t.Errorf("percentiles %v, want %v", res.Percentiles, want)
	}
	if res.Concurrency != 1000 || res.TotalTransferred != 6290000 || res.TimePerRequestAll != 0.103 || !res.HasReceive {
		t.Errorf("concurrency %d transferred %d all %v receive %v", res.Concurrency, res.TotalTransferred, res.TimePerRequestAll, res.HasReceive)
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
	full := read("ab-2.3-c1000-n5000.txt")
	failed := read("ab-2.3-failed-length.txt")
	cases := map[string]struct {
		in, mention string
		noResult    bool
	}{
		"empty":       {"", "missing", true},
		"closed port": {read("ab-2.3-closedport.txt"), "apr_socket_recv: Connection refused (111)", true},
		"timeout":     {read("ab-2.3-timeout.txt"), "apr_pollset_poll: The timeout specified has expired", true},
		"usage":       {"ab: wrong number of arguments\nUsage: ab [options] [http[s]://]hostname[:port]/path\n", "Usage: ab", true},
		"truncated":   {full[:strings.Index(full, "Transfer rate")], "Transfer rate", true},
		"no requests": {strings.Replace(full, "Complete requests:      5000", "Complete requests:      0", 1), "no request completed", true},
		"no breakdown": {strings.Replace(failed, "   (Connect: 0, Receive: 0, Length: 1519, Exceptions: 0)\n", "", 1),
			"breakdown", true},
		"percentile table cut": {full[:strings.Index(full, "  90%")], "90%", true},
		"huge number":          {strings.Replace(full, "9738.31", strings.Repeat("9", 400), 1), "number", false},
		"huge count":           {strings.Replace(full, "Complete requests:      5000", "Complete requests:      "+strings.Repeat("9", 30), 1), "count", false},
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
			if res.Complete != 0 || res.Percentiles != nil {
				t.Errorf("result on error: %+v", res)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	o := Options{URL: "http://127.0.0.1:8080/index.html", Requests: 5000, Concurrency: 1000, TimeLimit: 1500 * time.Millisecond,
		Timeout: 10 * time.Second, KeepAlive: true, ContinueOnError: true, Headers: []string{"Accept-Encoding: gzip"}}
	got, err := o.Args()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-q", "-t", "2", "-n", "5000", "-c", "1000", "-s", "10", "-k", "-r", "-H", "Accept-Encoding: gzip", "http://127.0.0.1:8080/index.html"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
	got, err = Options{URL: "http://[::1]:80/", Requests: 1, Concurrency: 1}.Args()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"-q", "-n", "1", "-c", "1", "http://[::1]:80/"}; !reflect.DeepEqual(got, want) {
		t.Errorf("minimal %q, want %q", got, want)
	}
	ok := Options{URL: "http://127.0.0.1/", Requests: 100, Concurrency: 10}
	for name, bad := range map[string]func(o *Options){
		"no url":             func(o *Options) { o.URL = "" },
		"no path":            func(o *Options) { o.URL = "http://127.0.0.1" },
		"ftp":                func(o *Options) { o.URL = "ftp://127.0.0.1/" },
		"no requests":        func(o *Options) { o.Requests = 0 },
		"no concurrency":     func(o *Options) { o.Concurrency = 0 },
		"conc > requests":    func(o *Options) { o.Concurrency = 101 },
		"conc > ab's max":    func(o *Options) { o.Requests, o.Concurrency = 100000, MaxConcurrency+1 },
		"negative limit":     func(o *Options) { o.TimeLimit = -time.Second },
		"negative timeout":   func(o *Options) { o.Timeout = -time.Second },
		"header newline":     func(o *Options) { o.Headers = []string{"A: b\nC: d"} },
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
		if res.Complete <= 0 {
			t.Errorf("result with %d complete requests", res.Complete)
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
