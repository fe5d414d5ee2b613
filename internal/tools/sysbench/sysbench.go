// Package sysbench adapts the external sysbench tool: argument builders for
// its cpu, memory and fileio tests, and a parser for its text report.
//
// Parse understands both report formats in use: sysbench 1.0.x ("CPU speed:
// events per second", "Latency (ms):", "95th percentile:") and the older
// 0.4/0.5 ("Test execution summary", "per-request statistics",
// "approx.  95 percentile: 4.81ms", "Operations performed: ...").
package sysbench

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

// Package is the Debian package providing Binary.
const Package = "sysbench"

// CPU parameters of `sysbench cpu`.
type CPU struct {
	Threads  int
	MaxPrime int
	Duration time.Duration
	// Events, when above 0, is fixed work: the threads share this many
	// events and no time limit applies (--events=N --time=0, sysbench
	// 0.4.12's --max-requests); the report's total time is the result.
	Events int
	// ReportInterval, when above 0 in a timed run, asks for an intermediate
	// report every that many seconds (--report-interval; ParseInterim).
	ReportInterval int
}

// Memory parameters of `sysbench memory`.
type Memory struct {
	Threads   int
	BlockSize int64  // bytes per operation
	TotalSize int64  // bytes to transfer at most (the duration usually ends the run first)
	Oper      string // read, write or none
	Access    string // seq or rnd
	Duration  time.Duration
	// ReportInterval: as CPU's.
	ReportInterval int
}

// FileIO modes of `sysbench fileio --file-test-mode`.
var FileIOModes = []string{"seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw"}

// FileIO parameters of `sysbench fileio`.
type FileIO struct {
	Threads   int
	BlockSize int64 // bytes per request
	TotalSize int64 // bytes over all files
	Files     int   // number of files
	Mode      string
	Direct    bool // O_DIRECT
	Duration  time.Duration
}

func common(threads int, d time.Duration) []string {
	if threads < 1 {
		threads = 1
	}
	return []string{
		"--threads=" + strconv.Itoa(threads),
		"--time=" + toolparse.Seconds(d),
		"--events=0",
		"--percentile=95",
	}
}

// Args builds `sysbench cpu ... run` (without the binary name).
func (c CPU) Args() []string {
	a := []string{"cpu"}
	a = append(a, common(c.Threads, c.Duration)...)
	if c.Events > 0 {
		for i, x := range a {
			switch {
			case strings.HasPrefix(x, "--time="):
				a[i] = "--time=0"
			case strings.HasPrefix(x, "--events="):
				a[i] = "--events=" + strconv.Itoa(c.Events)
			}
		}
	}
	if c.ReportInterval > 0 && c.Events <= 0 {
		a = append(a, "--report-interval="+strconv.Itoa(c.ReportInterval))
	}
	return append(a, "--cpu-max-prime="+strconv.Itoa(c.MaxPrime), "run")
}

// Args builds `sysbench memory ... run`.
func (m Memory) Args() []string {
	a := []string{"memory"}
	a = append(a, common(m.Threads, m.Duration)...)
	a = append(a,
		"--memory-block-size="+strconv.FormatInt(m.BlockSize, 10),
		"--memory-total-size="+strconv.FormatInt(m.TotalSize, 10),
	)
	if m.Oper != "" {
		a = append(a, "--memory-oper="+m.Oper)
	}
	if m.Access != "" {
		a = append(a, "--memory-access-mode="+m.Access)
	}
	if m.ReportInterval > 0 {
		a = append(a, "--report-interval="+strconv.Itoa(m.ReportInterval))
	}
	return append(a, "run")
}

// ThreadsStarted is the line sysbench 1.0 prints when its worker threads
// start, just before the timed work.
const ThreadsStarted = "Threads started!"

// Interim is one of sysbench 1.0's intermediate reports (--report-interval):
// At seconds after its threads started, the rate over the interval that
// ends there, PerSec in Unit: events/s for cpu ("[ 1s ] thds: 2 eps:
// 2263.31 lat (ms,95%): 1.08"), MiB/s for memory ("[ 1s ] 8150.19
// MiB/sec").
type Interim struct {
	At     float64
	PerSec float64
	Unit   string
}

var (
	reInterimEvents = regexp.MustCompile(`^\[\s*` + reNumber + `s\s*\]\s+thds:\s*[0-9]+\s+eps:\s*` + reNumber)
	reInterimMiB    = regexp.MustCompile(`^\[\s*` + reNumber + `s\s*\]\s+` + reNumber + `\s+MiB/sec`)
)

// ParseInterim reads one line of sysbench's output as an intermediate
// report; ok is false for every other line.
func ParseInterim(line string) (in Interim, ok bool) {
	line = strings.TrimSpace(line)
	if m := reInterimEvents.FindStringSubmatch(line); m != nil {
		return Interim{At: atof(m[1]), PerSec: atof(m[2]), Unit: "events/s"}, true
	}
	if m := reInterimMiB.FindStringSubmatch(line); m != nil {
		return Interim{At: atof(m[1]), PerSec: atof(m[2]), Unit: "MiB/s"}, true
	}
	return Interim{}, false
}

// TotalTime is a 1.0 report's "total time" in seconds, from its threads'
// start to their end; ok is false when the report has none.
func (rep *Report) TotalTime() (s float64, ok bool) {
	return rep.totalTime, rep.hasTotalTime
}

// TotalEvents is a 1.0 report's "total number of events" (cpu: events;
// memory: operations); ok is false when the report has none.
func (rep *Report) TotalEvents() (n float64, ok bool) {
	return rep.totalEvents, rep.hasTotalEvents
}

// Args builds `sysbench fileio ... COMMAND` where command is prepare, run or
// cleanup; the files are created in the working directory of the process.
func (f FileIO) Args(command string) []string {
	a := []string{"fileio"}
	if command == "run" {
		a = append(a, common(f.Threads, f.Duration)...)
	}
	files := f.Files
	if files < 1 {
		files = 1
	}
	a = append(a,
		"--file-total-size="+strconv.FormatInt(f.TotalSize, 10),
		"--file-num="+strconv.Itoa(files),
	)
	if command == "run" {
		a = append(a,
			"--file-block-size="+strconv.FormatInt(f.BlockSize, 10),
			"--file-test-mode="+f.Mode,
		)
	}
	if f.Direct {
		a = append(a, "--file-extra-flags=direct")
	}
	return append(a, command)
}

var (
	reNumber = `([0-9]+(?:\.[0-9]+)?)`
	// 1.0
	reEventsPerSec = regexp.MustCompile(`^events per second:\s*` + reNumber)
	reTotalOps     = regexp.MustCompile(`^Total operations:\s*([0-9]+)\s*\(\s*` + reNumber + ` per second\)`)
	reTransferred  = regexp.MustCompile(`^` + reNumber + `\s*(MiB|MB) transferred \(\s*` + reNumber + `\s*(MiB|MB)/sec\)`)
	reRate         = regexp.MustCompile(`^(reads|writes|fsyncs)/s:\s*` + reNumber)
	reThroughput   = regexp.MustCompile(`^(read|written), MiB/s:\s*` + reNumber)
	reTotalTime    = regexp.MustCompile(`^total time:\s*` + reNumber + `s`)
	reTotalEvents  = regexp.MustCompile(`^total number of events:\s*([0-9]+)`)
	reLatency      = regexp.MustCompile(`^(min|avg|max|95th percentile):\s*` + reNumber + `$`)
	// 0.4/0.5
	reOpsPerformed = regexp.MustCompile(`^Operations performed:\s*([0-9]+)\s*\(\s*` + reNumber + `\s*ops/sec\)`)
	reFileOps      = regexp.MustCompile(`^Operations performed:\s*([0-9]+) Read, ([0-9]+) Write, ([0-9]+) Other`)
	reFileBytes    = regexp.MustCompile(`^Read ` + reNumber + `([KMGT]?b)\s+Written ` + reNumber + `([KMGT]?b)`)
	reOldLatency   = regexp.MustCompile(`^(min|avg|max|approx\.\s+95 percentile):\s*` + reNumber + `ms$`)
)

// ErrNoResult is returned when the text holds no sysbench result (an error
// message, a prepare step, help text).
var ErrNoResult = errors.New("sysbench: no result in output")

// Report is sysbench's output read once; Metrics gives Parse's metrics
// from it, TotalEvents its count of events.
type Report struct {
	eventsPerSec, opsPerSec, mibPerSec   float64
	hasEvents, hasOps, hasMiB            bool
	rates                                map[string]float64 // reads/writes/fsyncs per second
	through                              map[string]float64 // read/written MiB/s
	oldFileOps                           [3]float64         // read, write, other
	oldFileBytes                         [2]float64         // read, written in MiB
	hasOldFileOps, hasOldFileBytes       bool
	totalTime                            float64
	totalEvents                          float64
	hasTotalTime, hasTotalEvents, hasLat bool
	lat                                  map[string]float64 // min avg max p95 in ms
	fatal                                string
}

func unitMiB(v float64, unit string) float64 {
	switch strings.ToLower(unit) {
	case "b":
		return v / (1 << 20)
	case "kb":
		return v / 1024
	case "mb":
		return v
	case "gb":
		return v * 1024
	case "tb":
		return v * 1024 * 1024
	}
	return v
}

func atof(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// ParseReport reads sysbench's output (any test, 1.0 or 0.4/0.5 format).
func ParseReport(r io.Reader) (*Report, error) {
	rep := &Report{rates: map[string]float64{}, through: map[string]float64{}, lat: map[string]float64{}}
	sc := toolparse.Scanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "FATAL:") && rep.fatal == "" {
			rep.fatal = line
		}
		if m := reEventsPerSec.FindStringSubmatch(line); m != nil {
			rep.eventsPerSec, rep.hasEvents = atof(m[1]), true
		} else if m := reTotalOps.FindStringSubmatch(line); m != nil {
			rep.opsPerSec, rep.hasOps = atof(m[2]), true
		} else if m := reOpsPerformed.FindStringSubmatch(line); m != nil {
			rep.opsPerSec, rep.hasOps = atof(m[2]), true
		} else if m := reTransferred.FindStringSubmatch(line); m != nil {
			// sysbench 0.4 prints "MB" but means 2^20 bytes, like 1.0's MiB.
			rep.mibPerSec, rep.hasMiB = atof(m[3]), true
		} else if m := reRate.FindStringSubmatch(line); m != nil {
			rep.rates[m[1]] = atof(m[2])
		} else if m := reThroughput.FindStringSubmatch(line); m != nil {
			rep.through[m[1]] = atof(m[2])
		} else if m := reFileOps.FindStringSubmatch(line); m != nil {
			rep.oldFileOps = [3]float64{atof(m[1]), atof(m[2]), atof(m[3])}
			rep.hasOldFileOps = true
		} else if m := reFileBytes.FindStringSubmatch(line); m != nil {
			rep.oldFileBytes = [2]float64{unitMiB(atof(m[1]), m[2]), unitMiB(atof(m[3]), m[4])}
			rep.hasOldFileBytes = true
		} else if m := reTotalTime.FindStringSubmatch(line); m != nil {
			rep.totalTime, rep.hasTotalTime = atof(m[1]), true
		} else if m := reTotalEvents.FindStringSubmatch(line); m != nil {
			rep.totalEvents, rep.hasTotalEvents = atof(m[1]), true
		} else if m := reLatency.FindStringSubmatch(line); m != nil {
			rep.lat[latKey(m[1])] = atof(m[2])
			rep.hasLat = true
		} else if m := reOldLatency.FindStringSubmatch(line); m != nil {
			rep.lat[latKey(m[1])] = atof(m[2])
			rep.hasLat = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sysbench: reading output: %w", err)
	}
	return rep, nil
}

func latKey(s string) string {
	if strings.Contains(s, "95") {
		return "p95"
	}
	return s
}

// Parse reads a sysbench report (cpu, memory or fileio; 1.0 or 0.4/0.5
// format) and returns its metrics:
//
//   - cpu: events_per_sec (events/s)
//   - memory: ops_per_sec (ops/s), mib_per_sec (MiB/s)
//   - fileio: reads_per_sec, writes_per_sec, fsyncs_per_sec (ops/s),
//     read_mib_per_sec, written_mib_per_sec (MiB/s); for the 0.4 format the
//     rates are the reported totals over the total time, and
//     fsyncs_per_sec counts sysbench's "Other" operations
//   - always, when reported: latency_avg (mean), latency_p95 and
//     latency_max (max), in ms, per event.
func Parse(r io.Reader) ([]sample.Metric, error) {
	rep, err := ParseReport(r)
	if err != nil {
		return nil, err
	}
	return rep.Metrics()
}

// Metrics are the report's metrics, as Parse describes them.
func (rep *Report) Metrics() ([]sample.Metric, error) {
	var ms toolparse.Metrics
	add := ms.Add
	valid := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case len(rep.rates) > 0 || len(rep.through) > 0:
		for _, k := range []string{"reads", "writes", "fsyncs"} {
			if v, ok := rep.rates[k]; ok {
				add(k+"_per_sec", v, "ops/s", sample.Higher, sample.Sum)
			}
		}
		for _, k := range []string{"read", "written"} {
			if v, ok := rep.through[k]; ok {
				add(k+"_mib_per_sec", v, "MiB/s", sample.Higher, sample.Sum)
			}
		}
	case rep.hasOldFileOps:
		if !rep.hasTotalTime || rep.totalTime <= 0 {
			return nil, fmt.Errorf("sysbench: fileio report without a total time")
		}
		t := rep.totalTime
		add("reads_per_sec", rep.oldFileOps[0]/t, "ops/s", sample.Higher, sample.Sum)
		add("writes_per_sec", rep.oldFileOps[1]/t, "ops/s", sample.Higher, sample.Sum)
		add("fsyncs_per_sec", rep.oldFileOps[2]/t, "ops/s", sample.Higher, sample.Sum)
		if rep.hasOldFileBytes {
			add("read_mib_per_sec", rep.oldFileBytes[0]/t, "MiB/s", sample.Higher, sample.Sum)
			add("written_mib_per_sec", rep.oldFileBytes[1]/t, "MiB/s", sample.Higher, sample.Sum)
		}
	case rep.hasOps || rep.hasMiB:
		if rep.hasOps {
			add("ops_per_sec", rep.opsPerSec, "ops/s", sample.Higher, sample.Sum)
		}
		if rep.hasMiB {
			add("mib_per_sec", rep.mibPerSec, "MiB/s", sample.Higher, sample.Sum)
		}
	case rep.hasEvents:
		add("events_per_sec", rep.eventsPerSec, "events/s", sample.Higher, sample.Sum)
	case rep.hasTotalEvents && rep.hasTotalTime && rep.totalTime > 0:
		// 0.4 cpu: no rate printed, only events and time.
		add("events_per_sec", rep.totalEvents/rep.totalTime, "events/s", sample.Higher, sample.Sum)
	default:
		if rep.fatal != "" {
			return nil, fmt.Errorf("%w: %s", ErrNoResult, rep.fatal)
		}
		return nil, ErrNoResult
	}
	if v, ok := rep.lat["avg"]; ok {
		add("latency_avg", v, "ms", sample.Lower, sample.Mean)
	}
	if v, ok := rep.lat["p95"]; ok {
		add("latency_p95", v, "ms", sample.Lower, sample.Max)
	}
	if v, ok := rep.lat["max"]; ok {
		add("latency_max", v, "ms", sample.Lower, sample.Max)
	}
	for _, m := range ms {
		if !valid(m.Value) {
			return nil, fmt.Errorf("sysbench: metric %s is not a finite number", m.Name)
		}
	}
	return ms, nil
}

// ParseFixedWork reads the report of a fixed-work run (CPU.Events) and
// returns Parse's metrics and total_time (s, the report's total time; the
// slowest instance's over instances). The report must count exactly
// events events: fewer means sysbench stopped early.
func ParseFixedWork(r io.Reader, events int) ([]sample.Metric, error) {
	rep, err := ParseReport(r)
	if err != nil {
		return nil, err
	}
	ms, err := rep.Metrics()
	if err != nil {
		return nil, err
	}
	switch {
	case !rep.hasTotalTime || !(rep.totalTime > 0) || math.IsInf(rep.totalTime, 0):
		return nil, fmt.Errorf("sysbench: fixed work without a total time")
	case !rep.hasTotalEvents:
		return nil, fmt.Errorf("sysbench: fixed work without a count of events")
	case rep.totalEvents != float64(events):
		return nil, fmt.Errorf("sysbench: %v events done of the %d asked", rep.totalEvents, events)
	}
	return append(ms, sample.Metric{Name: "total_time", Value: rep.totalTime, Unit: "s", Better: sample.Lower, Agg: sample.Max}), nil
}
