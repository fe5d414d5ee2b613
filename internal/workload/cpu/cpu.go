// Package cpu is the sysbench cpu workload: each thread verifies the primes
// up to max-prime by trial division, again and again, for a fixed time; one
// verification pass is one event. The loop is sysbench's own, so events/s
// are comparable with `sysbench cpu --cpu-max-prime=N`.
package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// Def is the cpu workload.
var Def = workload.Def{
	Name: "cpu",
	Estimate: func(p workload.Params) time.Duration {
		if n := p.Int("events"); n > 0 {
			// ~0.32 ms an event at max-prime 10000 on one core of a
			// 2-core VM, growing as max-prime^1.5; threads share 2 cores
			per := 0.32e-3 * math.Pow(float64(p.Int("max-prime"))/1e4, 1.5)
			return workload.Seconds(float64(n) * per / math.Min(float64(p.Int("threads")), 2))
		}
		return p.Duration("duration")
	},
	FixedWork: func(p workload.Params) bool { return p.Int("events") > 0 },
	// with events, the threads run them all however long it takes
	Irrelevant: func(p workload.Params) []string {
		if p.Int("events") > 0 {
			return []string{"duration"}
		}
		return nil
	},
	Help: "sysbench cpu: verify primes up to max-prime per event, per thread, for duration (events/s), or a fixed number of events (events=N, total_time as sysbench 0.4.12 reports it)",
	Params: []workload.Param{
		{Name: "threads", Kind: workload.Int, Default: "1", Min: 1, Max: 4096, Help: "worker threads"},
		{Name: "max-prime", Kind: workload.Int, Default: "10000", Min: 3, Max: 1e9, Help: "upper limit of the primes verified per event"},
		{Name: "duration", Kind: workload.Duration, Default: "10s", Min: 0.01, Max: 86400, Help: "how long the threads run (time-based mode)"},
		{Name: "events", Kind: workload.Int, Default: "0", Min: 0, Max: 1e12, Help: "fixed work: the threads share this many events and the metric is the total time, as sysbench 0.4.12 reports it (its --max-requests, default 10000 there); 0 = run for duration"},
	},
	Agent: run,
	Timeout: func(p workload.Params) time.Duration {
		if n := p.Int("events"); n > 0 {
			// ~0.5 ms per event at max-prime 10000 on one slow core,
			// growing as max-prime^1.5; generous.
			per := 0.5e-3 * math.Pow(float64(p.Int("max-prime"))/1e4, 1.5)
			return time.Duration(float64(n)*per*float64(time.Second)) + 2*time.Minute
		}
		return p.Duration("duration") + time.Minute
	},
}

// Event runs one sysbench cpu event and returns how many primes it found
// (returned so the compiler cannot drop the loop). It is sysbench's loop:
//
//	for (c = 3; c < max_prime; c++) {
//	    t = sqrt((double)c);
//	    for (l = 2; l <= t; l++) if (c % l == 0) break;
//	    if (l > t) n++;
//	}
//
// On amd64 it runs the instruction sequence gcc -O2 emits for that loop in
// Debian's sysbench 1.0.20 (event_amd64.s): the Go compiler's version of
// the same loop (eventGo) executes 1.7x sysbench's instructions per event
// (measured with cachegrind: it keeps c and n in the registers DIV
// clobbers and shuffles them on every division, and adds a divide-by-zero
// check), which made isobench 4-7% slower than sysbench at equal work.
// Elsewhere it runs eventGo.
func Event(maxPrime uint64) uint64 { return eventRange(3, maxPrime) }

// Parts is how many parts each event's work is counted in while it runs
// (the common window's Counter), and PartBounds splits [3, maxPrime)
// into that many ranges of about equal cost (a number's trial divisions
// grow as its square root, so the work up to c grows as c^1.5). Counted
// whole, an event begun before a window's end and finished after it is
// work the window spent and did not count. At the release none is under
// way; at 32 instances of 8 threads on 2 CPUs, 256 are at the window's
// end, half done on average: about 70 ms of the CPUs' 2 s in a 1 s
// window (3.5%), lost over the first 400 ms, until every thread has run.
// Counted in eighths, what is under way is an eighth as much.
const Parts = 8

// PartBounds returns the n+1 bounds of an event's n parts.
func PartBounds(maxPrime uint64, n int) []uint64 {
	b := make([]uint64, n+1)
	b[0], b[n] = 3, max(3, maxPrime)
	for k := 1; k < n; k++ {
		c := uint64(float64(b[n]) * math.Pow(float64(k)/float64(n), 2.0/3))
		b[k] = min(max(c, b[k-1]), b[n])
	}
	return b
}

// eventGo is Event's loop in Go for c in [lo, hi), lo >= 3 (the event is
// [3, maxPrime)), with the l = 2 iteration peeled into a parity test as
// gcc -O2 compiles it (`test $0x1,%bl` before the division loop): the same
// results and the same divisions as the reference binary, instead of one
// extra 64-bit DIV for every even c.
func eventGo(lo, hi uint64) uint64 {
	var n uint64
	for c := lo; c < hi; c++ {
		t := math.Sqrt(float64(c))
		l := uint64(2)
		if 2 <= t && c&1 != 0 {
			for l = 3; float64(l) <= t; l++ {
				if c%l == 0 {
					break
				}
			}
		}
		if float64(l) > t {
			n++
		}
	}
	return n
}

type threadResult struct {
	events    int
	latencies []time.Duration
}

func run(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	threads := p.Int("threads")
	maxPrime := uint64(p.Int("max-prime"))
	dur := p.Duration("duration")
	if n := p.Int("events"); n > 0 {
		return runFixed(ctx, threads, maxPrime, int64(n), ready)
	}
	if err := ready(); err != nil {
		return nil, err
	}
	completed := workload.NewCounter() // events done so far, for the common window
	// counted in parts, as the work is done
	stop := workload.Track(ctx, completed, workload.Rate{Metric: "events_per_sec", Scale: 1.0 / Parts})
	bounds := PartBounds(maxPrime, Parts)
	start := time.Now()
	deadline := start.Add(dur)
	results := make([]threadResult, threads)
	var wg sync.WaitGroup
	var sink uint64
	var sinkMu sync.Mutex
	for i := 0; i < threads; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := &results[i]
			var local uint64
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(deadline) {
					break
				}
				for k := range Parts {
					local += eventRange(bounds[k], bounds[k+1])
					completed.Add(1)
				}
				r.latencies = append(r.latencies, time.Since(t0))
				r.events++
			}
			sinkMu.Lock()
			sink += local
			sinkMu.Unlock()
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var all []time.Duration
	events := 0
	for _, r := range results {
		events += r.events
		all = append(all, r.latencies...)
	}
	if events == 0 || sink == 0 {
		return nil, errors.New("cpu: no event completed within the duration; raise duration or lower max-prime")
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	var total time.Duration
	for _, d := range all {
		total += d
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return []sample.Metric{
		{Name: "events_per_sec", Value: float64(events) / elapsed.Seconds(), Unit: "events/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "latency_avg", Value: ms(total / time.Duration(len(all))), Unit: "ms", Better: sample.Lower, Agg: sample.Mean},
		{Name: "latency_p95", Value: ms(Percentile(all, 95)), Unit: "ms", Better: sample.Lower, Agg: sample.Max},
	}, nil
}

// Percentile of sorted durations, nearest-rank (as sysbench reports).
func Percentile(sorted []time.Duration, pct float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(pct / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// runFixed is sysbench 0.4.12's cpu test with --max-requests: the threads
// take events from one shared count until all are done; the metric is the
// total time (sysbench's "total time"), lower is better.
func runFixed(ctx context.Context, threads int, maxPrime uint64, events int64, ready workload.Barrier) ([]sample.Metric, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	var next atomic.Int64
	sinks := make([]uint64, threads)
	lat := make([][]time.Duration, threads)
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < threads; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for ctx.Err() == nil && next.Add(1) <= events {
				t0 := time.Now()
				sinks[i] += Event(maxPrime)
				lat[i] = append(lat[i], time.Since(t0))
			}
		}(i)
	}
	wg.Wait()
	total := time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var all []time.Duration
	var sink uint64
	for i := range lat {
		all = append(all, lat[i]...)
		sink += sinks[i]
	}
	if int64(len(all)) != events || sink == 0 {
		return nil, fmt.Errorf("cpu: %d of %d events ran", len(all), events)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return []sample.Metric{
		{Name: "total_time", Value: total.Seconds(), Unit: "s", Better: sample.Lower, Agg: sample.Max},
		{Name: "events_per_sec", Value: float64(events) / total.Seconds(), Unit: "events/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "latency_avg", Value: ms(sum / time.Duration(len(all))), Unit: "ms", Better: sample.Lower, Agg: sample.Mean},
		{Name: "latency_p95", Value: ms(Percentile(all, 95)), Unit: "ms", Better: sample.Lower, Agg: sample.Max},
	}, nil
}
