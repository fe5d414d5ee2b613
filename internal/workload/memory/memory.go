// Package memory is the sysbench memory workload: every thread owns a
// buffer of block-size bytes (sysbench's memory-scope=local) and one event
// writes or reads that whole block, sequentially or at random word
// positions; threads run until total-size bytes were transferred by all of
// them or duration elapsed. MiB/s and events/s are comparable with
// `sysbench memory --memory-scope=local --memory-block-size=... run`.
package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// Def is the memory workload.
var Def = workload.Def{
	Name:     "memory",
	Estimate: workload.DurationPlus(500 * time.Millisecond),
	Help:     "sysbench memory: each thread writes or reads its own block-size buffer once per event until total-size is transferred or duration elapses; MiB/s",
	Params: []workload.Param{
		{Name: "block-size", Kind: workload.Size, Default: "1k", Min: 8, Max: 1 << 30, Help: "bytes per event, per-thread buffer size (multiple of 8)"},
		{Name: "total-size", Kind: workload.Size, Default: "100g", Min: 8, Help: "stop after all threads together transferred this much"},
		{Name: "oper", Kind: workload.Enum, Default: "write", Enum: []string{"write", "read"}, Help: "memory operation per word"},
		{Name: "access", Kind: workload.Enum, Default: "seq", Enum: []string{"seq", "rnd"}, Help: "seq walks the block; rnd touches block-size/8 random words of it"},
		{Name: "threads", Kind: workload.Int, Default: "1", Min: 1, Max: 4096, Help: "worker threads"},
		{Name: "duration", Kind: workload.Duration, Default: "10s", Min: 0.01, Max: 86400, Help: "stop after this long at the latest"},
	},
	Check: check,
	Agent: run,
	Timeout: func(p workload.Params) time.Duration {
		return p.Duration("duration") + time.Minute
	},
}

func check(p workload.Params) error {
	bs := p.Size("block-size")
	if bs%8 != 0 {
		return fmt.Errorf("block-size=%d must be a multiple of 8 bytes (one machine word)", bs)
	}
	if p.Size("total-size") < bs {
		return fmt.Errorf("total-size=%d is smaller than one block (block-size=%d)", p.Size("total-size"), bs)
	}
	return nil
}

// batchBytes is about how much one thread transfers between two looks at
// the clock, the context and the shared total-size budget.
const batchBytes = 1 << 20

// Write stores a varying value into every word of buf (one sequential
// write event) and returns the value stored, so the loop has an effect the
// caller observes.
func Write(buf []uint64, v uint64) uint64 {
	for i := range buf {
		buf[i] = v
	}
	return v
}

// Read loads every word of buf (one sequential read event) and returns
// their sum, so the loads cannot be dropped.
func Read(buf []uint64) uint64 {
	var s0, s1, s2, s3 uint64
	i := 0
	for ; i+4 <= len(buf); i += 4 {
		b := buf[i : i+4 : i+4]
		s0 += b[0]
		s1 += b[1]
		s2 += b[2]
		s3 += b[3]
	}
	for ; i < len(buf); i++ {
		s0 += buf[i]
	}
	return s0 + s1 + s2 + s3
}

// rng is a xorshift64* generator: cheap enough that random access measures
// memory, not the generator.
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = rng(x)
	return x * 2685821657736338717
}

// index maps a random number onto [0, n) without a division.
func index(x uint64, n int) int {
	hi := (x >> 32) * uint64(n)
	return int(hi >> 32)
}

// writeRandom stores v into len(buf) words chosen at random (one random
// write event, as sysbench's access-mode=rnd).
func writeRandom(buf []uint64, r *rng, v uint64) uint64 {
	n := len(buf)
	for range n {
		buf[index(r.next(), n)] = v
	}
	return v
}

// readRandom loads len(buf) words chosen at random and returns their sum.
func readRandom(buf []uint64, r *rng) uint64 {
	n := len(buf)
	var s uint64
	for range n {
		s += buf[index(r.next(), n)]
	}
	return s
}

func run(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	bs := p.Size("block-size")
	total := p.Size("total-size")
	threads := p.Int("threads")
	dur := p.Duration("duration")
	write := p.Str("oper") == "write"
	rnd := p.Str("access") == "rnd"

	// Untimed: allocate and touch every thread's buffer.
	bufs := make([][]uint64, threads)
	for i := range bufs {
		bufs[i] = make([]uint64, bs/8)
		Write(bufs[i], 0)
	}
	totalEvents := total / bs
	batch := int64(batchBytes / bs)
	if batch < 1 {
		batch = 1
	}

	if err := ready(); err != nil {
		return nil, err
	}
	completed := workload.NewCounter() // events done so far, for the common window
	stopTrack := workload.Track(ctx, completed,
		workload.Rate{Metric: "events_per_sec", Scale: 1},
		workload.Rate{Metric: "mib_per_sec", Scale: float64(bs) / (1 << 20)})
	start := time.Now()
	deadline := start.Add(dur)
	var claimed atomic.Int64 // events handed out so far, bounded by totalEvents
	events := make([]int64, threads)
	sinks := make([]uint64, threads)
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			buf := bufs[t]
			r := rng(0x9E3779B97F4A7C15 ^ uint64(t+1)*0xBF58476D1CE4E5B9)
			var sink, done uint64
			var n int64
			for ctx.Err() == nil && time.Now().Before(deadline) {
				// Claim a batch of events from the shared total-size budget.
				end := claimed.Add(batch)
				k := batch
				if end > totalEvents {
					k = totalEvents - (end - batch)
				}
				if k <= 0 {
					break
				}
				for range k {
					done++
					switch {
					case write && !rnd:
						sink += Write(buf, done)
					case write && rnd:
						sink += writeRandom(buf, &r, done)
					case !rnd:
						sink += Read(buf)
					default:
						sink += readRandom(buf, &r)
					}
				}
				n += k
				completed.Add(k)
			}
			events[t] = n
			sinks[t] = sink + buf[0]
		}(t)
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopTrack()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var n int64
	var sink uint64
	for t := range events {
		n += events[t]
		sink += sinks[t]
	}
	if n == 0 {
		return nil, errors.New("memory: no event completed; raise duration or total-size")
	}
	_ = sink // observed above so the compiler keeps every event's work
	secs := elapsed.Seconds()
	return []sample.Metric{
		{Name: "mib_per_sec", Value: float64(n) * float64(bs) / (1 << 20) / secs, Unit: "MiB/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "events_per_sec", Value: float64(n) / secs, Unit: "events/s", Better: sample.Higher, Agg: sample.Sum},
	}, nil
}
