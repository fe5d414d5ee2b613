// Package ab adapts ApacheBench (`ab`, Debian package apache2-utils), the
// load generator of the Apache studies: an argument builder for a run of N
// requests at concurrency C against one URL, and a parser for ab's report.
//
// ab opens C connections, sends N requests in total and reports the total
// time, requests/s, transfer rate, the failed requests (connect, receive,
// length and exception failures), non-2xx responses, the mean time per
// request and a percentile table of the request times in whole ms.
package ab

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/tools/toolparse"
)

// Binary is the executable name looked up in PATH.
const Binary = "ab"

// Package is the Debian package providing Binary.
const Package = "apache2-utils"

// MaxConcurrency is ab's own limit on -c.
const MaxConcurrency = 20000

// Options of one ab run. ab needs an open file per concurrent connection
// (raise RLIMIT_NOFILE above Concurrency, or it fails with "socket: Too many
// open files (24)") and allocates a few dozen bytes per request up front.
type Options struct {
	URL         string        // http:// or https:// URL with a path (ab rejects "http://host" without "/")
	Requests    int           // requests to perform (-n); with TimeLimit the cap
	Concurrency int           // concurrent requests (-c), 1..min(Requests, MaxConcurrency)
	TimeLimit   time.Duration // stop after this long (-t), whole seconds rounded up; 0: run all Requests
	Timeout     time.Duration // per-response timeout (-s), whole seconds rounded up; 0: ab's default (30s)
	KeepAlive   bool          // HTTP keep-alive (-k)
	// ContinueOnError (-r) keeps ab going after a socket receive error
	// instead of exiting; the errors are counted as failed requests.
	ContinueOnError bool
	Headers         []string // extra request headers (-H), "Name: value"
}

// Args validates o and builds the ab command line (without the binary
// name). It always passes -q (no progress lines on stderr, which then only
// carries ab's errors). -t comes before -n: ab's -t resets the request count
// to 50000, so the order makes Requests the cap.
func (o Options) Args() ([]string, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("ab: url %q: %w", o.URL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasPrefix(u.Path, "/") {
		return nil, fmt.Errorf("ab: url %q: want http:// or https://, a host and a path (at least \"/\")", o.URL)
	}
	if o.Requests < 1 {
		return nil, fmt.Errorf("ab: requests must be at least 1, got %d", o.Requests)
	}
	if o.Concurrency < 1 || o.Concurrency > MaxConcurrency || o.Concurrency > o.Requests {
		return nil, fmt.Errorf("ab: concurrency must be between 1 and min(requests %d, %d), got %d", o.Requests, MaxConcurrency, o.Concurrency)
	}
	if o.TimeLimit < 0 || o.Timeout < 0 {
		return nil, fmt.Errorf("ab: time limit and timeout must not be negative")
	}
	a := []string{"-q"}
	if o.TimeLimit > 0 {
		a = append(a, "-t", toolparse.Seconds(o.TimeLimit))
	}
	a = append(a, "-n", strconv.Itoa(o.Requests), "-c", strconv.Itoa(o.Concurrency))
	if o.Timeout > 0 {
		a = append(a, "-s", toolparse.Seconds(o.Timeout))
	}
	if o.KeepAlive {
		a = append(a, "-k")
	}
	if o.ContinueOnError {
		a = append(a, "-r")
	}
	for _, h := range o.Headers {
		if !strings.Contains(h, ":") || strings.ContainsAny(h, "\r\n") {
			return nil, fmt.Errorf("ab: header %q: want one line \"Name: value\"", h)
		}
		a = append(a, "-H", h)
	}
	return append(a, o.URL), nil
}

// Result is one ab report. Times per request are in milliseconds.
type Result struct {
	Concurrency       int
	TotalTime         float64 // seconds ("Time taken for tests")
	Complete          int64   // complete requests
	Failed            int64   // failed requests (normally the sum of the four kinds below)
	FailedConnect     int64
	FailedReceive     int64 // not counted separately before ab 2.3 (then HasReceive is false)
	FailedLength      int64 // responses whose length differs from the first one
	FailedExceptions  int64
	HasReceive        bool  // FailedReceive was counted (the report is not from an ab older than 2.3 with failures)
	WriteErrors       int64 // "Write errors" (broken pipe while sending)
	Non2xx            int64 // "Non-2xx responses"
	TotalTransferred  int64 // bytes received, headers included
	RequestsPerSec    float64
	TimePerRequest    float64 // ms, mean over requests with concurrency taken into account ("(mean)")
	TimePerRequestAll float64 // ms, "(mean, across all concurrent requests)"
	TransferPerSec    float64 // bytes/s (ab's Kbytes are 1024 bytes)

	HasTotalRow bool    // the "Connection Times" table's Total row
	TotalMean   float64 // ms, whole ms as ab prints it
	TotalMax    float64

	// Percentiles of the request time in whole ms, keyed by percent (50,
	// 66, 75, 80, 90, 95, 98, 99, 100). ab prints the table only for more
	// than one request.
	Percentiles map[int]float64
}

// Errors is every request that did not succeed: failed requests, write
// errors and non-2xx responses.
func (r Result) Errors() int64 { return r.Failed + r.WriteErrors + r.Non2xx }

// Metrics returns r as samples:
//
//   - total_time (s): lower is better, max over instances (the studies'
//     "total time" for a fixed number of requests)
//   - requests_per_sec (req/s), transfer_bytes_per_sec (B/s), requests
//     (complete requests, count): higher, summed
//   - time_per_request (ms, lower, mean): ab's "Time per request (mean)",
//     concurrency × total time / requests
//   - latency_avg (ms, mean) and latency_max (ms, max) from the Total row
//     of the connection times, when printed
//   - latency_p50 (ms, mean), latency_p75, latency_p90, latency_p99 (ms,
//     max), when the percentile table is printed
//   - failed_requests, failed_connect, failed_receive (ab 2.3 and later),
//     failed_length, failed_exceptions, write_errors and non_2xx_responses
//     (count, lower, summed)
func (r Result) Metrics() []sample.Metric {
	var ms toolparse.Metrics
	add := ms.Add
	add("total_time", r.TotalTime, "s", sample.Lower, sample.Max)
	add("requests_per_sec", r.RequestsPerSec, "req/s", sample.Higher, sample.Sum)
	add("transfer_bytes_per_sec", r.TransferPerSec, "B/s", sample.Higher, sample.Sum)
	add("requests", float64(r.Complete), "count", sample.Higher, sample.Sum)
	add("time_per_request", r.TimePerRequest, "ms", sample.Lower, sample.Mean)
	if r.HasTotalRow {
		add("latency_avg", r.TotalMean, "ms", sample.Lower, sample.Mean)
		add("latency_max", r.TotalMax, "ms", sample.Lower, sample.Max)
	}
	for _, p := range []int{50, 75, 90, 99} {
		if v, ok := r.Percentiles[p]; ok {
			agg := sample.Max
			if p == 50 {
				agg = sample.Mean
			}
			add("latency_p"+strconv.Itoa(p), v, "ms", sample.Lower, agg)
		}
	}
	add("failed_requests", float64(r.Failed), "count", sample.Lower, sample.Sum)
	add("failed_connect", float64(r.FailedConnect), "count", sample.Lower, sample.Sum)
	if r.HasReceive {
		add("failed_receive", float64(r.FailedReceive), "count", sample.Lower, sample.Sum)
	}
	add("failed_length", float64(r.FailedLength), "count", sample.Lower, sample.Sum)
	add("failed_exceptions", float64(r.FailedExceptions), "count", sample.Lower, sample.Sum)
	add("write_errors", float64(r.WriteErrors), "count", sample.Lower, sample.Sum)
	add("non_2xx_responses", float64(r.Non2xx), "count", sample.Lower, sample.Sum)
	return ms
}

// ErrNoResult is returned when the text holds no complete ab report (ab
// gave up: "apr_socket_recv: Connection refused (111)", a timeout, a usage
// message, truncated output) or when no request completed.
var ErrNoResult = errors.New("ab: no result in output")

var (
	num          = `([0-9]+(?:\.[0-9]+)?)`
	reConc       = regexp.MustCompile(`^Concurrency Level:\s+([0-9]+)$`)
	reTimeTaken  = regexp.MustCompile(`^Time taken for tests:\s+` + num + ` seconds$`)
	reComplete   = regexp.MustCompile(`^Complete requests:\s+([0-9]+)$`)
	reFailed     = regexp.MustCompile(`^Failed requests:\s+([0-9]+)$`)
	reFailedKind = regexp.MustCompile(`^\(Connect: ([0-9]+), (?:Receive: ([0-9]+), )?Length: ([0-9]+), Exceptions: ([0-9]+)\)$`)
	reWriteErr   = regexp.MustCompile(`^Write errors:\s+([0-9]+)$`)
	reNon2xx     = regexp.MustCompile(`^Non-2xx responses:\s+([0-9]+)$`)
	reTotalXfer  = regexp.MustCompile(`^Total transferred:\s+([0-9]+) bytes$`)
	reRPS        = regexp.MustCompile(`^Requests per second:\s+` + num + ` \[#/sec\] \(mean\)$`)
	reTPR        = regexp.MustCompile(`^Time per request:\s+` + num + ` \[ms\] \(mean\)$`)
	reTPRAll     = regexp.MustCompile(`^Time per request:\s+` + num + ` \[ms\] \(mean, across all concurrent requests\)$`)
	reRate       = regexp.MustCompile(`^Transfer rate:\s+` + num + ` \[Kbytes/sec\] received$`)
	// "Total:  51 93 13.7 91 126" (min mean sd median max) or, with -S,
	// "Total:  51 93 126" (min avg max).
	reTotalRow   = regexp.MustCompile(`^Total:\s+([0-9]+)\s+([0-9]+)(?:\s+` + num + `\s+([0-9]+))?\s+([0-9]+)$`)
	rePercentile = regexp.MustCompile(`^([0-9]{1,3})%\s+([0-9]+)(?: \(longest request\))?$`)
)

// Parse reads ab's report (stdout; ab's progress and error lines on
// stderr may be mixed in). Required: the time taken, complete requests,
// failed requests, requests per second, time per request and transfer
// rate, and at least one complete request; the failure breakdown, write
// errors, non-2xx responses, connection times and percentile table are
// read when printed. If ab stopped early, the error carries its last line
// ("apr_socket_recv: Connection refused (111)").
func Parse(r io.Reader) (Result, error) {
	var (
		res                                          Result
		p                                            = toolparse.Numbers{Tool: "ab"}
		haveTime, haveComplete, haveFailed, haveRPS  bool
		haveTPR, haveRate, haveBreakdown, inPercents bool
		oldBreakdown                                 bool
		last                                         string
	)
	sc := toolparse.Scanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" {
			last = line
		}
		switch {
		case line == "Percentage of the requests served within a certain time (ms)":
			inPercents = true
			continue
		case line == "":
			inPercents = false
			continue
		}
		if m := reConc.FindStringSubmatch(line); m != nil {
			res.Concurrency = int(p.Int(m[1]))
		} else if m := reTimeTaken.FindStringSubmatch(line); m != nil {
			res.TotalTime, haveTime = p.Float(m[1]), true
		} else if m := reComplete.FindStringSubmatch(line); m != nil {
			res.Complete, haveComplete = p.Int(m[1]), true
		} else if m := reFailed.FindStringSubmatch(line); m != nil {
			res.Failed, haveFailed = p.Int(m[1]), true
		} else if m := reFailedKind.FindStringSubmatch(line); m != nil {
			res.FailedConnect = p.Int(m[1])
			if m[2] != "" {
				res.FailedReceive = p.Int(m[2])
			} else {
				oldBreakdown = true
			}
			res.FailedLength, res.FailedExceptions = p.Int(m[3]), p.Int(m[4])
			haveBreakdown = true
		} else if m := reWriteErr.FindStringSubmatch(line); m != nil {
			res.WriteErrors = p.Int(m[1])
		} else if m := reNon2xx.FindStringSubmatch(line); m != nil {
			res.Non2xx = p.Int(m[1])
		} else if m := reTotalXfer.FindStringSubmatch(line); m != nil {
			res.TotalTransferred = p.Int(m[1])
		} else if m := reRPS.FindStringSubmatch(line); m != nil {
			res.RequestsPerSec, haveRPS = p.Float(m[1]), true
		} else if m := reTPR.FindStringSubmatch(line); m != nil {
			res.TimePerRequest, haveTPR = p.Float(m[1]), true
		} else if m := reTPRAll.FindStringSubmatch(line); m != nil {
			res.TimePerRequestAll = p.Float(m[1])
		} else if m := reRate.FindStringSubmatch(line); m != nil {
			res.TransferPerSec, haveRate = p.Float(m[1])*1024, true
		} else if m := reTotalRow.FindStringSubmatch(line); m != nil {
			res.TotalMean, res.TotalMax, res.HasTotalRow = p.Float(m[2]), p.Float(m[5]), true
		} else if m := rePercentile.FindStringSubmatch(line); m != nil && inPercents {
			pc := int(p.Int(m[1]))
			if pc < 1 || pc > 100 {
				if p.Err == nil {
					p.Err = fmt.Errorf("ab: percentile %d%% out of range", pc)
				}
				continue
			}
			if res.Percentiles == nil {
				res.Percentiles = map[int]float64{}
			}
			res.Percentiles[pc] = p.Float(m[2])
		}
	}
	if err := sc.Err(); err != nil {
		return Result{}, fmt.Errorf("ab: reading output: %w", err)
	}
	if p.Err != nil {
		return Result{}, p.Err
	}
	missing := toolparse.Missing([]toolparse.Required{
		{Seen: haveTime, Name: "Time taken for tests"},
		{Seen: haveComplete, Name: "Complete requests"},
		{Seen: haveFailed, Name: "Failed requests"},
		{Seen: haveRPS, Name: "Requests per second"},
		{Seen: haveTPR, Name: "Time per request"},
		{Seen: haveRate, Name: "Transfer rate"},
	})
	if len(missing) > 0 {
		if !haveTime && !haveComplete && last != "" {
			// ab stopped before its report; its last line says why.
			if i := strings.LastIndex(last, "..."); i >= 0 && i+3 < len(last) {
				last = last[i+3:]
			}
			return Result{}, fmt.Errorf("%w: %s", ErrNoResult, last)
		}
		return Result{}, fmt.Errorf("%w: missing %s", ErrNoResult, strings.Join(missing, ", "))
	}
	if res.Complete == 0 {
		return Result{}, fmt.Errorf("%w: no request completed (%d failed)", ErrNoResult, res.Failed)
	}
	// Without failures there is no breakdown and every kind is zero; a
	// breakdown without "Receive:" (before ab 2.3) did not count them.
	res.HasReceive = !oldBreakdown
	if res.Failed > 0 && !haveBreakdown {
		return Result{}, fmt.Errorf("%w: %d failed requests without the breakdown line", ErrNoResult, res.Failed)
	}
	if len(res.Percentiles) > 0 {
		for _, pc := range []int{50, 75, 90, 99} {
			if _, ok := res.Percentiles[pc]; !ok {
				return Result{}, fmt.Errorf("%w: percentile table without its %d%% line", ErrNoResult, pc)
			}
		}
	}
	return res, nil
}
