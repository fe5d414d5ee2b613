package service

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/sample"
)

// The load generators' reports are read here into metrics. Failures the
// tools count (failed or non-2xx requests, socket errors, Redis error
// replies, sysbench errors) make the parse fail: a server that answers
// with errors is a failure, never a number.

var errNoReport = errors.New("no report in the tool's output")

func metric(name string, v float64, unit string, b sample.Better, agg sample.Agg) sample.Metric {
	return sample.Metric{Name: name, Value: v, Unit: unit, Better: b, Agg: agg}
}

var (
	reAbTime     = regexp.MustCompile(`^Time taken for tests:\s+([\d.]+) seconds`)
	reAbRPS      = regexp.MustCompile(`^Requests per second:\s+([\d.]+)`)
	reAbRate     = regexp.MustCompile(`^Transfer rate:\s+([\d.]+) \[Kbytes/sec\]`)
	reAbFailed   = regexp.MustCompile(`^Failed requests:\s+(\d+)`)
	reAbNon2xx   = regexp.MustCompile(`^Non-2xx responses:\s+(\d+)`)
	reAbComplete = regexp.MustCompile(`^Complete requests:\s+(\d+)`)
	reAbPct      = regexp.MustCompile(`^\s*(50|99)%\s+(\d+)`)
)

// parseAB reads ApacheBench's report.
func parseAB(r io.Reader) ([]sample.Metric, error) {
	var total, rps, rate, p50, p99 float64
	var have, failed, non2xx, complete int
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if m := reAbTime.FindStringSubmatch(line); m != nil {
			total, have = atof(m[1]), have|1
		} else if m := reAbRPS.FindStringSubmatch(line); m != nil {
			rps, have = atof(m[1]), have|2
		} else if m := reAbRate.FindStringSubmatch(line); m != nil {
			rate, have = atof(m[1]), have|4
		} else if m := reAbFailed.FindStringSubmatch(line); m != nil {
			failed, _ = strconv.Atoi(m[1])
		} else if m := reAbNon2xx.FindStringSubmatch(line); m != nil {
			non2xx, _ = strconv.Atoi(m[1])
		} else if m := reAbComplete.FindStringSubmatch(line); m != nil {
			complete, _ = strconv.Atoi(m[1])
		} else if m := reAbPct.FindStringSubmatch(line); m != nil {
			if m[1] == "50" {
				p50, have = atof(m[2]), have|8
			} else {
				p99, have = atof(m[2]), have|16
			}
		}
	}
	if have&7 != 7 {
		return nil, fmt.Errorf("ab: %w", errNoReport)
	}
	if failed > 0 || non2xx > 0 {
		return nil, fmt.Errorf("ab: %d of %d requests failed, %d answered non-2xx", failed, complete, non2xx)
	}
	ms := []sample.Metric{
		metric("total_time", total, "s", sample.Lower, sample.Max),
		metric("requests_per_sec", rps, "requests/s", sample.Higher, sample.Sum),
		metric("transfer_rate", rate/1024, "MiB/s", sample.Higher, sample.Sum),
		metric("failed_requests", float64(failed), "requests", sample.Lower, sample.Sum),
	}
	if have&24 == 24 {
		ms = append(ms, metric("latency_p50", p50, "ms", sample.Lower, sample.Max), metric("latency_p99", p99, "ms", sample.Lower, sample.Max))
	}
	return ms, nil
}

var (
	reWrkTotal  = regexp.MustCompile(`^\s*(\d+) requests in ([\d.]+)(us|ms|s|m),`)
	reWrkRPS    = regexp.MustCompile(`^Requests/sec:\s+([\d.]+)`)
	reWrkRate   = regexp.MustCompile(`^Transfer/sec:\s+([\d.]+)(B|KB|MB|GB)`)
	reWrkPct    = regexp.MustCompile(`^\s+(50|99)(?:\.000)?%\s+([\d.]+)(us|ms|s|m)`)
	reWrkNon2xx = regexp.MustCompile(`^\s*Non-2xx or 3xx responses:\s+(\d+)`)
	reWrkSock   = regexp.MustCompile(`^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

func wrkSeconds(v float64, unit string) float64 {
	switch unit {
	case "us":
		return v / 1e6
	case "ms":
		return v / 1e3
	case "m":
		return v * 60
	}
	return v
}

// parseWrk reads wrk's report (run with --latency).
func parseWrk(r io.Reader) ([]sample.Metric, error) {
	var total, rps, rate, p50, p99 float64
	var have int
	var errs []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if m := reWrkTotal.FindStringSubmatch(line); m != nil {
			total, have = wrkSeconds(atof(m[2]), m[3]), have|1
		} else if m := reWrkRPS.FindStringSubmatch(line); m != nil {
			rps, have = atof(m[1]), have|2
		} else if m := reWrkRate.FindStringSubmatch(line); m != nil {
			mul := map[string]float64{"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}[m[2]]
			rate, have = atof(m[1])*mul/(1<<20), have|4
		} else if m := reWrkPct.FindStringSubmatch(line); m != nil {
			v := wrkSeconds(atof(m[2]), m[3]) * 1000
			if m[1] == "50" {
				p50, have = v, have|8
			} else {
				p99, have = v, have|16
			}
		} else if m := reWrkNon2xx.FindStringSubmatch(line); m != nil {
			errs = append(errs, m[1]+" non-2xx or 3xx responses")
		} else if m := reWrkSock.FindStringSubmatch(line); m != nil {
			if line := strings.TrimSpace(line); m[1]+m[2]+m[3]+m[4] != "0000" {
				errs = append(errs, line)
			}
		}
	}
	if have&7 != 7 {
		return nil, fmt.Errorf("wrk: %w", errNoReport)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("wrk: requests failed: %s", strings.Join(errs, "; "))
	}
	ms := []sample.Metric{
		metric("total_time", total, "s", sample.Lower, sample.Max),
		metric("requests_per_sec", rps, "requests/s", sample.Higher, sample.Sum),
		metric("transfer_rate", rate, "MiB/s", sample.Higher, sample.Sum),
		metric("failed_requests", 0, "requests", sample.Lower, sample.Sum),
	}
	if have&24 == 24 {
		ms = append(ms, metric("latency_p50", p50, "ms", sample.Lower, sample.Max), metric("latency_p99", p99, "ms", sample.Lower, sample.Max))
	}
	return ms, nil
}

// parseRedisCSV reads redis-benchmark --csv: a header, then one row per
// test (rps, avg, min, p50, p95, p99, max latency in ms). Error replies
// are printed as lines redis-benchmark does not put into the table.
func parseRedisCSV(r io.Reader) ([]sample.Metric, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var rows [][]string
	var errLines []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, `"`) {
			errLines = append(errLines, line)
			continue
		}
		rec, err := csv.NewReader(strings.NewReader(line)).Read()
		if err != nil {
			return nil, fmt.Errorf("redis-benchmark: %w", err)
		}
		rows = append(rows, rec)
	}
	if len(errLines) > 0 {
		return nil, fmt.Errorf("redis-benchmark: %s", lastLines(strings.Join(errLines, "\n"), 5))
	}
	if len(rows) < 2 || rows[0][0] != "test" {
		return nil, fmt.Errorf("redis-benchmark: %w", errNoReport)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	var ms []sample.Metric
	for _, row := range rows[1:] {
		op := strings.ToLower(strings.Fields(row[0])[0])
		get := func(h string) (float64, bool) {
			i, ok := col[h]
			if !ok || i >= len(row) {
				return 0, false
			}
			v, err := strconv.ParseFloat(row[i], 64)
			return v, err == nil
		}
		rps, ok := get("rps")
		if !ok {
			return nil, fmt.Errorf("redis-benchmark: %w", errNoReport)
		}
		ms = append(ms, metric(op+"_ops_per_sec", rps, "ops/s", sample.Higher, sample.Sum))
		for _, l := range []string{"p50", "p99"} {
			if v, ok := get(l + "_latency_ms"); ok {
				ms = append(ms, metric(op+"_latency_"+l, v, "ms", sample.Lower, sample.Max))
			}
		}
	}
	return ms, nil
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
