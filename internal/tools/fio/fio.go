// Package fio adapts the external fio tool: an argument builder for one job
// definition (optionally replicated with numjobs) and a parser for its JSON
// report (`--output-format=json`).
//
// The parser reads every job of the report, not only the first, and both
// the read and the write side (and trim, when used). It understands the
// fio 3.x layout (latencies in ns under "clat_ns", "bw_bytes") and the fio
// 2.x layout (latencies in µs under "clat", "bw" in KiB/s).
package fio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/tools/toolparse"
)

// Binary is the executable name looked up in PATH.
const Binary = "fio"

// Package is the Debian package providing Binary.
const Package = "fio"

// Patterns accepted as Job.Pattern (fio's rw=).
var Patterns = []string{"read", "write", "randread", "randwrite", "rw", "randrw"}

// Job is one fio job definition; Jobs copies of it run concurrently.
type Job struct {
	Name      string
	Directory string // where the job's files live
	Pattern   string // fio rw=
	BS        int64  // block size in bytes
	Size      int64  // file size per job in bytes
	Direct    bool   // O_DIRECT
	IODepth   int
	Jobs      int // numjobs
	Duration  time.Duration
	IOEngine  string // psync, libaio, io_uring, ...
	// StatusInterval, when set, makes fio print a full JSON report of
	// its cumulative counts every interval while it runs
	// (--status-interval), before the final one.
	StatusInterval time.Duration
}

func (j Job) base() []string {
	name := j.Name
	if name == "" {
		name = "isobench"
	}
	jobs := j.Jobs
	if jobs < 1 {
		jobs = 1
	}
	depth := j.IODepth
	if depth < 1 {
		depth = 1
	}
	direct := "0"
	if j.Direct {
		direct = "1"
	}
	a := []string{
		"--name=" + name,
		"--directory=" + j.Directory,
		"--rw=" + j.Pattern,
		"--bs=" + strconv.FormatInt(j.BS, 10),
		"--size=" + strconv.FormatInt(j.Size, 10),
		"--direct=" + direct,
		"--iodepth=" + strconv.Itoa(depth),
		"--numjobs=" + strconv.Itoa(jobs),
	}
	if j.IOEngine != "" {
		a = append(a, "--ioengine="+j.IOEngine)
	}
	return a
}

// CreateArgs builds the untimed setup run: fio lays the job's files out and
// exits (`--create_only=1`), so the timed run does not include it.
func (j Job) CreateArgs() []string {
	return append(j.base(), "--create_only=1", "--output-format=json")
}

// Args builds the timed run: time based for Duration, JSON report on
// stdout, one report entry per job (no group_reporting).
func (j Job) Args() []string {
	ms := j.Duration.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	a := append(j.base(),
		"--time_based=1",
		"--runtime="+strconv.FormatInt(ms, 10)+"ms",
		"--output-format=json",
	)
	if j.StatusInterval > 0 {
		a = append(a, "--status-interval="+strconv.FormatInt(max(1, j.StatusInterval.Milliseconds()), 10)+"ms")
	}
	return a
}

// Latency is one latency block of a side, converted to milliseconds.
type Latency struct {
	N           float64
	Min, Max    float64
	Mean        float64
	Percentiles map[float64]float64 // percentile (e.g. 99) -> ms
}

// Side is the read, write or trim part of one job.
type Side struct {
	IOs       float64 // completed I/Os (fio 3: total_ios; fio 2: estimated from io_bytes and runtime × iops)
	IOPS      float64
	BWBytes   float64 // bytes per second
	Clat      *Latency
	Activated bool // the job did I/O of this kind
}

// JobResult is one entry of the report's "jobs" array.
type JobResult struct {
	Name  string
	Error int
	Sides map[string]Side // "read", "write", "trim"
}

// Report is the decoded fio JSON output.
type Report struct {
	Version string
	// Time is when fio made the report (its timestamp_ms, the wall clock
	// of the machine it ran on); zero when the report has none (fio 2).
	Time time.Time
	Jobs []JobResult
}

type rawLat struct {
	Min        *float64           `json:"min"`
	Max        *float64           `json:"max"`
	Mean       *float64           `json:"mean"`
	N          *float64           `json:"N"`
	Percentile map[string]float64 `json:"percentile"`
}

type rawSide struct {
	IOBytes  float64  `json:"io_bytes"`
	BW       float64  `json:"bw"`
	BWBytes  *float64 `json:"bw_bytes"`
	IOPS     float64  `json:"iops"`
	Runtime  float64  `json:"runtime"`
	TotalIOs *float64 `json:"total_ios"`
	ClatNs   *rawLat  `json:"clat_ns"`
	Clat     *rawLat  `json:"clat"`
}

type rawJob struct {
	Name  string   `json:"jobname"`
	Error int      `json:"error"`
	Read  *rawSide `json:"read"`
	Write *rawSide `json:"write"`
	Trim  *rawSide `json:"trim"`
}

type rawReport struct {
	Version     string   `json:"fio version"`
	TimestampMs int64    `json:"timestamp_ms"`
	Jobs        []rawJob `json:"jobs"`
}

// ErrNoJobs is returned when the output holds no fio JSON report with jobs.
var ErrNoJobs = errors.New("fio: no JSON report with jobs in output")

// Decode reads fio's JSON output. Text fio prints before the JSON object
// (warnings such as "note: both iodepth >= 1 and synchronous I/O engine
// are selected") is skipped. Output with several reports (the status
// reports of --status-interval, then the final one) gives the last.
func Decode(r io.Reader) (*Report, error) {
	data, err := io.ReadAll(io.LimitReader(r, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("fio: reading output: %w", err)
	}
	start := bytes.IndexByte(data, '{')
	for start > 0 && data[start-1] != '\n' {
		next := bytes.IndexByte(data[start+1:], '{')
		if next < 0 {
			start = -1
			break
		}
		start += 1 + next
	}
	if start < 0 {
		return nil, ErrNoJobs
	}
	dec := json.NewDecoder(bytes.NewReader(data[start:]))
	var last *rawReport
	for {
		var raw rawReport
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			if last == nil {
				return nil, ErrNoJobs
			}
			break
		} else if err != nil {
			// a report cut short is not taken for the last one
			return nil, fmt.Errorf("fio: decoding JSON report: %w", err)
		}
		if len(raw.Jobs) > 0 {
			last = &raw
		}
	}
	raw := *last
	rep := &Report{Version: raw.Version}
	if raw.TimestampMs > 0 {
		rep.Time = time.UnixMilli(raw.TimestampMs)
	}
	for _, j := range raw.Jobs {
		jr := JobResult{Name: j.Name, Error: j.Error, Sides: map[string]Side{}}
		for name, s := range map[string]*rawSide{"read": j.Read, "write": j.Write, "trim": j.Trim} {
			if s != nil {
				jr.Sides[name] = convertSide(*s)
			}
		}
		rep.Jobs = append(rep.Jobs, jr)
	}
	return rep, nil
}

// IOs is the I/Os of one side ("read", "write", "trim") completed by
// every job of the report together.
func (rep *Report) IOs(side string) float64 {
	var n float64
	for _, j := range rep.Jobs {
		n += j.Sides[side].IOs
	}
	return n
}

func convertSide(s rawSide) Side {
	out := Side{IOPS: s.IOPS}
	if s.BWBytes != nil {
		out.BWBytes = *s.BWBytes
	} else {
		out.BWBytes = s.BW * 1024 // fio 2: KiB/s
	}
	switch {
	case s.TotalIOs != nil:
		out.IOs = *s.TotalIOs
	default:
		out.IOs = s.IOPS * s.Runtime / 1000 // runtime in ms
	}
	out.Activated = out.IOs > 0 || s.IOPS > 0 || s.IOBytes > 0
	switch {
	case s.ClatNs != nil:
		out.Clat = convertLat(*s.ClatNs, 1e-6)
	case s.Clat != nil:
		out.Clat = convertLat(*s.Clat, 1e-3) // fio 2: µs
	}
	return out
}

func convertLat(l rawLat, toMs float64) *Latency {
	if l.Max == nil || l.Mean == nil {
		return nil
	}
	out := &Latency{Max: *l.Max * toMs, Mean: *l.Mean * toMs, Percentiles: map[float64]float64{}}
	if l.Min != nil {
		out.Min = *l.Min * toMs
	}
	if l.N != nil {
		out.N = *l.N
	}
	for k, v := range l.Percentile {
		p, err := strconv.ParseFloat(k, 64)
		if err != nil || p <= 0 || p > 100 {
			continue // fio 2 pads the list with "0.00" entries
		}
		out.Percentiles[p] = v * toMs
	}
	return out
}

// Parse reads fio's JSON output and returns, for each of read, write and
// trim that any job performed, aggregated over ALL jobs of the report:
//
//   - <side>_iops (IOPS) and <side>_mib_per_sec (MiB/s): sums over jobs
//   - <side>_clat_mean (ms): mean completion latency weighted by each job's
//     I/O count
//   - <side>_clat_p50, _p95, _p99 (ms): the worst job's percentile (fio does
//     not report enough to merge percentiles exactly; the worst job is the
//     conservative bound)
//   - <side>_clat_max (ms): the largest over jobs
//
// A job that reports an error makes Parse fail.
func Parse(r io.Reader) ([]sample.Metric, error) {
	rep, err := Decode(r)
	if err != nil {
		return nil, err
	}
	return rep.Metrics()
}

// Metrics aggregates the report as Parse documents.
func (rep *Report) Metrics() ([]sample.Metric, error) {
	for _, j := range rep.Jobs {
		if j.Error != 0 {
			return nil, fmt.Errorf("fio: job %q failed with error %d", j.Name, j.Error)
		}
	}
	var ms toolparse.Metrics
	add := ms.Add
	for _, side := range []string{"read", "write", "trim"} {
		var iops, bw, weighted, weight, maxLat float64
		pct := map[float64]float64{}
		pctSeen := map[float64]int{}
		active, withLat := 0, 0
		for _, j := range rep.Jobs {
			s, ok := j.Sides[side]
			if !ok || !s.Activated {
				continue
			}
			active++
			iops += s.IOPS
			bw += s.BWBytes
			if s.Clat == nil {
				continue
			}
			withLat++
			w := s.Clat.N
			if w <= 0 {
				w = s.IOs
			}
			if w <= 0 {
				w = 1
			}
			weighted += s.Clat.Mean * w
			weight += w
			maxLat = math.Max(maxLat, s.Clat.Max)
			for _, p := range []float64{50, 95, 99} {
				if v, ok := lookup(s.Clat.Percentiles, p); ok {
					pct[p] = math.Max(pct[p], v)
					pctSeen[p]++
				}
			}
		}
		if active == 0 {
			continue
		}
		add(side+"_iops", iops, "IOPS", sample.Higher, sample.Sum)
		add(side+"_mib_per_sec", bw/(1<<20), "MiB/s", sample.Higher, sample.Sum)
		if withLat == active && weight > 0 {
			add(side+"_clat_mean", weighted/weight, "ms", sample.Lower, sample.Mean)
			for _, p := range []float64{50, 95, 99} {
				if pctSeen[p] == active {
					add(fmt.Sprintf("%s_clat_p%d", side, int(p)), pct[p], "ms", sample.Lower, sample.Max)
				}
			}
			add(side+"_clat_max", maxLat, "ms", sample.Lower, sample.Max)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("fio: no job did any I/O")
	}
	for _, m := range ms {
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || m.Value < 0 {
			return nil, fmt.Errorf("fio: metric %s has an impossible value %v", m.Name, m.Value)
		}
	}
	return ms, nil
}

// lookup finds percentile p among fio's keys ("99.000000").
func lookup(m map[float64]float64, p float64) (float64, bool) {
	for k, v := range m {
		if math.Abs(k-p) < 1e-6 {
			return v, true
		}
	}
	return 0, false
}
