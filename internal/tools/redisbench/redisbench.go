// Package redisbench adapts redis-benchmark (Debian package redis-tools):
// an argument builder for a run of chosen tests (get, set, ...) against one
// Redis server, and a parser for its reports.
//
// The builder asks for --csv: one line per test under a header naming the
// columns ("test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
// "p95_latency_ms","p99_latency_ms","max_latency_ms" in redis-benchmark 7),
// and no progress lines, which the default output writes between the
// results with carriage returns. Parse also reads the default text report
// (7.x "Summary:" with throughput and latency summaries, and the older
// "N requests per second" form), the -q one-liners and the header-less CSV
// of redis-benchmark before 6.2, so output captured by hand parses too.
package redisbench

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/tools/toolparse"
)

// Binary is the executable name looked up in PATH.
const Binary = "redis-benchmark"

// Package is the Debian package providing Binary.
const Package = "redis-tools"

// DefaultPort is Redis's default port.
const DefaultPort = 6379

var reTest = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Options of one redis-benchmark run. redis-benchmark does not give up
// when it cannot connect (it retries forever): run it under a deadline.
type Options struct {
	Host     string   // server address (-h); default 127.0.0.1
	Port     int      // server port (-p); 0: 6379
	Socket   string   // unix socket (-s); overrides Host and Port
	Password string   // the server's requirepass (-a); redis-benchmark takes it in its arguments only
	Clients  int      // parallel connections (-c), at least 1
	Requests int      // total requests per test (-n), at least 1
	Pipeline int      // requests per pipeline (-P); 0 or 1: none
	Tests    []string // tests to run (-t), lower case: get, set, incr, lpush, ...; at least one
	DataSize int      // value size in bytes for SET/GET (-d); 0: redis-benchmark's default (3)
	KeySpace int      // random keys in [0, KeySpace) (-r); 0: one key
	Threads  int      // client threads (--threads); 0: single-threaded
}

// Args validates o and builds the redis-benchmark command line (without
// the binary name), always with --csv.
func (o Options) Args() ([]string, error) {
	if o.Clients < 1 {
		return nil, fmt.Errorf("redis-benchmark: clients must be at least 1, got %d", o.Clients)
	}
	if o.Requests < 1 {
		return nil, fmt.Errorf("redis-benchmark: requests must be at least 1, got %d", o.Requests)
	}
	if o.Pipeline < 0 || o.DataSize < 0 || o.KeySpace < 0 || o.Threads < 0 {
		return nil, fmt.Errorf("redis-benchmark: pipeline, data size, key space and threads must not be negative")
	}
	if len(o.Tests) == 0 {
		return nil, fmt.Errorf("redis-benchmark: no tests given (for example get,set)")
	}
	for _, t := range o.Tests {
		if !reTest.MatchString(t) {
			return nil, fmt.Errorf("redis-benchmark: test %q: want a lower-case test name such as get or set", t)
		}
	}
	var a []string
	if o.Socket != "" {
		a = append(a, "-s", o.Socket)
	} else {
		host := o.Host
		if host == "" {
			host = "127.0.0.1"
		}
		if strings.ContainsAny(host, " \t\r\n") || strings.HasPrefix(host, "-") {
			return nil, fmt.Errorf("redis-benchmark: host %q is not an address", host)
		}
		port := o.Port
		if port == 0 {
			port = DefaultPort
		}
		if port < 1 || port > 65535 {
			return nil, fmt.Errorf("redis-benchmark: port %d out of range", port)
		}
		a = append(a, "-h", host, "-p", strconv.Itoa(port))
	}
	if o.Password != "" {
		if strings.ContainsAny(o.Password, " \t\r\n") || strings.HasPrefix(o.Password, "-") {
			return nil, fmt.Errorf("redis-benchmark: the password has spaces or starts with '-'")
		}
		a = append(a, "-a", o.Password)
	}
	a = append(a, "-c", strconv.Itoa(o.Clients), "-n", strconv.Itoa(o.Requests))
	if o.Pipeline > 1 {
		a = append(a, "-P", strconv.Itoa(o.Pipeline))
	}
	if o.DataSize > 0 {
		a = append(a, "-d", strconv.Itoa(o.DataSize))
	}
	if o.KeySpace > 0 {
		a = append(a, "-r", strconv.Itoa(o.KeySpace))
	}
	if o.Threads > 0 {
		a = append(a, "--threads", strconv.Itoa(o.Threads))
	}
	return append(a, "-t", strings.Join(o.Tests, ","), "--csv"), nil
}

// Op is the result of one test. Latencies are in milliseconds; which of
// them are known depends on the output format (Has*).
type Op struct {
	Test           string  // as redis-benchmark names it: "SET", "MSET (10 keys)"
	Name           string  // metric prefix: "set", "mset" (see Parse)
	RequestsPerSec float64 // requests (commands) per second

	HasLatency                   bool // avg, min, p50, p95, p99 and max (7.x CSV and text)
	Avg, Min, P50, P95, P99, Max float64
	HasP50                       bool // P50 known (also from 7.x -q)

	Requests int64   // "N requests completed in T seconds" (text only; 0 if absent)
	Seconds  float64 // T
}

// Result is one redis-benchmark report: its tests in the order printed.
type Result struct {
	Ops []Op
}

// Op returns the test whose metric prefix is name ("get", "set").
func (r Result) Op(name string) (Op, bool) {
	for _, o := range r.Ops {
		if o.Name == name {
			return o, true
		}
	}
	return Op{}, false
}

// Metrics returns, for every test (NAME: its metric prefix, e.g. get, set):
//
//   - NAME_ops_per_sec (ops/s, higher, summed over instances)
//   - NAME_latency_avg (ms, lower, mean), NAME_latency_p50 (ms, lower,
//     mean), NAME_latency_p95, NAME_latency_p99 and NAME_latency_max (ms,
//     lower, max), when the report has them (redis-benchmark 7; -q has
//     only p50).
func (r Result) Metrics() []sample.Metric {
	var ms toolparse.Metrics
	add := ms.Add
	for _, o := range r.Ops {
		add(o.Name+"_ops_per_sec", o.RequestsPerSec, "ops/s", sample.Higher, sample.Sum)
		if o.HasLatency {
			add(o.Name+"_latency_avg", o.Avg, "ms", sample.Lower, sample.Mean)
		}
		if o.HasP50 {
			add(o.Name+"_latency_p50", o.P50, "ms", sample.Lower, sample.Mean)
		}
		if o.HasLatency {
			add(o.Name+"_latency_p95", o.P95, "ms", sample.Lower, sample.Max)
			add(o.Name+"_latency_p99", o.P99, "ms", sample.Lower, sample.Max)
			add(o.Name+"_latency_max", o.Max, "ms", sample.Lower, sample.Max)
		}
	}
	return ms
}

// ErrNoResult is returned when the text holds no test result (an error
// from the server such as "NOAUTH Authentication required." or "OOM
// command not allowed", a refused connection, a truncated report).
var ErrNoResult = errors.New("redis-benchmark: no result in output")

var (
	num         = `([0-9]+(?:\.[0-9]+)?)`
	reSection   = regexp.MustCompile(`^====== (.+) ======$`)
	reCompleted = regexp.MustCompile(`^([0-9]+) requests completed in ` + num + ` seconds$`)
	reSummary   = regexp.MustCompile(`^throughput summary: ` + num + ` requests per second$`)
	reOldRate   = regexp.MustCompile(`^` + num + ` requests per second$`)
	reQuiet     = regexp.MustCompile(`^(.+?): ` + num + ` requests per second(?:, p50=` + num + ` msec)?$`)
	reNonName   = regexp.MustCompile(`[^a-z0-9]+`)
)

// scanLines splits on \n and on \r: redis-benchmark rewrites its progress
// line with carriage returns, and the -q result follows the last one on
// the same terminal line.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

type parser struct {
	err     error
	ops     []Op
	cur     *Op // text section being read
	latCols []string
	other   []string // the first lines that are not results (an error message)
}

func (p *parser) fail(format string, a ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("redis-benchmark: "+format, a...)
	}
}

func (p *parser) float(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err == nil && (math.IsInf(v, 0) || math.IsNaN(v)) {
		err = errors.New("not finite")
	}
	if err != nil {
		p.fail("number %q: %v", s, err)
	}
	return v
}

func (p *parser) flush() {
	if p.cur == nil {
		return
	}
	if p.cur.RequestsPerSec == 0 && p.err == nil {
		p.err = fmt.Errorf("%w: test %s: no rate (truncated report?)", ErrNoResult, p.cur.Test)
	}
	p.ops = append(p.ops, *p.cur)
	p.cur = nil
}

// csvLine reads one CSV record: the 7.x header, a 7.x row, or a two-field
// row of the older CSV.
func (p *parser) csvLine(line string) {
	rec, err := csv.NewReader(strings.NewReader(line)).Read()
	if err != nil || len(rec) < 2 {
		p.fail("csv line %q: not a record", line)
		return
	}
	if rec[0] == "test" {
		p.latCols = rec[1:]
		return
	}
	op := Op{Test: rec[0]}
	if p.latCols == nil {
		if len(rec) != 2 {
			p.fail("csv line %q: %d fields without a header", line, len(rec))
			return
		}
		op.RequestsPerSec = p.float(rec[1])
		p.ops = append(p.ops, op)
		return
	}
	if len(rec)-1 != len(p.latCols) {
		p.fail("csv line %q: %d fields, header has %d", line, len(rec), len(p.latCols)+1)
		return
	}
	got := map[string]float64{}
	for i, col := range p.latCols {
		got[col] = p.float(rec[i+1])
	}
	for _, col := range []string{"rps", "avg_latency_ms", "min_latency_ms", "p50_latency_ms", "p95_latency_ms", "p99_latency_ms", "max_latency_ms"} {
		if _, ok := got[col]; !ok {
			p.fail("csv header %q lacks %s", strings.Join(p.latCols, ","), col)
			return
		}
	}
	op.RequestsPerSec = got["rps"]
	op.Avg, op.Min, op.P50 = got["avg_latency_ms"], got["min_latency_ms"], got["p50_latency_ms"]
	op.P95, op.P99, op.Max = got["p95_latency_ms"], got["p99_latency_ms"], got["max_latency_ms"]
	op.HasLatency, op.HasP50 = true, true
	p.ops = append(p.ops, op)
}

// latencyValues reads the values line under a 7.x "latency summary
// (msec):" header line.
func (p *parser) latencyValues(line string) {
	vals := strings.Fields(line)
	if len(vals) != len(p.latCols) {
		p.fail("test %s: latency summary has %d values for %d columns", p.cur.Test, len(vals), len(p.latCols))
		return
	}
	got := map[string]float64{}
	for i, c := range p.latCols {
		got[c] = p.float(vals[i])
	}
	for _, c := range []string{"avg", "min", "p50", "p95", "p99", "max"} {
		if _, ok := got[c]; !ok {
			p.fail("test %s: latency summary lacks %s", p.cur.Test, c)
			return
		}
	}
	o := p.cur
	o.Avg, o.Min, o.P50, o.P95, o.P99, o.Max = got["avg"], got["min"], got["p50"], got["p95"], got["p99"], got["max"]
	o.HasLatency, o.HasP50 = true, true
}

// Parse reads a redis-benchmark report in any of its formats (see the
// package comment). Every test must carry a rate above zero; a report
// without any test is ErrNoResult carrying redis-benchmark's first two
// other lines (its error message).
//
// Metric prefixes are the test names in lower case up to any
// parenthesised note ("MSET (10 keys)" → mset, "LRANGE_100 (first 100
// elements)" → lrange_100); when that prefix is already taken (the full
// run's second "LPUSH (needed to benchmark LRANGE)"), the whole name is
// used (lpush_needed_to_benchmark_lrange). A test reported twice under
// the same name is an error.
func Parse(r io.Reader) (Result, error) {
	var p parser
	const (
		none = iota
		latHeader
		latValues
	)
	state := none
	sc := toolparse.Scanner(r)
	sc.Split(scanLines)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || p.err != nil {
			continue
		}
		switch state {
		case latHeader:
			p.latCols = strings.Fields(line)
			state = latValues
			continue
		case latValues:
			p.latencyValues(line)
			p.latCols = nil
			state = none
			continue
		}
		if strings.HasPrefix(line, `"`) {
			p.flush()
			p.csvLine(line)
		} else if m := reSection.FindStringSubmatch(line); m != nil {
			p.flush()
			p.cur = &Op{Test: m[1]}
		} else if p.cur != nil && reCompleted.MatchString(line) {
			m := reCompleted.FindStringSubmatch(line)
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				p.fail("count %q: %v", m[1], err)
			}
			p.cur.Requests, p.cur.Seconds = n, p.float(m[2])
		} else if m := reSummary.FindStringSubmatch(line); m != nil && p.cur != nil {
			p.cur.RequestsPerSec = p.float(m[1])
		} else if line == "latency summary (msec):" && p.cur != nil {
			state = latHeader
		} else if m := reOldRate.FindStringSubmatch(line); m != nil && p.cur != nil {
			p.cur.RequestsPerSec = p.float(m[1])
		} else if m := reQuiet.FindStringSubmatch(line); m != nil && p.cur == nil {
			op := Op{Test: m[1], RequestsPerSec: p.float(m[2])}
			if m[3] != "" {
				op.P50, op.HasP50 = p.float(m[3]), true
			}
			p.ops = append(p.ops, op)
		} else if p.cur == nil && len(p.other) < 2 && !strings.Contains(line, "rps=") {
			p.other = append(p.other, line)
		}
	}
	if err := sc.Err(); err != nil {
		return Result{}, fmt.Errorf("redis-benchmark: reading output: %w", err)
	}
	if state != none && p.err == nil {
		p.err = fmt.Errorf("%w: test %s: latency summary cut short", ErrNoResult, p.cur.Test)
	}
	p.flush()
	if p.err != nil {
		return Result{}, p.err
	}
	if len(p.ops) == 0 {
		if len(p.other) > 0 {
			return Result{}, fmt.Errorf("%w: %s", ErrNoResult, strings.Join(p.other, " "))
		}
		return Result{}, ErrNoResult
	}
	seen := map[string]bool{}
	tests := map[string]bool{}
	for i := range p.ops {
		o := &p.ops[i]
		if tests[o.Test] {
			return Result{}, fmt.Errorf("redis-benchmark: test %q reported twice", o.Test)
		}
		tests[o.Test] = true
		if o.RequestsPerSec <= 0 {
			return Result{}, fmt.Errorf("%w: test %s: rate %v", ErrNoResult, o.Test, o.RequestsPerSec)
		}
		base := o.Test
		if i := strings.Index(base, " ("); i > 0 {
			base = base[:i]
		}
		o.Name = sanitize(base)
		if seen[o.Name] || o.Name == "" {
			o.Name = sanitize(o.Test)
		}
		if seen[o.Name] || o.Name == "" {
			return Result{}, fmt.Errorf("redis-benchmark: test %q: no distinct metric name", o.Test)
		}
		seen[o.Name] = true
	}
	return Result{Ops: p.ops}, nil
}

func sanitize(s string) string {
	return strings.Trim(reNonName.ReplaceAllString(strings.ToLower(s), "_"), "_")
}
