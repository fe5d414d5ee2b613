// Package wrk adapts the external wrk HTTP load generator (Debian ships
// wrk 4.1): an argument builder for a run against one URL and a parser for
// wrk's text report.
//
// wrk keeps Connections connections open for Duration and sends requests as
// fast as the server answers them; its report gives requests/s, bytes/s,
// per-request latency (mean, max and, with --latency, the 50/75/90/99th
// percentiles), socket errors and the count of responses with status 400 or
// above ("Non-2xx or 3xx responses").
package wrk

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/tools/toolparse"
)

// Binary is the executable name looked up in PATH.
const Binary = "wrk"

// Package is the Debian package providing Binary.
const Package = "wrk"

// Options of one wrk run. wrk needs an open file per connection: raise
// RLIMIT_NOFILE above Connections for large runs.
type Options struct {
	URL         string        // http:// or https:// URL to request
	Connections int           // connections kept open (-c), at least 1
	Threads     int           // threads (-t); 0: 1; at most Connections
	Duration    time.Duration // length of the run (-d), rounded up to whole seconds
	Timeout     time.Duration // request timeout (--timeout), whole seconds rounded up; 0: wrk's default (2s)
	Latency     bool          // print the latency distribution (--latency): percentiles in Parse
	Headers     []string      // extra request headers (-H), "Name: value"
}

// Args validates o and builds the wrk command line (without the binary
// name). wrk's time arguments only take the units s, m and h, so durations
// are given in whole seconds.
func (o Options) Args() ([]string, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("wrk: url %q: %w", o.URL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("wrk: url %q: want http:// or https:// with a host", o.URL)
	}
	if o.Connections < 1 {
		return nil, fmt.Errorf("wrk: connections must be at least 1, got %d", o.Connections)
	}
	threads := o.Threads
	if threads == 0 {
		threads = 1
	}
	if threads < 1 || threads > o.Connections {
		return nil, fmt.Errorf("wrk: threads must be between 1 and connections (%d), got %d", o.Connections, o.Threads)
	}
	if o.Duration <= 0 {
		return nil, fmt.Errorf("wrk: duration must be positive, got %s", o.Duration)
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("wrk: timeout must not be negative, got %s", o.Timeout)
	}
	a := []string{
		"-t", strconv.Itoa(threads),
		"-c", strconv.Itoa(o.Connections),
		"-d", toolparse.Seconds(o.Duration) + "s",
	}
	if o.Timeout > 0 {
		a = append(a, "--timeout", toolparse.Seconds(o.Timeout)+"s")
	}
	if o.Latency {
		a = append(a, "--latency")
	}
	for _, h := range o.Headers {
		if !strings.Contains(h, ":") || strings.ContainsAny(h, "\r\n") {
			return nil, fmt.Errorf("wrk: header %q: want one line \"Name: value\"", h)
		}
		a = append(a, "-H", h)
	}
	return append(a, o.URL), nil
}

// Result is one wrk report. Latencies are in milliseconds.
type Result struct {
	Threads, Connections int     // from "N threads and M connections" (0 if absent)
	Requests             int64   // completed requests
	Duration             float64 // seconds the run took ("requests in 3.01s")
	BytesRead            float64 // bytes ("296.98MB read"; wrk's MB are MiB)
	RequestsPerSec       float64
	TransferPerSec       float64 // bytes/s

	LatencyAvg, LatencyStdev, LatencyMax float64 // per-thread stats line "Latency"
	HasDistribution                      bool    // --latency was given
	P50, P75, P90, P99                   float64 // latency distribution

	ConnectErrors, ReadErrors, WriteErrors, TimeoutErrors int64 // "Socket errors:" (0 when wrk omits the line)
	ErrorResponses                                        int64 // "Non-2xx or 3xx responses:" (wrk counts status >= 400)
}

// Errors is the number of failed requests wrk saw: socket errors and error
// responses together.
func (r Result) Errors() int64 {
	return r.ConnectErrors + r.ReadErrors + r.WriteErrors + r.TimeoutErrors + r.ErrorResponses
}

// Metrics returns r as samples:
//
//   - requests_per_sec (req/s), transfer_bytes_per_sec (B/s), requests
//     (count): higher is better, summed over instances
//   - total_time (s): lower, max over instances
//   - latency_avg (ms, mean over instances), latency_max (ms, max); with
//     --latency also latency_p50 (mean), latency_p75, latency_p90 and
//     latency_p99 (max)
//   - errors_connect, errors_read, errors_write, errors_timeout and
//     non_2xx_responses (count, lower, summed)
func (r Result) Metrics() []sample.Metric {
	var ms toolparse.Metrics
	add := ms.Add
	add("requests_per_sec", r.RequestsPerSec, "req/s", sample.Higher, sample.Sum)
	add("transfer_bytes_per_sec", r.TransferPerSec, "B/s", sample.Higher, sample.Sum)
	add("requests", float64(r.Requests), "count", sample.Higher, sample.Sum)
	add("total_time", r.Duration, "s", sample.Lower, sample.Max)
	add("latency_avg", r.LatencyAvg, "ms", sample.Lower, sample.Mean)
	add("latency_max", r.LatencyMax, "ms", sample.Lower, sample.Max)
	if r.HasDistribution {
		add("latency_p50", r.P50, "ms", sample.Lower, sample.Mean)
		add("latency_p75", r.P75, "ms", sample.Lower, sample.Max)
		add("latency_p90", r.P90, "ms", sample.Lower, sample.Max)
		add("latency_p99", r.P99, "ms", sample.Lower, sample.Max)
	}
	add("errors_connect", float64(r.ConnectErrors), "count", sample.Lower, sample.Sum)
	add("errors_read", float64(r.ReadErrors), "count", sample.Lower, sample.Sum)
	add("errors_write", float64(r.WriteErrors), "count", sample.Lower, sample.Sum)
	add("errors_timeout", float64(r.TimeoutErrors), "count", sample.Lower, sample.Sum)
	add("non_2xx_responses", float64(r.ErrorResponses), "count", sample.Lower, sample.Sum)
	return ms
}

// ErrNoResult is returned when the text holds no complete wrk report (a
// usage message, "unable to connect", a truncated report).
var ErrNoResult = errors.New("wrk: no result in output")

// ErrNoRequests is returned (wrapping ErrNoResult) when wrk ran but no
// request completed: a rate of zero is a failure, not a measurement.
var ErrNoRequests = fmt.Errorf("%w: no request completed", ErrNoResult)

var (
	num          = `([0-9]+(?:\.[0-9]+)?)`
	reThreads    = regexp.MustCompile(`^([0-9]+) threads and ([0-9]+) connections$`)
	reLatency    = regexp.MustCompile(`^Latency\s+` + num + `([a-z]+)\s+` + num + `([a-z]+)\s+` + num + `([a-z]+)\s+\S+%$`)
	rePercentile = regexp.MustCompile(`^(50|75|90|99)%\s+` + num + `([a-z]+)$`)
	reRequests   = regexp.MustCompile(`^([0-9]+) requests in ` + num + `([a-z]+), ` + num + `([KMGTP]?B) read$`)
	reSocket     = regexp.MustCompile(`^Socket errors: connect ([0-9]+), read ([0-9]+), write ([0-9]+), timeout ([0-9]+)$`)
	reNon2xx     = regexp.MustCompile(`^Non-2xx or 3xx responses: ([0-9]+)$`)
	reReqPerSec  = regexp.MustCompile(`^Requests/sec:\s+` + num + `$`)
	reTransfer   = regexp.MustCompile(`^Transfer/sec:\s+` + num + `([KMGTP]?B)$`)
)

// timeMs converts a wrk time (us, ms, s, m, h) to milliseconds.
func timeMs(v float64, unit string) (float64, error) {
	switch unit {
	case "us":
		return v / 1000, nil
	case "ms":
		return v, nil
	case "s":
		return v * 1000, nil
	case "m":
		return v * 60e3, nil
	case "h":
		return v * 3600e3, nil
	}
	return 0, fmt.Errorf("wrk: unknown time unit %q", unit)
}

// bytesOf converts a wrk size (B, KB, MB, ... in powers of 1024) to bytes.
func bytesOf(v float64, unit string) float64 {
	exp := strings.Index("BKMGTP", unit[:1])
	return v * math.Pow(1024, float64(exp))
}

// parser converts wrk's numbers, times included.
type parser struct{ toolparse.Numbers }

func (p *parser) ms(v, unit string) float64 {
	f := p.Float(v)
	ms, err := timeMs(f, unit)
	if err != nil && p.Err == nil {
		p.Err = err
	}
	return ms
}

// Parse reads wrk's report. The summary lines ("N requests in T, B read",
// "Requests/sec:", "Transfer/sec:") and the latency stats line are
// required; the socket error and error response lines are optional (wrk
// prints them only when they are not zero), as is the latency distribution
// (only with --latency, and then all four percentiles must be present).
// A run with zero completed requests is ErrNoRequests.
func Parse(r io.Reader) (Result, error) {
	var (
		res                                 Result
		p                                   = parser{toolparse.Numbers{Tool: "wrk"}}
		haveLatency, haveRequests, haveRate bool
		haveTransfer, inDistribution        bool
		pct                                 = map[string]float64{}
		firstLine                           string
	)
	sc := toolparse.Scanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if firstLine == "" && line != "" {
			firstLine = line
		}
		if m := reThreads.FindStringSubmatch(line); m != nil {
			res.Threads, res.Connections = int(p.Int(m[1])), int(p.Int(m[2]))
		} else if line == "Latency Distribution" {
			inDistribution = true
		} else if m := reLatency.FindStringSubmatch(line); m != nil {
			res.LatencyAvg, res.LatencyStdev, res.LatencyMax = p.ms(m[1], m[2]), p.ms(m[3], m[4]), p.ms(m[5], m[6])
			haveLatency = true
		} else if m := rePercentile.FindStringSubmatch(line); m != nil && inDistribution {
			pct[m[1]] = p.ms(m[2], m[3])
		} else if m := reRequests.FindStringSubmatch(line); m != nil {
			inDistribution = false
			res.Requests = p.Int(m[1])
			d := p.ms(m[2], m[3])
			res.Duration = d / 1000
			res.BytesRead = bytesOf(p.Float(m[4]), m[5])
			haveRequests = true
		} else if m := reSocket.FindStringSubmatch(line); m != nil {
			res.ConnectErrors, res.ReadErrors, res.WriteErrors, res.TimeoutErrors = p.Int(m[1]), p.Int(m[2]), p.Int(m[3]), p.Int(m[4])
		} else if m := reNon2xx.FindStringSubmatch(line); m != nil {
			res.ErrorResponses = p.Int(m[1])
		} else if m := reReqPerSec.FindStringSubmatch(line); m != nil {
			res.RequestsPerSec, haveRate = p.Float(m[1]), true
		} else if m := reTransfer.FindStringSubmatch(line); m != nil {
			res.TransferPerSec, haveTransfer = bytesOf(p.Float(m[1]), m[2]), true
		}
	}
	if err := sc.Err(); err != nil {
		return Result{}, fmt.Errorf("wrk: reading output: %w", err)
	}
	if p.Err != nil {
		return Result{}, p.Err
	}
	if !haveRequests || !haveRate || !haveTransfer || !haveLatency {
		missing := toolparse.Missing([]toolparse.Required{
			{Seen: haveLatency, Name: "latency stats"},
			{Seen: haveRequests, Name: "requests line"},
			{Seen: haveRate, Name: "Requests/sec"},
			{Seen: haveTransfer, Name: "Transfer/sec"},
		})
		if !haveRequests && !haveRate && firstLine != "" && !strings.HasPrefix(firstLine, "Running ") {
			return Result{}, fmt.Errorf("%w: %s", ErrNoResult, firstLine)
		}
		return Result{}, fmt.Errorf("%w: missing %s", ErrNoResult, strings.Join(missing, ", "))
	}
	if len(pct) > 0 {
		for _, k := range []string{"50", "75", "90", "99"} {
			if _, ok := pct[k]; !ok {
				return Result{}, fmt.Errorf("%w: latency distribution without its %s%% line", ErrNoResult, k)
			}
		}
		res.HasDistribution = true
		res.P50, res.P75, res.P90, res.P99 = pct["50"], pct["75"], pct["90"], pct["99"]
	}
	if res.Requests == 0 {
		if e := res.Errors(); e > 0 {
			return Result{}, fmt.Errorf("%w in %gs (%d errors: connect %d, read %d, write %d, timeout %d)", ErrNoRequests,
				res.Duration, e, res.ConnectErrors, res.ReadErrors, res.WriteErrors, res.TimeoutErrors)
		}
		return Result{}, fmt.Errorf("%w in %gs", ErrNoRequests, res.Duration)
	}
	return res, nil
}
