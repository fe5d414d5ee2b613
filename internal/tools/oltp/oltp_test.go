package oltp

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

// Expected values are read off the captured files by hand.
func TestParse(t *testing.T) {
	type want struct {
		tps, qps, avg, pct, max, ignored, reconnects float64
		pctName                                      string
		threads                                      int
		reads, writes, other, queries, tx            int64
		total                                        float64
	}
	cases := []struct {
		file string
		w    want
	}{
		{"sysbench-1.0.20-oltp_read_only-t1.txt", want{2309.38, 36950.11, 0.43, 0.49, 26.40, 0, 0, "latency_p95", 1, 161938, 0, 23134, 185072, 11567, 5.0074}},
		{"sysbench-1.0.20-oltp_read_only-t2.txt", want{573.81, 9180.90, 3.40, 7.56, 1099.13, 0, 0, "latency_p95", 2, 43274, 0, 6182, 49456, 3091, 5.3857}},
		{"sysbench-1.0.20-oltp_read_write-t2.txt", want{518.44, 10368.89, 3.85, 6.91, 754.28, 0, 0, "latency_p95", 2, 36330, 10380, 5190, 51900, 2595, 5.0042}},
		// 16 threads, interim reports every second, --percentile=99,
		// deadlocks restarted ("ignored errors: 9").
		{"sysbench-1.0.20-oltp_read_write-t16-report1-p99.txt", want{1094.63, 21922.22, 14.58, 56.84, 118.21, 9, 0, "latency_p99", 16, 77014, 21982, 10993, 109989, 5492, 5.0162}},
		// sysbench 1.1: "Throughput: ... time elapsed:" instead of "General statistics: total time:".
		{"sysbench-1.1.0-oltp_point_select-t16-public.txt", want{1714.17, 1714.17, 9.33, 10.65, 232.14, 0, 0, "latency_p95", 16, 1028516, 0, 0, 1028516, 1028516, 600.0085}},
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
			w := c.w
			if res.Threads != w.threads || res.Reads != w.reads || res.Writes != w.writes || res.Other != w.other ||
				res.Queries != w.queries || res.Transactions != w.tx || res.TotalTime != w.total {
				t.Errorf("result %+v, want %+v", res, w)
			}
			wantMetrics := map[string]float64{"transactions_per_sec": w.tps, "queries_per_sec": w.qps, "latency_avg": w.avg,
				w.pctName: w.pct, "latency_max": w.max, "ignored_errors": w.ignored, "reconnects": w.reconnects}
			ms := res.Metrics()
			got := map[string]sample.Metric{}
			for _, m := range ms {
				if err := m.Validate(); err != nil {
					t.Error(err)
				}
				got[m.Name] = m
			}
			if len(got) != len(wantMetrics) || len(ms) != len(got) {
				t.Errorf("got %d metrics %v, want %d", len(ms), ms, len(wantMetrics))
			}
			for name, v := range wantMetrics {
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
				case strings.HasSuffix(name, "_per_sec"):
					if m.Better != sample.Higher || m.Agg != sample.Sum {
						t.Errorf("%s: better %s agg %s", name, m.Better, m.Agg)
					}
				default:
					if m.Unit != "count" || m.Better != sample.Lower || m.Agg != sample.Sum {
						t.Errorf("%s: unit %s better %s agg %s", name, m.Unit, m.Better, m.Agg)
					}
				}
			}
		})
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
	rw := read("sysbench-1.0.20-oltp_read_write-t2.txt")
	cases := map[string]struct {
		in, mention string
		noResult    bool
	}{
		"empty":         {"", "missing", true},
		"prepare":       {read("sysbench-1.0.20-oltp-prepare.txt"), "missing transactions", true},
		"cleanup":       {read("sysbench-1.0.20-oltp-cleanup.txt"), "missing transactions", true},
		"bad password":  {read("sysbench-1.0.20-oltp_read_only-badpassword.txt"), "Access denied", true},
		"not prepared":  {read("sysbench-1.0.20-oltp_read_only-notprepared.txt"), "mysql_stmt_prepare() failed", true},
		"deadlock":      {read("sysbench-1.0.20-oltp_read_write-t4-deadlock-fatal.txt"), "Deadlock found", true},
		"server killed": {read("sysbench-1.0.20-oltp_read_only-t4-killed-fatal.txt"), "Server has gone away", true},
		// sysbench crashed (SIGSEGV) after the threads started.
		"segfault":          {read("sysbench-1.0.20-oltp_read_write-t4-killed-segv.txt"), "missing transactions", true},
		"truncated":         {rw[:strings.Index(rw, "Latency (ms):")], "latency avg", true},
		"fatal after stats": {rw + "FATAL: `thread_run' function failed\n", "thread_run", true},
		"no transactions":   {strings.Replace(rw, "2595   (518.44 per sec.)", "0      (0.00 per sec.)", 1), "no transaction", true},
		"huge count":        {strings.Replace(rw, "51900  (10368.89", strings.Repeat("9", 30)+" (10368.89", 1), "count", false},
		"huge rate":         {strings.Replace(rw, "518.44", strings.Repeat("9", 400), 1), "number", false},
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
			if res != (Result{}) {
				t.Errorf("result on error: %+v", res)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	o := Options{Test: "oltp_read_write", Socket: "/run/mysqld/mysqld.sock", User: "sb", Password: "pw", Database: "sbtest",
		Tables: 4, TableSize: 1000000, Threads: 16, Duration: 9500 * time.Millisecond, IgnoreErrors: []int{1213, 1205}}
	cases := map[string][]string{
		"prepare": {"oltp_read_write", "--db-driver=mysql", "--mysql-socket=/run/mysqld/mysqld.sock", "--mysql-user=sb", "--mysql-password=pw",
			"--mysql-db=sbtest", "--tables=4", "--table-size=1000000", "--threads=4", "prepare"},
		"run": {"oltp_read_write", "--db-driver=mysql", "--mysql-socket=/run/mysqld/mysqld.sock", "--mysql-user=sb", "--mysql-password=pw",
			"--mysql-db=sbtest", "--tables=4", "--table-size=1000000", "--threads=16", "--time=10", "--events=0", "--percentile=95",
			"--mysql-ignore-errors=1213,1205", "run"},
		"cleanup": {"oltp_read_write", "--db-driver=mysql", "--mysql-socket=/run/mysqld/mysqld.sock", "--mysql-user=sb", "--mysql-password=pw",
			"--mysql-db=sbtest", "--tables=4", "--table-size=1000000", "cleanup"},
	}
	for cmd, want := range cases {
		got, err := o.Args(cmd)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: args %q, want %q", cmd, got, want)
		}
	}
	tcp := Options{Test: "oltp_read_only", Host: "10.0.0.3", Port: 3307, User: "sb", Database: "sbtest", TableSize: 10000,
		Duration: time.Second, Percentile: 99}
	got, err := tcp.Args("run")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"oltp_read_only", "--db-driver=mysql", "--mysql-host=10.0.0.3", "--mysql-port=3307", "--mysql-user=sb",
		"--mysql-db=sbtest", "--tables=1", "--table-size=10000", "--threads=1", "--time=1", "--events=0", "--percentile=99", "run"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tcp run %q, want %q", got, want)
	}
	ok := Options{Test: "oltp_read_only", Socket: "/s", User: "sb", Database: "sbtest", TableSize: 10, Duration: time.Second}
	for name, bad := range map[string]struct {
		cmd string
		f   func(o *Options)
	}{
		"bad command":       {"warmup", func(o *Options) {}},
		"bad test":          {"run", func(o *Options) { o.Test = "oltp_read_only.lua" }},
		"no user":           {"run", func(o *Options) { o.User = "" }},
		"no database":       {"prepare", func(o *Options) { o.Database = "" }},
		"socket and host":   {"run", func(o *Options) { o.Host = "h" }},
		"bad port":          {"run", func(o *Options) { o.Socket, o.Port = "", 70000 }},
		"no table size":     {"prepare", func(o *Options) { o.TableSize = 0 }},
		"negative threads":  {"run", func(o *Options) { o.Threads = -1 }},
		"no duration":       {"run", func(o *Options) { o.Duration = 0 }},
		"bad percentile":    {"run", func(o *Options) { o.Percentile = 101 }},
		"bad ignore code":   {"run", func(o *Options) { o.IgnoreErrors = []int{0} }},
		"newline in passwd": {"run", func(o *Options) { o.Password = "a\nb" }},
	} {
		o := ok
		bad.f(&o)
		if a, err := o.Args(bad.cmd); err == nil {
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
		if res.Transactions <= 0 || res.TransactionsPerSec <= 0 {
			t.Errorf("result without transactions: %+v", res)
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
