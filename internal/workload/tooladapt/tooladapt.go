// Package tooladapt declares in-guest workloads that run external benchmark
// tools (sysbench, fio, iperf3, sockperf) inside an instance and report
// their parsed results. The tools must be present in the instance: the
// "tools" image profile (image=tools) copies the host's binaries with all
// their libraries into the root file system.
//
// Parameter names mirror the built-in workloads where they overlap
// (threads, max-prime, duration, block-size, total-size, oper, access).
//
// The network workloads (tool:iperf3, tool:sockperf) are clients. With
// server left empty they start the tool's server on 127.0.0.1 inside the
// same instance during the untimed setup, so they measure the instance's
// own loopback path; with server=ADDRESS they only run the client against a
// server someone else placed there (the network workloads place servers in
// other instances or on the host).
package tooladapt

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/tools/fio"
	"github.com/isobench/isobench/internal/tools/iperf3"
	"github.com/isobench/isobench/internal/tools/sockperf"
	"github.com/isobench/isobench/internal/tools/sysbench"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/cpu"
)

// Workload names.
const (
	SysbenchCPU    = "tool:sysbench-cpu"
	SysbenchMemory = "tool:sysbench-memory"
	SysbenchFileIO = "tool:sysbench-fileio"
	Fio            = "tool:fio"
	Iperf3         = "tool:iperf3"
	Sockperf       = "tool:sockperf"
)

func durationParam(def string) workload.Param {
	return workload.Param{Name: "duration", Kind: workload.Duration, Default: def, Min: 1, Max: 86400,
		Help: "how long the tool runs (whole seconds for sysbench, iperf3 and sockperf)"}
}

func threadsParam() workload.Param {
	return workload.Param{Name: "threads", Kind: workload.Int, Default: "1", Min: 1, Max: 4096, Help: "worker threads"}
}

func timeout(p workload.Params) time.Duration {
	return p.Duration("duration") + 2*time.Minute
}

// onNative is a tool workload's Needs.HostTools: the tool runs in the
// instance, so the host needs it only when it is the instance (native).
func onNative(bin, pkg string) func(workload.Params, bool) []workload.Tool {
	return func(_ workload.Params, native bool) []workload.Tool {
		if native {
			return []workload.Tool{workload.Need(bin, pkg)}
		}
		return nil
	}
}

// Defs returns every tool workload.
func Defs() []workload.Def {
	return []workload.Def{
		{
			Name:  SysbenchCPU,
			Needs: workload.Needs{HostTools: onNative("sysbench", "sysbench")},
			Help:  "external sysbench cpu: primes up to max-prime per event; events/s, latency; events=N is fixed work (--events=N --time=0, sysbench 0.4.12's --max-requests): total_time",
			Params: []workload.Param{
				threadsParam(),
				{Name: "max-prime", Kind: workload.Int, Default: "10000", Min: 3, Max: 1e9, Help: "upper limit of the primes verified per event"},
				durationParam("10s"),
				{Name: "events", Kind: workload.Int, Default: "0", Min: 0, Max: 1e12, Help: "fixed work: the threads share this many events and the metric is the total time (study 004); 0 = run for duration"},
			},
			Agent: runSysbenchCPU,
			// the same work as isobench's cpu, so the same bounds
			Timeout:   cpu.Def.Timeout,
			Estimate:  cpu.Def.Estimate,
			FixedWork: cpu.Def.FixedWork,
		},
		{
			Name:  SysbenchMemory,
			Needs: workload.Needs{HostTools: onNative("sysbench", "sysbench")},
			Help:  "external sysbench memory: block-size transfers over a buffer; ops/s, MiB/s",
			Params: []workload.Param{
				threadsParam(),
				{Name: "block-size", Kind: workload.Size, Default: "1k", Min: 1, Max: 1 << 30, Help: "bytes per operation"},
				{Name: "total-size", Kind: workload.Size, Default: "100g", Min: 1, Help: "bytes to transfer at most (duration normally ends the run)"},
				{Name: "oper", Kind: workload.Enum, Default: "write", Enum: []string{"read", "write", "none"}, Help: "memory operation"},
				{Name: "access", Kind: workload.Enum, Default: "seq", Enum: []string{"seq", "rnd"}, Help: "access pattern"},
				durationParam("10s"),
			},
			Agent:    runSysbenchMemory,
			Timeout:  timeout,
			Estimate: workload.DurationPlus(500 * time.Millisecond),
		},
		{
			Name:  SysbenchFileIO,
			Needs: workload.Needs{HostTools: onNative("sysbench", "sysbench")},
			Help:  "external sysbench fileio in the scratch directory (files prepared untimed); ops/s, MiB/s, latency",
			Params: []workload.Param{
				threadsParam(),
				{Name: "block-size", Kind: workload.Size, Default: "16k", Min: 512, Max: 1 << 30, Help: "bytes per request"},
				{Name: "total-size", Kind: workload.Size, Default: "256m", Min: 1 << 20, Help: "bytes over all files"},
				{Name: "files", Kind: workload.Int, Default: "4", Min: 1, Max: 1024, Help: "number of files"},
				{Name: "mode", Kind: workload.Enum, Default: "rndrw", Enum: sysbench.FileIOModes, Help: "sysbench --file-test-mode"},
				{Name: "direct", Kind: workload.Bool, Default: "false", Help: "open files with O_DIRECT"},
				durationParam("10s"),
			},
			Agent:    runSysbenchFileIO,
			Timeout:  timeout,
			Estimate: workload.DurationPlus(500 * time.Millisecond),
		},
		{
			Name:  Fio,
			Needs: workload.Needs{HostTools: onNative("fio", "fio")},
			Help:  "external fio in the scratch directory (files laid out untimed); IOPS, MiB/s, completion latency percentiles",
			Params: []workload.Param{
				{Name: "pattern", Kind: workload.Enum, Default: "randread", Enum: fio.Patterns, Help: "fio rw="},
				{Name: "bs", Kind: workload.Size, Default: "4k", Min: 512, Max: 1 << 30, Help: "block size"},
				{Name: "size", Kind: workload.Size, Default: "256m", Min: 1 << 20, Help: "file size per job"},
				{Name: "direct", Kind: workload.Bool, Default: "false", Help: "O_DIRECT (fails on tmpfs)"},
				{Name: "iodepth", Kind: workload.Int, Default: "1", Min: 1, Max: 4096, Help: "I/Os in flight per job (asynchronous engines)"},
				{Name: "jobs", Kind: workload.Int, Default: "1", Min: 1, Max: 1024, Help: "concurrent jobs (fio numjobs); every job is reported and aggregated"},
				durationParam("10s"),
				{Name: "ioengine", Kind: workload.String, Default: "psync", Help: "fio ioengine (psync, libaio, io_uring, ...)"},
			},
			Check:    checkFio,
			Agent:    runFio,
			Timeout:  timeout,
			Estimate: workload.DurationPlus(500 * time.Millisecond),
		},
		{
			Name:  Iperf3,
			Needs: workload.Needs{HostTools: onNative("iperf3", "iperf3")},
			Help:  "external iperf3 client; server empty: a server on 127.0.0.1 in the same instance (loopback); Gbit/s, retransmits",
			Params: []workload.Param{
				{Name: "server", Kind: workload.String, Default: "", Help: "address of a running iperf3 server; none: start one on 127.0.0.1 in this instance"},
				{Name: "port", Kind: workload.Int, Default: "5201", Min: 1, Max: 65535, Help: "server port"},
				{Name: "parallel", Kind: workload.Int, Default: "1", Min: 1, Max: 128, Help: "parallel streams (-P)"},
				{Name: "reverse", Kind: workload.Bool, Default: "false", Help: "server sends (-R)"},
				{Name: "udp", Kind: workload.Bool, Default: "false", Help: "UDP instead of TCP"},
				{Name: "bitrate", Kind: workload.Int, Default: "0", Min: 0, Help: "target bits/s (-b); 0: iperf3's default"},
				clientCPUParam,
				durationParam("10s"),
			},
			Check:    checkServer,
			Agent:    runIperf3,
			Timeout:  timeout,
			Estimate: workload.DurationPlus(500 * time.Millisecond),
		},
		{
			Name:  Sockperf,
			Needs: workload.Needs{HostTools: onNative("sockperf", "sockperf")},
			Help:  "external sockperf ping-pong (request/response latency, full round trip); server empty: a server on 127.0.0.1 in the same instance",
			Params: []workload.Param{
				{Name: "server", Kind: workload.String, Default: "", Help: "address of a running sockperf server; none: start one on 127.0.0.1 in this instance"},
				{Name: "port", Kind: workload.Int, Default: "11111", Min: 1, Max: 65535, Help: "server port"},
				{Name: "tcp", Kind: workload.Bool, Default: "true", Help: "TCP (false: UDP)"},
				{Name: "msg-size", Kind: workload.Int, Default: "64", Min: 12, Max: 65000, Help: "message size in bytes"},
				clientCPUParam,
				durationParam("10s"),
			},
			Check:    checkServer,
			Agent:    runSockperf,
			Timeout:  timeout,
			Estimate: workload.DurationPlus(500 * time.Millisecond),
		},
	}
}

// clientCPUParam binds a network tool's client to one CPU, as the
// network workloads' client-cpu does (and taskset -c would): compared
// with tcp-stream or tcp-rr, both clients sit on the same CPU.
var clientCPUParam = workload.Param{Name: "client-cpu", Kind: workload.Int, Default: "-1", Min: -1, Max: 4095, Help: "bind the client to this CPU of the instance (taskset -c, as tcp-stream's and tcp-rr's client-cpu); -1: the scheduler decides"}

func checkFio(p workload.Params) error {
	e := p.Str("ioengine")
	if e == "" || strings.ContainsAny(e, " \t,=/") {
		return fmt.Errorf("parameter ioengine=%q: want an fio engine name such as psync or libaio", e)
	}
	return nil
}

func checkServer(p workload.Params) error {
	if s := p.Str("server"); strings.ContainsAny(s, " \t,/") || strings.HasPrefix(s, "-") {
		return fmt.Errorf("parameter server=%q: want a host name or IP address", s)
	}
	return nil
}

func runSysbenchCPU(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	bin, dir, err := toolInScratch(sysbench.Binary)
	if err != nil {
		return nil, err
	}
	events := p.Int("events")
	c := sysbench.CPU{Threads: p.Int("threads"), MaxPrime: p.Int("max-prime"), Duration: p.Duration("duration"), Events: events}
	if events > 0 {
		out, err := timedRun(ctx, ready, dir, bin, c.Args())
		if err != nil {
			return nil, err
		}
		return parseOutput("sysbench", out, func(r io.Reader) ([]sample.Metric, error) { return sysbench.ParseFixedWork(r, events) })
	}
	c.ReportInterval = 1
	return trackedSysbench(ctx, ready, dir, bin, c.Args(), "events/s", 1, workload.Rate{Metric: "events_per_sec", Scale: 1})
}

// trackedSysbench runs a timed sysbench after the barrier with an
// intermediate report every second, and counts its work (perUnit units
// per unit of the reports' rate-seconds, the reports in unit; a report in
// another unit is not counted, and the final total completes the count) in a Counter the agent tracks for
// rates: several instances' rates are then read over the window in which
// all of them were running, as the built-in workloads' are, not over each
// sysbench's own run. Summed over its own runs, 32 native instances of
// sysbench cpu (8 threads, 2 s) read 1.21 times what one instance does on
// the same 2 CPUs (Docker's 1.00), so study 000 read Docker 0.84 of native
// at 32 instances. Tracking begins at "Threads started!" (so sysbench's own
// start-up, slow at 32 instances on 2 CPUs, is no part of the window), each
// report's work is placed when the report is read (the agent is idle while
// sysbench runs, so it reads promptly), and the count is completed from
// the final report's total when sysbench exits. A sysbench that never says
// its threads started is not tracked: its own rate stands. It returns the
// final report's metrics.
func trackedSysbench(ctx context.Context, ready workload.Barrier, dir, bin string, args []string, unit string, perUnit float64, rates ...workload.Rate) ([]sample.Metric, error) {
	if err := barrier(ready); err != nil {
		return nil, err
	}
	c := workload.NewCounter()
	stop := func() {}
	defer func() { stop() }()
	var done, at float64
	var added int64
	var t0 time.Duration // when its threads started, on c's clock
	// sysbench's own instant s seconds after its threads started: its
	// lines reach this process late when the CPUs are crowded (at 32
	// instances on 2 CPUs, hundreds of milliseconds for the final
	// report), and work put at the instant its line was read would end an
	// instance's run after its threads had stopped, while the others ran
	// faster without it
	when := func(s float64) time.Duration { return t0 + time.Duration(s*float64(time.Second)) }
	tracking := false
	out, err := runToolLines(ctx, dir, bin, func(line string) {
		if !tracking && strings.TrimSpace(line) == sysbench.ThreadsStarted {
			// its work begins here, after the process and its
			// threads started (which takes a while at 32 instances
			// on 2 CPUs): the window is the one in which every
			// instance's threads were working
			stop, tracking = workload.TrackStarted(ctx, c, rates...), true
			t0 = c.Now()
			return
		}
		in, ok := sysbench.ParseInterim(line)
		if !tracking || !ok || in.Unit != unit || in.At <= at {
			return
		}
		done += in.PerSec * (in.At - at) * perUnit
		at = in.At
		if k := int64(math.Round(done)) - added; k > 0 {
			c.AddAt(k, when(in.At))
			added += k
		}
	}, args...)
	if err != nil {
		return nil, err
	}
	rep, err := sysbench.ParseReport(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("parsing sysbench output: %w", err)
	}
	if total, ok := rep.TotalEvents(); ok && tracking && int64(total) > added {
		if secs, ok := rep.TotalTime(); ok && secs > 0 {
			c.AddAt(int64(total)-added, when(secs))
		} else {
			c.Add(int64(total) - added)
		}
	}
	ms, err := rep.Metrics()
	if err != nil {
		return nil, fmt.Errorf("parsing sysbench output: %w", err)
	}
	return ms, nil
}

func runSysbenchMemory(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	bin, dir, err := toolInScratch(sysbench.Binary)
	if err != nil {
		return nil, err
	}
	bs := p.Size("block-size")
	args := sysbench.Memory{
		Threads: p.Int("threads"), BlockSize: bs, TotalSize: p.Size("total-size"),
		Oper: p.Str("oper"), Access: p.Str("access"), Duration: p.Duration("duration"),
		ReportInterval: 1,
	}.Args()
	// counted in operations; the reports give MiB/s
	return trackedSysbench(ctx, ready, dir, bin, args, "MiB/s", float64(1<<20)/float64(bs),
		workload.Rate{Metric: "ops_per_sec", Scale: 1}, workload.Rate{Metric: "mib_per_sec", Scale: float64(bs) / (1 << 20)})
}

func runSysbenchFileIO(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	f := sysbench.FileIO{
		Threads: p.Int("threads"), BlockSize: p.Size("block-size"), TotalSize: p.Size("total-size"),
		Files: p.Int("files"), Mode: p.Str("mode"), Direct: p.Bool("direct"), Duration: p.Duration("duration"),
	}
	return preparedRun(ctx, ready, sysbench.Binary, "sysbench-fileio-", "sysbench fileio prepare", "sysbench", func(string) (prepare, run []string) {
		return f.Args("prepare"), f.Args("run")
	}, sysbench.Parse)
}

// preparedRun runs a tool that lays its files out first, in a fresh
// directory named prefix* that is removed after: args gives, for that
// directory, the untimed preparing step's arguments (what names it in an
// error) and the timed run's; tool names it to parseOutput.
func preparedRun(ctx context.Context, ready workload.Barrier, binary, prefix, what, tool string, args func(dir string) (prepare, run []string), parse func(io.Reader) ([]sample.Metric, error)) ([]sample.Metric, error) {
	bin, dir, cleanup, err := toolInFreshDir(binary, prefix)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	prep, run := args(dir)
	if _, err := runTool(ctx, dir, bin, prep...); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := timedRun(ctx, ready, dir, bin, run)
	if err != nil {
		return nil, err
	}
	return parseOutput(tool, out, parse)
}

func runFio(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	bin, dir, cleanup, err := toolInFreshDir(fio.Binary, "fio-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	d := p.Duration("duration")
	job := fio.Job{
		Name: "isobench", Directory: dir, Pattern: p.Str("pattern"), BS: p.Size("bs"), Size: p.Size("size"),
		Direct: p.Bool("direct"), IODepth: p.Int("iodepth"), Jobs: p.Int("jobs"),
		Duration: d, IOEngine: p.Str("ioengine"),
		StatusInterval: fioStatusInterval(d),
	}
	if _, err := runTool(ctx, dir, bin, job.CreateArgs()...); err != nil {
		return nil, fmt.Errorf("fio layout: %w", err)
	}
	return trackedFio(ctx, ready, dir, bin, job.Args(), fioSides(job.Pattern), job.BS)
}

// fioStatusInterval is how often a timed fio of duration d reports its
// counts while it runs: a twentieth of the run, so that the first
// report, where its timeline begins, comes early, but never more often
// than every 500 ms, nor less often than every second. Each report is
// fio's whole JSON report, and it costs fio I/O: 32 concurrent fio
// (4 KiB random reads from the page cache, 1 s) did 0.76 of their IOPS
// reporting every 100 ms, 0.94 every 250 ms, 1.02 and 0.99 every 500 ms
// and 1 s (2026-11-27, 4 alternating rounds). A 1 s run is so read over
// its second half (the window's window_ms tag says how long).
func fioStatusInterval(d time.Duration) time.Duration {
	return min(max(d/20, 500*time.Millisecond), time.Second)
}

// fioSides are the sides of I/O fio's rw= pattern does.
func fioSides(pattern string) []string {
	switch pattern {
	case "rw", "randrw":
		return []string{"read", "write"}
	case "write", "randwrite":
		return []string{"write"}
	}
	return []string{"read"}
}

// trackedFio runs the timed fio after the barrier and counts each side's
// completed I/Os from its status reports (--status-interval: the whole
// JSON report, cumulative from the job's start, every interval) in a
// Counter per side that the agent tracks for <side>_iops and
// <side>_mib_per_sec (bs bytes per I/O): several instances' rates are
// then read over the window in which all of them were running, as
// sysbench's are (trackedSysbench), not each over its own run, which at
// 32 instances includes time some ran alone. A side's timeline begins at
// fio's first report (fio prints nothing when its jobs start, and its own
// start-up is no part of its run), each report's count is placed at the
// instant fio made the report (its timestamp_ms: at 32 instances on 2 CPUs
// a report is read hundreds of milliseconds later), and the final report's
// count completes it when fio exits. It returns the final report's
// metrics.
func trackedFio(ctx context.Context, ready workload.Barrier, dir, bin string, args, sides []string, bs int64) ([]sample.Metric, error) {
	if err := barrier(ready); err != nil {
		return nil, err
	}
	counters := make([]*workload.Counter, len(sides))
	added := make([]int64, len(sides))
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	count := func(rep *fio.Report) {
		for i, side := range sides {
			n := int64(math.Round(rep.IOs(side)))
			if counters[i] == nil {
				c := workload.NewCounter()
				c.Add(n)
				counters[i], added[i] = c, n
				stops = append(stops, workload.TrackStartedAt(ctx, c, fioInstant(rep, c),
					workload.Rate{Metric: side + "_iops", Scale: 1},
					workload.Rate{Metric: side + "_mib_per_sec", Scale: float64(bs) / (1 << 20)}))
				continue
			}
			if k := n - added[i]; k > 0 {
				counters[i].AddAt(k, fioInstant(rep, counters[i]))
				added[i] = n
			}
		}
	}
	// a report is a JSON object from a line "{" to a line "}"
	var report []string
	out, err := runToolLines(ctx, dir, bin, func(line string) {
		switch {
		case line == "{":
			report = []string{line}
		case report != nil:
			report = append(report, line)
			if line == "}" {
				if rep, err := fio.Decode(strings.NewReader(strings.Join(report, "\n"))); err == nil {
					count(rep)
				}
				report = nil
			}
		}
	}, args...)
	if err != nil {
		return nil, err
	}
	rep, err := fio.Decode(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("parsing fio output: %w", err)
	}
	for i, side := range sides {
		if c := counters[i]; c != nil {
			if k := int64(math.Round(rep.IOs(side))) - added[i]; k > 0 {
				c.AddAt(k, fioInstant(rep, c))
			}
		}
	}
	ms, err := rep.Metrics()
	if err != nil {
		return nil, fmt.Errorf("parsing fio output: %w", err)
	}
	return ms, nil
}

// fioInstant is when fio made rep, on c's clock: now less the time since
// its timestamp by the wall clock (fio's and this process's, on the same
// machine). A report without one, or a wall clock that stepped (a stamp
// in the future or more than a minute old), is placed now.
func fioInstant(rep *fio.Report, c *workload.Counter) time.Duration {
	now := c.Now()
	if rep.Time.IsZero() {
		return now
	}
	lag := time.Now().Round(0).Sub(rep.Time) // by the wall clock
	if lag < 0 || lag > time.Minute {
		return now
	}
	return now - lag
}

func runIperf3(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	bin, dir, err := toolInScratch(iperf3.Binary)
	if err != nil {
		return nil, err
	}
	port := p.Int("port")
	host, stop, err := serverFor(ctx, p.Str("server"), bin, func(bind string) []string { return iperf3.Server{Bind: bind, Port: port}.Args() }, tcpListening(port))
	if err != nil {
		return nil, err
	}
	defer stop()
	args := iperf3.Client{
		Server: host, Port: port, Duration: p.Duration("duration"), Parallel: p.Int("parallel"),
		Reverse: p.Bool("reverse"), UDP: p.Bool("udp"), Bitrate: int64(p.Int("bitrate")),
	}.Args()
	if err := barrier(ready); err != nil {
		return nil, err
	}
	// iperf3 -J reports failures inside the JSON (with exit status 0 or 1),
	// so its own message is preferred to the bare exit status.
	out, runErr := runToolOn(ctx, p.Int("client-cpu"), dir, bin, nil, args...)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	ms, err := iperf3.Parse(bytes.NewReader(out))
	if err != nil {
		if runErr != nil && len(bytes.TrimSpace(out)) == 0 {
			return nil, runErr
		}
		return nil, fmt.Errorf("iperf3 client to %s: %w", hostPort(host, port), err)
	}
	if runErr != nil {
		return nil, runErr
	}
	return ms, nil
}

func runSockperf(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	bin, dir, err := toolInScratch(sockperf.Binary)
	if err != nil {
		return nil, err
	}
	port, tcp := p.Int("port"), p.Bool("tcp")
	probe := udpBound(port)
	if tcp {
		probe = tcpListening(port)
	}
	host, stop, err := serverFor(ctx, p.Str("server"), bin, func(bind string) []string { return sockperf.Server{Bind: bind, Port: port, TCP: tcp}.Args() }, probe)
	if err != nil {
		return nil, err
	}
	defer stop()
	args := sockperf.PingPong{Server: host, Port: port, TCP: tcp, Duration: p.Duration("duration"), MsgSize: p.Int("msg-size")}.Args()
	if err := barrier(ready); err != nil {
		return nil, err
	}
	out, err := runToolOn(ctx, p.Int("client-cpu"), dir, bin, nil, args...)
	if err != nil {
		return nil, err
	}
	return parseOutput("sockperf", out, sockperf.Parse)
}
