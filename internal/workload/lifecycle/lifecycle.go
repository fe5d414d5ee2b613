// Package lifecycle measures what instances cost the host over their life:
// footprint (memory, disk and CPU of an idle or busy instance and of the
// engine serving it, and the CPU its startup took) and density (how many
// instances fit, and how startup latency and memory grow with their
// number). Both are host-driven; footprint needs instances implementing
// platform.Footprinter.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/service"
)

// SpinName is the hidden in-guest load used by footprint with load=cpu.
const SpinName = "_spin"

// Defs are the lifecycle workloads, the hidden in-guest load included;
// register all of them.
func Defs() []workload.Def { return []workload.Def{Footprint, Density, Spin} }

// Footprint measures instances' memory, disk and CPU, and the engine's.
var Footprint = workload.Def{
	Name: "footprint",
	Estimate: func(p workload.Params) time.Duration {
		d := p.Duration("window") + time.Second
		if s := p.Str("service"); s != "none" && s != "" {
			d += 2 * time.Second // the server starts and answers first
		}
		return d
	},
	Help: "memory, disk and CPU of N idle or busy instances over a window, the engine's own memory/CPU, and the CPU their startup took",
	Params: []workload.Param{
		{Name: "load", Kind: workload.Enum, Enum: []string{"idle", "cpu"}, Default: "idle", Help: "idle: instances do nothing; cpu: each spins one thread"},
		{Name: "window", Kind: workload.Duration, Default: "5s", Min: 0.1, Max: 3600, Help: "how long CPU use is measured"},
		{Name: "service", Kind: workload.Enum, Enum: append([]string{"none"}, service.Kinds...), Default: "none", Help: "a server running (idle, no clients) in every instance while it is measured, from the debian image (study 002's 'with services'); native: the host's own"},
	},
	Host: footprint,
	Timeout: func(p workload.Params) time.Duration {
		return p.Duration("window") + 5*time.Minute
	},
}

// Density starts instances one after another until a limit.
var Density = workload.Def{
	Name: "density",
	// ~1 s to start and measure each instance, at most max-instances
	Estimate: func(p workload.Params) time.Duration { return time.Duration(p.Int("max-instances")) * time.Second },
	Help:     "start instances one by one until max-instances, the host's MemAvailable floor or the startup ceiling; per count: startup latency and memory growth (the instances count is ignored)",
	Params: []workload.Param{
		{Name: "max-instances", Kind: workload.Int, Default: "32", Min: 1, Max: 100000, Help: "stop after this many instances"},
		{Name: "memory-limit", Kind: workload.Size, Default: "512m", Min: 0, Help: "stop before starting another when the host's MemAvailable is below this"},
		{Name: "startup-ceiling", Kind: workload.Duration, Default: "5s", Min: 0.001, Max: 3600, Help: "stop once an instance took longer than this to start"},
	},
	Host: density,
	Timeout: func(p workload.Params) time.Duration {
		return time.Duration(p.Int("max-instances"))*(perInstance(p)+10*time.Second) + time.Minute
	},
}

// Spin is the in-guest CPU load: one thread spinning for duration.
var Spin = workload.Def{
	Name:     SpinName,
	Internal: true,
	Help:     "internal: footprint's CPU load",
	Params: []workload.Param{
		{Name: "duration", Kind: workload.Duration, Default: "5s", Min: 0.01, Max: 86400, Help: "how long to spin"},
	},
	Agent: spin,
}

func spin(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	start := time.Now()
	end := start.Add(p.Duration("duration"))
	x, loops := 1.0, 0
	for time.Now().Before(end) && ctx.Err() == nil {
		for i := 0; i < 10000; i++ {
			x = math.Sqrt(x + float64(i))
		}
		loops++
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	runtime.KeepAlive(x)
	return []sample.Metric{{Name: "spin_loops_per_sec", Value: float64(loops) / time.Since(start).Seconds(), Unit: "loops/s", Better: sample.Higher, Agg: sample.Sum}}, nil
}

// instances tracks what a repetition created so everything is closed.
func seconds(name string, v float64) sample.Metric {
	return sample.Metric{Name: name, Value: v, Unit: "s", Better: sample.Lower, Agg: sample.Sum}
}

func bytesMetric(name string, v int64, agg sample.Agg) sample.Metric {
	return sample.Metric{Name: name, Value: float64(v), Unit: "bytes", Better: sample.Lower, Agg: agg}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func footprint(ctx context.Context, p workload.Params, env workload.HostEnv) (_ []workload.InstanceResult, err error) {
	n := env.Instances
	if n < 1 {
		return nil, errors.New("footprint: need at least one instance")
	}
	window := p.Duration("window")
	is := workload.NewInstances(env, "footprint")
	defer is.CloseAll(ctx)
	insts := make([]fpInst, n)
	// one at a time, so each startup's CPU is its own
	svc := p.Str("service")
	base := env.Base
	base.Accounting = true
	if svc != "none" {
		if base.Image, err = service.EnsureImage(ctx, env.Platform, base.Image); err != nil {
			return nil, fmt.Errorf("footprint: %w", err)
		}
	}
	for i := range insts {
		s := base
		s.Name = env.NewName()
		b0, err := hostBusy()
		if err != nil {
			return nil, fmt.Errorf("footprint: %w", err)
		}
		t0 := time.Now()
		in, err := env.Platform.Create(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("footprint: create instance %d: %w", i, err)
		}
		d := time.Since(t0)
		is.Add(in)
		b1, err := hostBusy()
		if err != nil {
			return nil, fmt.Errorf("footprint: %w", err)
		}
		fper, ok := in.(platform.Footprinter)
		if !ok {
			return nil, fmt.Errorf("footprint is not supported on %s", env.Platform.Name())
		}
		fp, err := fper.Footprint(ctx)
		if err != nil {
			return nil, fmt.Errorf("footprint: instance %d: %w", i, err)
		}
		insts[i] = fpInst{in: in, fp: fper, startMS: ms(d), startHost: b1 - b0, startCPU: fp.CPUSeconds}
	}

	// the services, started one by one and answering before anything is
	// measured; a server that dies meanwhile fails the repetition
	var servers []*service.Running
	defer func() {
		if err != nil {
			for _, s := range servers {
				s.Abort()
			}
		}
	}()
	if svc != "none" {
		for i, x := range insts {
			port, err := service.FreePort() // distinct even when instances share the host's network
			if err != nil {
				return nil, fmt.Errorf("footprint: %w", err)
			}
			srv, err := service.StartServer(ctx, x.in, svc, port)
			if err != nil {
				return nil, fmt.Errorf("footprint: service in instance %d: %w", i, err)
			}
			servers = append(servers, srv)
		}
	}

	// the load, released together; it spins a little longer than the window
	var sessions []*agenthost.Session
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	if p.Str("load") == "cpu" {
		ins := make([]platform.Instance, n)
		for i, x := range insts {
			ins[i] = x.in
		}
		sessions, err = startLoad(ectx, ins, window)
		defer func() {
			if err != nil {
				for _, s := range sessions {
					s.Abort()
				}
			}
		}()
		if err != nil {
			return nil, err
		}
	}

	read := func() ([]platform.Footprint, []int, error) {
		fps := make([]platform.Footprint, n)
		var pids []int
		for i, x := range insts {
			fp, err := x.fp.Footprint(ctx)
			if err != nil {
				return nil, nil, fmt.Errorf("footprint: instance %d: %w", i, err)
			}
			fps[i] = fp
			pids = append(pids, fp.EnginePIDs...)
		}
		slices.Sort(pids)
		return fps, slices.Compact(pids), nil
	}
	before, pids0, err := read()
	if err != nil {
		return nil, err
	}
	cpu0 := cpuByPID(pids0)
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	after, pids1, err := read()
	if err != nil {
		return nil, err
	}
	eng := engine(pids1) // the engine's memory at the window's end
	// engine CPU over the window, of the processes alive at both ends
	var engWindowCPU float64
	for p, c1 := range cpuByPID(pids1) {
		if c0, ok := cpu0[p]; ok {
			engWindowCPU += c1 - c0
		}
	}

	for i, s := range sessions {
		if _, _, err := s.Result(ectx); err != nil {
			return nil, fmt.Errorf("footprint: load in instance %d: %w", i, err)
		}
	}

	readyMS := make([][]sample.Metric, n)
	for i, srv := range servers {
		if readyMS[i], err = srv.Stop(ctx); err != nil {
			return nil, fmt.Errorf("footprint: service in instance %d: %w", i, err)
		}
	}

	tags := map[string]string{"load": p.Str("load"), "window": window.String(), "service": svc}
	return fpResults(ctx, insts, tags, before, after, pids1, eng, engWindowCPU, readyMS), nil
}

// fpInst is one instance of a footprint repetition.
type fpInst struct {
	in        platform.Instance
	fp        platform.Footprinter
	startMS   float64
	startHost float64 // host-wide busy CPU seconds during Create
	startCPU  float64 // the instance's own CPU seconds right after Create
}

// fpResults turns the footprints read before and after the window into
// each instance's metrics and tags; the engine's (its processes pids1,
// their memory eng at the window's end and CPU over the window) are given
// to every instance.
func fpResults(ctx context.Context, insts []fpInst, tags map[string]string, before, after []platform.Footprint, pids1 []int, eng engineUsage, engWindowCPU float64, readyMS [][]sample.Metric) []workload.InstanceResult {
	results := make([]workload.InstanceResult, len(insts))
	for i, x := range insts {
		m := []sample.Metric{
			bytesMetric("memory_bytes", after[i].MemoryBytes, sample.Sum),
			bytesMetric("disk_bytes", after[i].DiskBytes, sample.Sum),
			seconds("cpu_seconds", after[i].CPUSeconds-before[i].CPUSeconds),
			{Name: "startup_ms", Value: x.startMS, Unit: "ms", Better: sample.Lower, Agg: sample.Max},
			seconds("startup_host_cpu_seconds", x.startHost),
			seconds("startup_instance_cpu_seconds", x.startCPU),
		}
		if len(pids1) > 0 {
			m = append(m,
				bytesMetric("engine_rss_bytes", eng.rss, sample.Max),
				bytesMetric("engine_pss_bytes", eng.pss, sample.Max),
				sample.Metric{Name: "engine_cpu_seconds", Value: engWindowCPU, Unit: "s", Better: sample.Lower, Agg: sample.Max},
			)
		}
		m = append(m, readyMS[i]...)
		t := maps.Clone(x.in.Facts(ctx))
		if t == nil {
			t = map[string]string{}
		}
		maps.Copy(t, tags)
		t["engine_processes"] = strconv.Itoa(len(pids1))
		results[i] = workload.InstanceResult{Instance: i, Metrics: m, Tags: t}
	}
	return results
}

// startLoad starts the cpu load (SpinName) in every instance, spinning a
// little longer than the window, and releases them together once all are
// ready; on an error the sessions started so far are returned to be
// aborted.
func startLoad(ctx context.Context, ins []platform.Instance, window time.Duration) ([]*agenthost.Session, error) {
	params := spec.Canonical(map[string]string{"duration": (window + time.Second).String()})
	var sessions []*agenthost.Session
	for _, in := range ins {
		sessions = append(sessions, agenthost.Start(ctx, in, SpinName, params))
	}
	for i, s := range sessions {
		if err := s.WaitReady(ctx); err != nil {
			return sessions, fmt.Errorf("footprint: load in instance %d: %w", i, err)
		}
	}
	for i, s := range sessions {
		if err := s.Release(); err != nil {
			return sessions, fmt.Errorf("footprint: load in instance %d: %w", i, err)
		}
	}
	for i, s := range sessions {
		if err := s.WaitStarted(ctx); err != nil {
			return sessions, fmt.Errorf("footprint: load in instance %d: %w", i, err)
		}
	}
	return sessions, nil
}

// cpuByPID reads the CPU seconds of each process still alive.
func cpuByPID(pids []int) map[int]float64 {
	out := map[int]float64{}
	for _, p := range pids {
		if c, err := procCPU(p); err == nil {
			out[p] = c
		}
	}
	return out
}
