// Package oltp adapts sysbench's OLTP benchmarks (the Lua scripts
// oltp_read_only, oltp_read_write, ... shipped with sysbench 1.0) against a
// MySQL or MariaDB server: an argument builder for their prepare, run and
// cleanup steps, and a parser for the run report (transactions/s,
// queries/s, latency, ignored errors and reconnects).
//
// The cpu, memory and fileio tests of sysbench live in package sysbench.
package oltp

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/tools/toolparse"
)

// Binary is the executable name looked up in PATH.
const Binary = "sysbench"

// Package is the Debian package providing Binary and the OLTP scripts.
const Package = "sysbench"

// Tests are the OLTP scripts of sysbench 1.0 this package runs.
var Tests = []string{"oltp_read_only", "oltp_read_write", "oltp_write_only", "oltp_point_select",
	"oltp_update_index", "oltp_update_non_index", "oltp_insert", "oltp_delete"}

// Commands are the steps of an OLTP benchmark: prepare creates and fills
// the tables, run measures, cleanup drops the tables.
var Commands = []string{"prepare", "run", "cleanup"}

// Options of one sysbench OLTP step. The password is passed on the command
// line (visible in ps): use a benchmark-only account.
type Options struct {
	Test       string        // one of Tests
	Socket     string        // server's unix socket (--mysql-socket); or Host and Port
	Host       string        // server address (--mysql-host); default: sysbench's (localhost)
	Port       int           // server port (--mysql-port); 0: 3306
	User       string        // --mysql-user; required
	Password   string        // --mysql-password
	Database   string        // --mysql-db; required (it must exist)
	Tables     int           // --tables; 0: 1
	TableSize  int           // rows per table (--table-size), at least 1
	Threads    int           // client threads (--threads); 0: 1. prepare uses min(Threads, Tables)
	Duration   time.Duration // run length (--time), whole seconds rounded up; required for run
	Percentile int           // latency percentile to report (--percentile); 0: 95
	// IgnoreErrors replaces sysbench's list of MySQL errors that restart
	// a transaction instead of ending the run (its default:
	// 1213,1020,1205, i.e. deadlocks and lock wait timeouts); they are
	// reported as ignored errors.
	IgnoreErrors []int
}

// Args validates o and builds the sysbench command line for command
// (prepare, run or cleanup), without the binary name.
func (o Options) Args(command string) ([]string, error) {
	if !contains(Commands, command) {
		return nil, fmt.Errorf("sysbench oltp: command %q: want one of %s", command, strings.Join(Commands, ", "))
	}
	if !contains(Tests, o.Test) {
		return nil, fmt.Errorf("sysbench oltp: test %q: want one of %s", o.Test, strings.Join(Tests, ", "))
	}
	if o.User == "" || o.Database == "" {
		return nil, fmt.Errorf("sysbench oltp: user and database are required")
	}
	for name, v := range map[string]string{"user": o.User, "database": o.Database, "socket": o.Socket, "host": o.Host, "password": o.Password} {
		if strings.ContainsAny(v, "\x00\r\n") {
			return nil, fmt.Errorf("sysbench oltp: %s contains a line break or NUL", name)
		}
	}
	if o.Socket != "" && (o.Host != "" || o.Port != 0) {
		return nil, fmt.Errorf("sysbench oltp: give a socket or a host and port, not both")
	}
	if o.Port < 0 || o.Port > 65535 {
		return nil, fmt.Errorf("sysbench oltp: port %d out of range", o.Port)
	}
	if o.Tables < 0 || o.Threads < 0 {
		return nil, fmt.Errorf("sysbench oltp: tables and threads must not be negative")
	}
	if o.TableSize < 1 {
		return nil, fmt.Errorf("sysbench oltp: table size must be at least 1, got %d", o.TableSize)
	}
	if o.Percentile < 0 || o.Percentile > 100 {
		return nil, fmt.Errorf("sysbench oltp: percentile %d out of range", o.Percentile)
	}
	tables, threads, pct := max(o.Tables, 1), max(o.Threads, 1), o.Percentile
	if pct == 0 {
		pct = 95
	}
	a := []string{o.Test, "--db-driver=mysql"}
	if o.Socket != "" {
		a = append(a, "--mysql-socket="+o.Socket)
	}
	if o.Host != "" {
		a = append(a, "--mysql-host="+o.Host)
	}
	if o.Port != 0 {
		a = append(a, "--mysql-port="+strconv.Itoa(o.Port))
	}
	a = append(a, "--mysql-user="+o.User)
	if o.Password != "" {
		a = append(a, "--mysql-password="+o.Password)
	}
	a = append(a, "--mysql-db="+o.Database, "--tables="+strconv.Itoa(tables), "--table-size="+strconv.Itoa(o.TableSize))
	switch command {
	case "prepare":
		a = append(a, "--threads="+strconv.Itoa(min(threads, tables)))
	case "run":
		if o.Duration <= 0 {
			return nil, fmt.Errorf("sysbench oltp: run needs a positive duration, got %s", o.Duration)
		}
		secs := int64(math.Ceil(o.Duration.Seconds()))
		a = append(a, "--threads="+strconv.Itoa(threads), "--time="+strconv.FormatInt(secs, 10), "--events=0",
			"--percentile="+strconv.Itoa(pct))
		if len(o.IgnoreErrors) > 0 {
			codes := make([]string, len(o.IgnoreErrors))
			for i, c := range o.IgnoreErrors {
				if c <= 0 {
					return nil, fmt.Errorf("sysbench oltp: MySQL error code %d", c)
				}
				codes[i] = strconv.Itoa(c)
			}
			a = append(a, "--mysql-ignore-errors="+strings.Join(codes, ","))
		}
	}
	return append(a, command), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Result is one sysbench OLTP run report. Latencies are in milliseconds
// per transaction (a sysbench "event").
type Result struct {
	Threads                int   // "Number of threads" (0 if absent)
	Reads, Writes, Other   int64 // queries performed by kind
	Queries                int64 // all queries
	Transactions           int64
	TransactionsPerSec     float64
	QueriesPerSec          float64
	IgnoredErrors          int64 // errors that restarted a transaction (deadlocks, lock waits)
	IgnoredErrorsPerSec    float64
	Reconnects             int64
	TotalTime              float64 // seconds
	LatencyMin, LatencyAvg float64
	LatencyMax             float64
	Percentile             int     // which percentile LatencyPercentile is (95 by default); 0: not printed
	LatencyPercentile      float64 // ms
}

// Metrics returns r as samples:
//
//   - transactions_per_sec (tx/s) and queries_per_sec (queries/s): higher
//     is better, summed over instances
//   - latency_avg (ms, lower, mean), latency_pNN (the percentile asked for,
//     95 by default; ms, lower, max) and latency_max (ms, lower, max)
//   - ignored_errors and reconnects (count, lower, summed)
func (r Result) Metrics() []sample.Metric {
	var ms toolparse.Metrics
	add := ms.Add
	add("transactions_per_sec", r.TransactionsPerSec, "tx/s", sample.Higher, sample.Sum)
	add("queries_per_sec", r.QueriesPerSec, "queries/s", sample.Higher, sample.Sum)
	add("latency_avg", r.LatencyAvg, "ms", sample.Lower, sample.Mean)
	if r.Percentile > 0 {
		add("latency_p"+strconv.Itoa(r.Percentile), r.LatencyPercentile, "ms", sample.Lower, sample.Max)
	}
	add("latency_max", r.LatencyMax, "ms", sample.Lower, sample.Max)
	add("ignored_errors", float64(r.IgnoredErrors), "count", sample.Lower, sample.Sum)
	add("reconnects", float64(r.Reconnects), "count", sample.Lower, sample.Sum)
	return ms
}

// ErrNoResult is returned when the text holds no OLTP run report: a
// prepare or cleanup step, a run that failed ("FATAL: ..." — the error
// then carries sysbench's first FATAL lines), or a report cut short.
var ErrNoResult = errors.New("sysbench oltp: no result in output")

var (
	num            = `([0-9]+(?:\.[0-9]+)?)`
	reThreads      = regexp.MustCompile(`^Number of threads: ([0-9]+)$`)
	reQueryKind    = regexp.MustCompile(`^(read|write|other|total):\s+([0-9]+)$`)
	reTransactions = regexp.MustCompile(`^transactions:\s+([0-9]+)\s+\(` + num + ` per sec\.\)$`)
	reQueries      = regexp.MustCompile(`^queries:\s+([0-9]+)\s+\(` + num + ` per sec\.\)$`)
	reIgnored      = regexp.MustCompile(`^ignored errors:\s+([0-9]+)\s+\(` + num + ` per sec\.\)$`)
	reReconnects   = regexp.MustCompile(`^reconnects:\s+([0-9]+)\s+\(` + num + ` per sec\.\)$`)
	reTotalTime    = regexp.MustCompile(`^(?:total time|time elapsed):\s+` + num + `s$`)
	reLatency      = regexp.MustCompile(`^(min|avg|max):\s+` + num + `$`)
	rePercentile   = regexp.MustCompile(`^([0-9]{1,3})th percentile:\s+` + num + `$`)
)

// Parse reads the report of `sysbench oltp_* run` (sysbench 1.0). Required:
// the transactions, queries, ignored errors and reconnects lines, the total
// time and the average and maximum latency; the percentile line is read
// when printed (--percentile=0 drops it). Interim reports
// (--report-interval) are skipped. Any "FATAL:" line, or a run without a
// transaction, is an error.
func Parse(r io.Reader) (Result, error) {
	var (
		res                             Result
		p                               = toolparse.Numbers{Tool: "sysbench oltp"}
		haveTx, haveQ, haveIgn, haveRec bool
		haveTime, haveAvg, haveMax      bool
		inLatency                       bool
		fatal                           []string
	)
	sc := toolparse.Scanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "FATAL:"):
			if len(fatal) < 2 {
				fatal = append(fatal, strings.TrimSpace(strings.TrimPrefix(line, "FATAL:")))
			}
			continue
		case line == "Latency (ms):":
			inLatency = true
			continue
		case line == "":
			inLatency = false // sections end with a blank line
			continue
		}
		if m := reThreads.FindStringSubmatch(line); m != nil {
			res.Threads = int(p.Int(m[1]))
		} else if m := reQueryKind.FindStringSubmatch(line); m != nil {
			v := p.Int(m[2])
			switch m[1] {
			case "read":
				res.Reads = v
			case "write":
				res.Writes = v
			case "other":
				res.Other = v
			}
		} else if m := reTransactions.FindStringSubmatch(line); m != nil {
			res.Transactions, res.TransactionsPerSec, haveTx = p.Int(m[1]), p.Float(m[2]), true
		} else if m := reQueries.FindStringSubmatch(line); m != nil {
			res.Queries, res.QueriesPerSec, haveQ = p.Int(m[1]), p.Float(m[2]), true
		} else if m := reIgnored.FindStringSubmatch(line); m != nil {
			res.IgnoredErrors, res.IgnoredErrorsPerSec, haveIgn = p.Int(m[1]), p.Float(m[2]), true
		} else if m := reReconnects.FindStringSubmatch(line); m != nil {
			res.Reconnects, haveRec = p.Int(m[1]), true
		} else if m := reTotalTime.FindStringSubmatch(line); m != nil {
			res.TotalTime, haveTime = p.Float(m[1]), true
		} else if m := reLatency.FindStringSubmatch(line); m != nil && inLatency {
			v := p.Float(m[2])
			switch m[1] {
			case "min":
				res.LatencyMin = v
			case "avg":
				res.LatencyAvg, haveAvg = v, true
			case "max":
				res.LatencyMax, haveMax = v, true
			}
		} else if m := rePercentile.FindStringSubmatch(line); m != nil && inLatency {
			pc := int(p.Int(m[1]))
			if (pc < 1 || pc > 100) && p.Err == nil {
				p.Err = fmt.Errorf("sysbench oltp: percentile %d out of range", pc)
			}
			res.Percentile, res.LatencyPercentile = pc, p.Float(m[2])
		}
	}
	if err := sc.Err(); err != nil {
		return Result{}, fmt.Errorf("sysbench oltp: reading output: %w", err)
	}
	if len(fatal) > 0 {
		return Result{}, fmt.Errorf("%w: %s", ErrNoResult, strings.Join(fatal, "; "))
	}
	if p.Err != nil {
		return Result{}, p.Err
	}
	missing := toolparse.Missing([]toolparse.Required{
		{Seen: haveTx, Name: "transactions"},
		{Seen: haveQ, Name: "queries"},
		{Seen: haveIgn, Name: "ignored errors"},
		{Seen: haveRec, Name: "reconnects"},
		{Seen: haveTime, Name: "total time"},
		{Seen: haveAvg, Name: "latency avg"},
		{Seen: haveMax, Name: "latency max"},
	})
	if len(missing) > 0 {
		return Result{}, fmt.Errorf("%w: missing %s", ErrNoResult, strings.Join(missing, ", "))
	}
	if res.Transactions == 0 || res.TransactionsPerSec == 0 {
		return Result{}, fmt.Errorf("%w: no transaction completed in %gs (%d ignored errors)", ErrNoResult, res.TotalTime, res.IgnoredErrors)
	}
	return res, nil
}
