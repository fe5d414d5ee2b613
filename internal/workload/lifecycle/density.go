package lifecycle

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// Why density stopped, as the "stop" tag says.
const (
	StopMax     = "max-instances"
	StopMemory  = "memory-limit"
	StopCeiling = "startup-ceiling"
	StopError   = "create-error"
)

// perInstance bounds starting one instance: well past the ceiling, so an
// instance slower than the ceiling is still measured, but not forever.
func perInstance(p workload.Params) time.Duration {
	return max(10*p.Duration("startup-ceiling"), 2*time.Minute)
}

// density starts instances one by one. The k-th instance's startup is the
// time from Create until the agent in it answered a first exec ("agent
// hello"); after it, the host's memory growth since the first one and,
// where the platform reports it, the memory of all instances so far and
// of the engine. Result k-1 holds count k.
func density(ctx context.Context, p workload.Params, env workload.HostEnv) ([]workload.InstanceResult, error) {
	maxN := p.Int("max-instances")
	floor := p.Size("memory-limit")
	ceiling := p.Duration("startup-ceiling")
	is := workload.NewInstances(env, "density")
	defer is.CloseAll(ctx)

	avail0, err := memAvailable()
	if err != nil {
		return nil, fmt.Errorf("density: %w", err)
	}
	if avail0 < floor {
		return nil, fmt.Errorf("density: the host has %d MiB available, already below memory-limit=%d MiB: nothing to measure", avail0>>20, floor>>20)
	}
	// isobench's own CPU and memory while it holds the instances: it must
	// not be what limits density (issue 20).
	self := os.Getpid()
	selfCPU0, _ := procCPU(self)
	var results []workload.InstanceResult
	var fps []platform.Footprinter
	stop, stopErr := StopMax, ""
	fpNote := "" // why instances' memory is not reported
	for k := 1; k <= maxN; k++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		avail, err := memAvailable()
		if err != nil {
			return nil, fmt.Errorf("density: %w", err)
		}
		if avail < floor {
			stop = StopMemory
			break
		}
		startup, create, in, err := startOne(ctx, env, perInstance(p))
		if in != nil {
			is.Add(in)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if k == 1 {
				return nil, fmt.Errorf("density: first instance: %w", err)
			}
			// failing to start one more is what density looks for
			stop, stopErr = StopError, err.Error()
			break
		}
		f, ok := in.(platform.Footprinter)
		if !ok && fpNote == "" {
			fpNote = "footprint is not supported on " + env.Platform.Name()
		}
		if ok && fpNote == "" {
			if _, err := f.Footprint(ctx); err != nil {
				fpNote = err.Error() // e.g. native without a cgroup: no per-instance memory
			} else {
				fps = append(fps, f)
			}
		}
		availNow, err := memAvailable()
		if err != nil {
			return nil, fmt.Errorf("density: %w", err)
		}
		m := []sample.Metric{
			{Name: "startup_ms", Value: ms(startup), Unit: "ms", Better: sample.Lower, Agg: sample.Max},
			{Name: "create_ms", Value: ms(create), Unit: "ms", Better: sample.Lower, Agg: sample.Max},
			bytesMetric("host_memory_growth_bytes", avail0-availNow, sample.Max),
			{Name: "instances", Value: float64(k), Unit: "instances", Better: sample.Higher, Agg: sample.Max},
		}
		if c, err := procCPU(self); err == nil {
			m = append(m, sample.Metric{Name: "isobench_cpu_seconds", Value: c - selfCPU0, Unit: "s", Better: sample.Lower, Agg: sample.Max})
		}
		if rss, _, err := procMem(self); err == nil {
			m = append(m, bytesMetric("isobench_rss_bytes", rss, sample.Max))
		}
		if len(fps) == k && checkpoint(k) {
			if m, err = withTotals(ctx, m, fps); err != nil {
				return nil, err
			}
		}
		results = append(results, workload.InstanceResult{Instance: k - 1, Metrics: m, Tags: map[string]string{"count": strconv.Itoa(k)}})
		if startup > ceiling {
			stop = StopCeiling
			break
		}
	}
	// the instances' memory at the count reached, if that was not a
	// checkpoint
	if k := len(results); k > 0 && len(fps) == k && !checkpoint(k) {
		m, err := withTotals(ctx, results[k-1].Metrics, fps)
		if err != nil {
			return nil, err
		}
		results[k-1].Metrics = m
	}
	for _, r := range results {
		r.Tags["stop"] = stop
		if stopErr != "" {
			r.Tags["stop_error"] = stopErr
		}
		if fpNote != "" {
			r.Tags["footprint_error"] = fpNote
		}
	}
	return results, nil
}

// startOne creates an idle instance and runs "agent hello" in it. startup
// is until hello returned, create until Create returned. The instance is
// returned whenever it was created, also with an error.
func startOne(ctx context.Context, env workload.HostEnv, limit time.Duration) (startup, create time.Duration, in platform.Instance, err error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	s := env.Base
	s.Name = env.NewName()
	t0 := time.Now()
	in, err = env.Platform.Create(ctx, s)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("create: %w", err)
	}
	create = time.Since(t0)
	if err := in.Exec(ctx, []string{platform.AgentPlaceholder, "agent", "hello"}, platform.ExecIO{Stdout: io.Discard}); err != nil {
		return 0, create, in, fmt.Errorf("first exec: %w", err)
	}
	return time.Since(t0), create, in, nil
}

// checkpoint says at which counts density reads every instance's memory
// and the engine's processes: each of the first 10, then every 10th (and
// the count it stops at). Reading all k instances at every k made the
// reads quadratic: at 300 Docker containers isobench spent most of a CPU
// reading cgroup files and the shims' smaps, enough to slow the startups
// it measures.
func checkpoint(k int) bool { return k <= 10 || k%10 == 0 }

// withTotals appends the instances' memory and the engine's to m.
func withTotals(ctx context.Context, m []sample.Metric, fps []platform.Footprinter) ([]sample.Metric, error) {
	mem, eng, err := totals(ctx, fps)
	if err != nil {
		return nil, fmt.Errorf("density: %w", err)
	}
	m = append(m, bytesMetric("instances_memory_bytes", mem, sample.Max))
	if eng.rss > 0 {
		m = append(m, bytesMetric("engine_rss_bytes", eng.rss, sample.Max), bytesMetric("engine_pss_bytes", eng.pss, sample.Max))
	}
	return m, nil
}

// totals sums the instances' memory and reads the engine's (union of pids).
func totals(ctx context.Context, fps []platform.Footprinter) (int64, engineUsage, error) {
	var mem int64
	var pids []int
	for _, f := range fps {
		fp, err := f.Footprint(ctx)
		if err != nil {
			return 0, engineUsage{}, err
		}
		mem += fp.MemoryBytes
		pids = append(pids, fp.EnginePIDs...)
	}
	slices.Sort(pids)
	return mem, engine(slices.Compact(pids)), nil
}
