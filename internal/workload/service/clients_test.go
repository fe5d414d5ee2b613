package service

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/sample"
)

// The test data are real outputs of the tools against this package's
// servers on Debian 12 (ab 2.3, wrk 4.1.0, redis-benchmark 7.0.15,
// sysbench 1.0.20), captured by hand.

func parseFile(t *testing.T, name string, parse func(f *os.File) ([]sample.Metric, error)) ([]sample.Metric, error) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return parse(f)
}

func byName(ms []sample.Metric) map[string]sample.Metric {
	m := map[string]sample.Metric{}
	for _, x := range ms {
		m[x.Name] = x
	}
	return m
}

func TestParseAB(t *testing.T) {
	ms, err := parseFile(t, "ab-2.3-ok.txt", func(f *os.File) ([]sample.Metric, error) { return parseAB(f) })
	if err != nil {
		t.Fatal(err)
	}
	got := byName(ms)
	b, _ := os.ReadFile("testdata/ab-2.3-ok.txt")
	for _, want := range []struct {
		name, unit, line string
	}{
		{"requests_per_sec", "req/s", "Requests per second:"},
		{"total_time", "s", "Time taken for tests:"},
	} {
		m, ok := got[want.name]
		if !ok || m.Unit != want.unit {
			t.Fatalf("%s: %+v", want.name, m)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, want.line) && !strings.Contains(l, strconv.FormatFloat(m.Value, 'f', -1, 64)) {
				t.Errorf("%s = %v, report line %q", want.name, m.Value, l)
			}
		}
	}
	for _, n := range []string{"transfer_bytes_per_sec", "latency_p50", "latency_p99", "failed_requests"} {
		if _, ok := got[n]; !ok {
			t.Errorf("no %s", n)
		}
	}
	if got["failed_requests"].Value != 0 {
		t.Errorf("failed_requests %v", got["failed_requests"].Value)
	}
	if _, err := parseFile(t, "ab-2.3-404.txt", func(f *os.File) ([]sample.Metric, error) { return parseAB(f) }); err == nil || !strings.Contains(err.Error(), "200 answered non-2xx") {
		t.Errorf("404s: got %v, want a failure counting them", err)
	}
	if _, err := parseAB(strings.NewReader("apr_socket_recv: Connection refused (111)\n")); err == nil {
		t.Error("no report: no error")
	}
}

func TestParseWrk(t *testing.T) {
	ms, err := parseFile(t, "wrk-4.1-ok.txt", func(f *os.File) ([]sample.Metric, error) { return parseWrk(f) })
	if err != nil {
		t.Fatal(err)
	}
	got := byName(ms)
	b, _ := os.ReadFile("testdata/wrk-4.1-ok.txt")
	if !strings.Contains(string(b), "Requests/sec:") || got["requests_per_sec"].Value <= 0 || got["latency_p99"].Value < got["latency_p50"].Value {
		t.Errorf("metrics %v", ms)
	}
	if _, err := parseFile(t, "wrk-4.1-sockerr.txt", func(f *os.File) ([]sample.Metric, error) { return parseWrk(f) }); err == nil || !strings.Contains(err.Error(), "read 9740") {
		t.Errorf("socket errors: got %v, want a failure naming them", err)
	}
}

func TestParseRedis(t *testing.T) {
	ms, err := parseFile(t, "redis-benchmark-7.0-ok.csv", func(f *os.File) ([]sample.Metric, error) { return parseRedis(f) })
	if err != nil {
		t.Fatal(err)
	}
	got := byName(ms)
	for _, n := range []string{"get_ops_per_sec", "set_ops_per_sec", "get_latency_p50", "get_latency_p99", "set_latency_p50", "set_latency_p99"} {
		if got[n].Value <= 0 || got[n].Unit == "" {
			t.Errorf("%s: %+v", n, got[n])
		}
	}
	if _, err := parseFile(t, "redis-benchmark-7.0-noauth.csv", func(f *os.File) ([]sample.Metric, error) { return parseRedis(f) }); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("error replies: got %v, want a failure naming them", err)
	}
}

func TestParseOLTP(t *testing.T) {
	ms, err := parseFile(t, "sysbench-1.0-oltp-rw.txt", func(f *os.File) ([]sample.Metric, error) { return parseOLTP(f) })
	if err != nil {
		t.Fatal(err)
	}
	got := byName(ms)
	// deadlocks sysbench retries by design are counted, not failures
	if got["tps"].Value != 889.51 || got["qps"].Value != 17830.04 || got["latency_p95"].Value != 4.74 || got["ignored_errors"].Value != 5 {
		t.Errorf("metrics %v", ms)
	}
	if _, err := parseFile(t, "sysbench-1.0-oltp-refused.txt", func(f *os.File) ([]sample.Metric, error) { return parseOLTP(f) }); err == nil || !strings.Contains(err.Error(), "FATAL") {
		t.Errorf("refused: got %v, want the FATAL line", err)
	}
}
