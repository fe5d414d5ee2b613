package service

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/tools/ab"
	"github.com/isobench/isobench/internal/tools/redisbench"
	"github.com/isobench/isobench/internal/tools/wrk"
)

// The load generators' reports are read here into metrics (with the
// parsers of internal/tools). Failures the tools count (failed or non-2xx
// requests, socket errors, Redis error replies, sysbench errors) make the
// parse fail: a server that answers with errors is a failure, never a
// number.

var errNoReport = errors.New("no report in the tool's output")

func metric(name string, v float64, unit string, b sample.Better, agg sample.Agg) sample.Metric {
	return sample.Metric{Name: name, Value: v, Unit: unit, Better: b, Agg: agg}
}

// parseAB reads ApacheBench's report (tools/ab); failed requests, write
// errors or non-2xx responses make it a failure.
func parseAB(r io.Reader) ([]sample.Metric, error) {
	res, err := ab.Parse(r)
	if err != nil {
		return nil, err
	}
	if n := res.Errors(); n > 0 {
		return nil, fmt.Errorf("ab: %d of %d requests failed (connect %d, receive %d, length %d, exceptions %d), %d write errors, %d answered non-2xx",
			res.Failed, res.Complete, res.FailedConnect, res.FailedReceive, res.FailedLength, res.FailedExceptions, res.WriteErrors, res.Non2xx)
	}
	return res.Metrics(), nil
}

// parseWrk reads wrk's report (tools/wrk); socket errors or error
// responses make it a failure.
func parseWrk(r io.Reader) ([]sample.Metric, error) {
	res, err := wrk.Parse(r)
	if err != nil {
		return nil, err
	}
	if n := res.Errors(); n > 0 {
		return nil, fmt.Errorf("wrk: %d requests failed: socket errors connect %d, read %d, write %d, timeout %d; %d non-2xx or 3xx responses",
			n, res.ConnectErrors, res.ReadErrors, res.WriteErrors, res.TimeoutErrors, res.ErrorResponses)
	}
	return append(res.Metrics(), metric("failed_requests", 0, "count", sample.Lower, sample.Sum)), nil
}

// parseRedis reads redis-benchmark's CSV (tools/redisbench); error
// replies make it a failure.
func parseRedis(r io.Reader) ([]sample.Metric, error) {
	res, err := redisbench.Parse(r)
	if err != nil {
		return nil, err
	}
	return res.Metrics(), nil
}

var (
	reSbTx    = regexp.MustCompile(`^\s*transactions:\s+(\d+)\s+\(([\d.]+) per sec\.\)`)
	reSbQ     = regexp.MustCompile(`^\s*queries:\s+(\d+)\s+\(([\d.]+) per sec\.\)`)
	reSbErr   = regexp.MustCompile(`^\s*ignored errors:\s+(\d+)`)
	reSbP95   = regexp.MustCompile(`^\s*95th percentile:\s+([\d.]+)`)
	reSbFatal = regexp.MustCompile(`^FATAL:`)
)

// parseOLTP reads a sysbench 1.0 oltp report.
func parseOLTP(r io.Reader) ([]sample.Metric, error) {
	var tps, qps, p95, ignored float64
	var have int
	var fatal []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if m := reSbTx.FindStringSubmatch(line); m != nil {
			tps, have = atof(m[2]), have|1
		} else if m := reSbQ.FindStringSubmatch(line); m != nil {
			qps, have = atof(m[2]), have|2
		} else if m := reSbP95.FindStringSubmatch(line); m != nil {
			p95, have = atof(m[1]), have|4
		} else if m := reSbErr.FindStringSubmatch(line); m != nil {
			// errors sysbench retries by design (deadlocks in read-write)
			ignored = atof(m[1])
		} else if reSbFatal.MatchString(line) {
			fatal = append(fatal, line)
		}
	}
	if len(fatal) > 0 {
		return nil, fmt.Errorf("sysbench: %s", strings.Join(fatal, "; "))
	}
	if have != 7 {
		return nil, fmt.Errorf("sysbench: %w", errNoReport)
	}
	return []sample.Metric{
		metric("tps", tps, "transactions/s", sample.Higher, sample.Sum),
		metric("qps", qps, "queries/s", sample.Higher, sample.Sum),
		metric("latency_p95", p95, "ms", sample.Lower, sample.Max),
		metric("ignored_errors", ignored, "errors", sample.Lower, sample.Sum),
	}, nil
}

func atof(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }
