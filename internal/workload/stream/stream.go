// Package stream is the STREAM memory-bandwidth workload: the copy, scale,
// add and triad kernels over three arrays of float64, each at least four
// times the last-level cache, timed pass by pass; each kernel reports its
// best pass in MB/s (10^6 bytes/s), counting bytes as STREAM does (copy and
// scale move 2 arrays, add and triad 3, of 8 bytes per element). As in
// STREAM, the first pass is a warm-up and is not counted when passes > 1.
// bench/stream/stream.c is the C reference kernel it is compared with.
package stream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/workload"
)

// Def is the stream workload.
var Def = workload.Def{
	Name: "stream",
	Estimate: func(p workload.Params) time.Duration {
		// "auto" is estimated at its floor, not from this host's cache:
		// a plan reads the same on every host (it assumes 2 cores too),
		// and its golden test read 10.8 s per repetition on one
		// development host and 1.6 s on another (32 MiB of L3)
		n := float64(DefaultElements)
		if v := p.Str("array-size"); v != "auto" {
			if x, err := spec.ParseSize(v); err == nil {
				n = float64(x)
			}
		}
		// filling 3 arrays, then 4 kernels touching 2.5 arrays on average
		// per pass, at ~3 GB/s
		return workload.Seconds(0.5 + 3*8*n/2e9 + float64(p.Int("passes"))*4*2.5*8*n/3e9)
	},
	Help: "STREAM copy/scale/add/triad over arrays >= 4x the last-level cache, best of passes; MB/s per kernel and stream_avg, their mean (RAMspeed's single figure)",
	Params: []workload.Param{
		{Name: "array-size", Kind: workload.String, Default: "auto", Help: `float64 elements per array: "auto" (max(10M, 4 x last-level cache / 8)) or a count such as 100000000 or 100m`},
		{Name: "passes", Kind: workload.Int, Default: "10", Min: 1, Max: 10000, Help: "timed passes of the four kernels (the first is not counted when more than one)"},
		{Name: "threads", Kind: workload.Int, Default: "1", Min: 1, Max: 4096, Help: "threads, each working on its own contiguous slice of the arrays"},
	},
	Check: check,
	Agent: run,
	Timeout: func(p workload.Params) time.Duration {
		n, err := arraySize(p.Str("array-size"), sysCache)
		if err != nil {
			return 0
		}
		// Every pass moves 80 bytes per element; allow 0.5 GB/s plus set-up.
		bytes := float64(p.Int("passes")+1) * 80 * float64(n)
		return time.Duration(bytes/0.5e9*float64(time.Second)) + 2*time.Minute
	},
}

// DefaultElements is STREAM's own default array size.
const DefaultElements = 10_000_000

// Scalar is STREAM's scale factor.
const Scalar = 3.0

const sysCache = "/sys/devices/system/cpu/cpu0/cache"

func check(p workload.Params) error {
	n, err := arraySize(p.Str("array-size"), sysCache)
	if err != nil {
		return err
	}
	if n < int64(p.Int("threads")) {
		return fmt.Errorf("array-size=%d is smaller than threads=%d", n, p.Int("threads"))
	}
	return nil
}

// arraySize resolves the array-size parameter to a number of elements.
func arraySize(v, cacheDir string) (int64, error) {
	if v == "auto" {
		n := int64(DefaultElements)
		if llc, err := LastLevelCache(cacheDir); err == nil && 4*llc/8 > n {
			n = 4 * llc / 8
		}
		return n, nil
	}
	n, err := spec.ParseSize(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf(`array-size=%q: want "auto" or a positive number of elements such as 100000000 or 100m`, v)
	}
	return n, nil
}

// LastLevelCache returns the size in bytes of the largest cache listed
// under dir (normally /sys/devices/system/cpu/cpu0/cache).
func LastLevelCache(dir string) (int64, error) {
	entries, err := filepath.Glob(filepath.Join(dir, "index*", "size"))
	if err != nil {
		return 0, fmt.Errorf("cache sizes: %w", err)
	}
	var best int64
	for _, e := range entries {
		b, err := os.ReadFile(e)
		if err != nil {
			continue
		}
		n, err := spec.ParseSize(strings.TrimSpace(string(b)))
		if err == nil && n > best {
			best = n
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("no cache size found under %s", dir)
	}
	return best, nil
}

// availableMemory returns how many bytes this process can still allocate as
// far as it can tell: MemAvailable, lowered by a cgroup v2 memory limit.
// ok is false when nothing could be read.
func availableMemory() (avail int64, ok bool) {
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 && fs[0] == "MemAvailable:" {
				if kb, err := strconv.ParseInt(fs[1], 10, 64); err == nil {
					avail, ok = kb*1024, true
				}
			}
		}
		f.Close()
	}
	readInt := func(path string) (int64, bool) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return n, err == nil
	}
	if limit, lok := readInt("/sys/fs/cgroup/memory.max"); lok {
		cur, _ := readInt("/sys/fs/cgroup/memory.current")
		if free := limit - cur; !ok || free < avail {
			avail, ok = free, true
		}
	}
	return avail, ok
}

// Kernels. Scale, Add and Triad run 256-bit AVX loops on amd64
// (kernels_amd64.s) and these Go loops elsewhere and for the tail. Each
// works on slices of equal length; the re-slicing lets the compiler drop
// bounds checks inside the loops.

// scaleGo is b = s*c.
func scaleGo(b, c []float64, s float64) {
	b = b[:len(c)]
	for i, x := range c {
		b[i] = s * x
	}
}

// addGo is c = a + b.
func addGo(c, a, b []float64) {
	a = a[:len(c)]
	b = b[:len(c)]
	for i := range c {
		c[i] = a[i] + b[i]
	}
}

// triadGo is a = b + s*c.
func triadGo(a, b, c []float64, s float64) {
	b = b[:len(a)]
	c = c[:len(a)]
	for i := range a {
		a[i] = b[i] + s*c[i]
	}
}

// chunks splits [0,n) into k contiguous ranges.
func chunks(n int, k int) [][2]int {
	out := make([][2]int, k)
	for i := range k {
		out[i] = [2]int{n * i / k, n * (i + 1) / k}
	}
	return out
}

// parallel runs f on every chunk, one goroutine each (inline for one), and
// returns how long the slowest took from the common start.
func parallel(parts [][2]int, f func(lo, hi int)) time.Duration {
	return parallelIndexed(parts, func(_, lo, hi int) { f(lo, hi) })
}

// parallelIndexed is parallel with the chunk's index passed to f.
func parallelIndexed(parts [][2]int, f func(k, lo, hi int)) time.Duration {
	start := time.Now()
	if len(parts) == 1 {
		f(0, parts[0][0], parts[0][1])
		return time.Since(start)
	}
	var wg sync.WaitGroup
	for k, pr := range parts {
		wg.Add(1)
		go func(k, lo, hi int) {
			defer wg.Done()
			f(k, lo, hi)
		}(k, pr[0], pr[1])
	}
	wg.Wait()
	return time.Since(start)
}

func run(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	n64, err := arraySize(p.Str("array-size"), sysCache)
	if err != nil {
		return nil, err
	}
	passes := p.Int("passes")
	threads := p.Int("threads")
	need := 3 * 8 * n64
	if avail, ok := availableMemory(); ok && float64(need) > 0.9*float64(avail) {
		return nil, fmt.Errorf("stream: 3 arrays of %d elements need %d MiB but only %d MiB are available; set array-size to a smaller count (STREAM wants each array >= 4x the last-level cache)",
			n64, need>>20, avail>>20)
	}
	if n64 > math.MaxInt/8 {
		return nil, fmt.Errorf("stream: array-size=%d is too large", n64)
	}
	n := int(n64)

	// Untimed: allocate and first-touch the arrays from the threads that
	// will use each part.
	a := make([]float64, n)
	b := make([]float64, n)
	c := make([]float64, n)
	parts := chunks(n, threads)
	parallel(parts, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a[i], b[i], c[i] = 1, 2, 0
		}
	})
	if err := ready(); err != nil {
		return nil, err
	}

	best := [4]time.Duration{}
	for k := 0; k < passes; k++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t := [4]time.Duration{
			parallel(parts, func(lo, hi int) { Copy(c[lo:hi], a[lo:hi]) }),
			parallel(parts, func(lo, hi int) { Scale(b[lo:hi], c[lo:hi], Scalar) }),
			parallel(parts, func(lo, hi int) { Add(c[lo:hi], a[lo:hi], b[lo:hi]) }),
			parallel(parts, func(lo, hi int) { Triad(a[lo:hi], b[lo:hi], c[lo:hi], Scalar) }),
		}
		if k == 0 && passes > 1 {
			continue // STREAM's warm-up pass
		}
		for i := range t {
			if best[i] == 0 || t[i] < best[i] {
				best[i] = t[i]
			}
		}
	}
	if err := validate(a, b, c, parts, passes); err != nil {
		return nil, err
	}
	names := [4]string{"stream_copy", "stream_scale", "stream_add", "stream_triad"}
	arrays := [4]float64{2, 2, 3, 3}
	var ms []sample.Metric
	for i, name := range names {
		if best[i] <= 0 {
			return nil, errors.New("stream: a kernel took no measurable time; raise array-size")
		}
		mbs := arrays[i] * 8 * float64(n) / 1e6 / best[i].Seconds()
		ms = append(ms, sample.Metric{Name: name, Value: mbs, Unit: "MB/s", Better: sample.Higher, Agg: sample.Sum})
	}
	// RAMspeed's single figure (study 004): the average of its four
	// kernels' bandwidths
	avg := (ms[0].Value + ms[1].Value + ms[2].Value + ms[3].Value) / 4
	ms = append(ms, sample.Metric{Name: AvgMetric, Value: avg, Unit: "MB/s", Better: sample.Higher, Agg: sample.Sum})
	return ms, nil
}

// AvgMetric is the mean of the four kernels' bandwidths, the single
// figure RAMspeed's SMP test reports.
const AvgMetric = "stream_avg"

// validate replays the kernels on one scalar, as STREAM's result check
// does, and compares every element of the arrays with it.
func validate(a, b, c []float64, parts [][2]int, passes int) error {
	ea, eb, ec := 1.0, 2.0, 0.0
	for range passes {
		ec = ea
		eb = Scalar * ec
		ec = ea + eb
		ea = eb + Scalar*ec
	}
	// The same operations ran on every element, but the compiler may fuse
	// multiply-adds differently in the kernels and here: allow rounding.
	off := func(got, want float64) bool { return math.Abs(got-want) > 1e-13*math.Abs(want) }
	bad := make([]int, len(parts)) // 1 + first bad index per chunk, 0 if none
	parallelIndexed(parts, func(k, lo, hi int) {
		for i := lo; i < hi; i++ {
			if off(a[i], ea) || off(b[i], eb) || off(c[i], ec) {
				bad[k] = i + 1
				return
			}
		}
	})
	for _, i := range bad {
		if i > 0 {
			i--
			return fmt.Errorf("stream: result check failed at element %d: a=%g b=%g c=%g, want %g %g %g", i, a[i], b[i], c[i], ea, eb, ec)
		}
	}
	return nil
}

// ntBlock is how many bytes the amd64 non-temporal copy moves per step:
// four 4 KiB pages.
const ntBlock = 16384
