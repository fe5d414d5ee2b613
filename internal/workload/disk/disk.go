// Package disk is the fio-like disk workload: jobs independent jobs, each
// with its own file of size bytes in the scratch directory, keep iodepth
// I/Os of bs bytes in flight for duration (time based, as fio's
// --time_based), reading and/or writing at random or sequential offsets.
//
// engine=aio (the default) does what fio's libaio engine does, through the
// io_setup/io_submit/io_getevents system calls: one queue of iodepth I/Os
// per job, each completion replaced by a new I/O. engine=threads is not
// libaio: each job runs iodepth goroutines, each doing one blocking
// pread/pwrite at a time, which keeps as many I/Os in flight but costs a
// scheduler hand-off per I/O (on a 2-core VM it reached only ~40% of fio's
// IOPS); it is there for kernels or sandboxes without native AIO.
//
// Files are prepared before the timed part as fio prepares them. For
// patterns that read, they are laid out (fully written, not sparse),
// synced, and their pages dropped from the page cache with
// posix_fadvise(DONTNEED) as fio's invalidate=1 does; a container cannot
// drop the whole page cache, so with direct=false reads can still be
// served from memory (e.g. pages another instance brought in). For
// write-only patterns fio does not write the file first (it lays files out
// only for jobs that read or with overwrite=1): it fallocates it, so the
// timed writes land in allocated, unwritten extents. So does this
// workload; see preallocate.
package disk

import (
	"github.com/isobench/isobench/internal/hist"

	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// Def is the disk workload.
var Def = workload.Def{
	Name: "disk",
	Estimate: func(p workload.Params) time.Duration {
		// the timed part, and laying out the files (untimed) at ~300 MB/s
		return p.Duration("duration") + 500*time.Millisecond + workload.Seconds(float64(p.Size("size"))*float64(p.Int("jobs"))/300e6)
	},
	Help: "fio-like: jobs x iodepth blocking pread/pwrite of bs bytes on a size-byte file per job for duration; IOPS, MiB/s, latency percentiles",
	Params: []workload.Param{
		{Name: "pattern", Kind: workload.Enum, Default: "randread", Enum: []string{"randread", "randwrite", "read", "write", "rw", "randrw"}, Help: "fio's rw= (rw is sequential mixed, randrw random mixed)"},
		{Name: "bs", Kind: workload.Size, Default: "4k", Min: 1, Max: 1 << 30, Help: "bytes per I/O"},
		{Name: "size", Kind: workload.Size, Default: "1g", Min: 1, Help: "file size per job (rounded down to a multiple of bs)"},
		{Name: "direct", Kind: workload.Bool, Default: "true", Help: "O_DIRECT, bypassing the page cache"},
		{Name: "iodepth", Kind: workload.Int, Default: "16", Min: 1, Max: 1024, Help: "I/Os in flight per job"},
		{Name: "jobs", Kind: workload.Int, Default: "1", Min: 1, Max: 256, Help: "independent jobs, each with its own file"},
		{Name: "fsync", Kind: workload.Int, Default: "0", Min: 0, Help: "fsync the file after every N writes of a job (0: never)"},
		{Name: "duration", Kind: workload.Duration, Default: "10s", Min: 0.01, Max: 86400, Help: "timed part"},
		{Name: "engine", Kind: workload.Enum, Default: "aio", Enum: []string{"aio", "threads"}, Help: "aio: Linux native AIO keeping iodepth I/Os queued per job (fio's libaio); threads: iodepth goroutines per job each doing blocking pread/pwrite"},
		{Name: "rwmixread", Kind: workload.Int, Default: "50", Min: 0, Max: 100, Help: "percent of reads for rw and randrw"},
	},
	Check: check,
	Agent: run,
	Timeout: func(p workload.Params) time.Duration {
		// Lay-out at a pessimistic 20 MB/s, then the timed part.
		layout := float64(p.Size("size")) * float64(p.Int("jobs")) / 20e6
		return time.Duration(layout*float64(time.Second)) + p.Duration("duration") + 2*time.Minute
	},
}

const align = 4096

func check(p workload.Params) error {
	bs, size := p.Size("bs"), p.Size("size")
	if size < bs {
		return fmt.Errorf("size=%d is smaller than one block (bs=%d)", size, bs)
	}
	if p.Bool("direct") && bs%512 != 0 {
		return fmt.Errorf("bs=%d must be a multiple of 512 with direct=true (O_DIRECT); use direct=false or e.g. bs=4k", bs)
	}
	pat := p.Str("pattern")
	if p.Int("fsync") > 0 && (pat == "read" || pat == "randread") {
		return fmt.Errorf("fsync=%d applies to writes but pattern=%s only reads", p.Int("fsync"), pat)
	}
	return nil
}

// AlignedBuffer returns n bytes whose first byte sits on a multiple of a
// (a power of two), as O_DIRECT requires, carved out of a larger slice.
func AlignedBuffer(n, a int) []byte {
	b := make([]byte, n+a)
	off := int(uintptr(unsafe.Pointer(&b[0])) & uintptr(a-1))
	if off != 0 {
		off = a - off
	}
	return b[off : off+n : off+n]
}

// rng is xorshift64*: per goroutine, so picking offsets costs nothing.
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = rng(x)
	return x * 2685821657736338717
}

func (r *rng) fill(b []byte) {
	for i := 0; i < len(b); i += 8 {
		x := r.next()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(x >> (8 * j))
		}
	}
}

// job is one fio job: its file, what it does, and what it measured.
type job struct {
	f          *os.File
	blocks     int64
	bs         int64
	random     bool
	readPct    int   // percent of I/Os that read
	fsyncEvery int64 // 0: never
	direct     bool
	next       atomic.Int64 // next sequential block
	writes     atomic.Int64 // for fsync=N

	mu              sync.Mutex // guards the results below, merged by workers
	hist            hist.Histogram
	nReads, nWrites int64
}

// pick chooses the next I/O: its offset and whether it reads.
func (j *job) pick(r *rng) (off int64, read bool) {
	var blk int64
	if j.random {
		blk = int64((r.next() >> 1) % uint64(j.blocks))
	} else {
		blk = (j.next.Add(1) - 1) % j.blocks
	}
	read = j.readPct == 100 || (j.readPct > 0 && int(r.next()%100) < j.readPct)
	return blk * j.bs, read
}

// wrote counts one completed write and fsyncs the file every fsyncEvery.
func (j *job) wrote() error {
	if j.fsyncEvery > 0 && j.writes.Add(1)%j.fsyncEvery == 0 {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("disk: fsync %s: %w", j.f.Name(), err)
		}
	}
	return nil
}

// merge adds one worker's results to the job's.
func (j *job) merge(h *hist.Histogram, reads, writes int64) {
	j.mu.Lock()
	j.hist.Merge(h)
	j.nReads += reads
	j.nWrites += writes
	j.mu.Unlock()
}

func (j *job) ioErr(off int64, err error) error {
	if j.direct && errors.Is(err, unix.EINVAL) {
		return directHint(j.f.Name(), err)
	}
	return fmt.Errorf("disk: I/O at offset %d of %s: %w", off, j.f.Name(), err)
}

// runThreads is engine=threads: depth goroutines, each doing one blocking
// pread/pwrite at a time until the deadline.
func runThreads(ctx context.Context, j *job, bufs [][]byte, seed uint64, deadline time.Time) error {
	var wg sync.WaitGroup
	errs := make([]error, len(bufs))
	for w := range bufs {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var h hist.Histogram
			var reads, writes int64
			defer func() { j.merge(&h, reads, writes) }()
			buf := bufs[w]
			r := rng((seed + uint64(w) + 1) * 0x94D049BB133111EB)
			for ctx.Err() == nil {
				off, read := j.pick(&r)
				t0 := time.Now()
				var err error
				if read {
					_, err = j.f.ReadAt(buf, off)
				} else {
					_, err = j.f.WriteAt(buf, off)
				}
				t1 := time.Now()
				if err != nil {
					errs[w] = j.ioErr(off, err)
					return
				}
				h.Record(t1.Sub(t0))
				if read {
					reads++
				} else {
					writes++
					if err := j.wrote(); err != nil {
						errs[w] = err
						return
					}
				}
				if !t1.Before(deadline) {
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return errors.Join(errs...)
}

func directHint(path string, err error) error {
	if errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("disk: the file system of %s rejects O_DIRECT (%w); rerun with direct=false", filepath.Dir(path), err)
	}
	return fmt.Errorf("disk: %w", err)
}

// layout writes path fully with random data, syncs it and drops its pages
// from the page cache.
func layout(ctx context.Context, path string, size int64, seed uint64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("disk: create %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	r := rng(seed | 1)
	for off := int64(0); off < size; off += int64(len(buf)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.fill(buf)
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return fmt.Errorf("disk: lay out %s: %w", path, err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("disk: sync %s: %w", path, err)
	}
	// Best effort, as fio's invalidate: some file systems ignore it.
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	return f.Close()
}

// preallocate prepares the file of a write-only job as fio does by
// default (fallocate=native, no lay-out for jobs that do not read):
// fallocate(2) allocates its blocks as unwritten extents without writing
// them. Where the file system cannot fallocate, the file is laid out fully
// instead (fio would leave it sparse).
//
// This is a measured difference, not a detail: on the 2-core VM's ext4
// (virtio disk), 4 KiB randwrite O_DIRECT iodepth 16 with fio itself ran
// at a median 75k IOPS (56-117k, 13 runs) on a 256 MiB file fully written
// and synced just before, against 113k on its own fallocated file,
// interleaved. isobench, which laid its file out fully, thus measured
// something slower (and noisier) than fio and the fio tool adapter
// (--create_only=1 fallocates too); on the same kind of file the two agree
// (median isobench/fio 1.02 on written files, 0.97 on fallocated ones).
func preallocate(ctx context.Context, path string, size int64, seed uint64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("disk: create %s: %w", path, err)
	}
	defer f.Close()
	err = fallocate(int(f.Fd()), size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		f.Close()
		return layout(ctx, path, size, seed)
	}
	if err != nil {
		return fmt.Errorf("disk: fallocate %s: %w", path, err)
	}
	return f.Close()
}

func run(ctx context.Context, p workload.Params, ready workload.Barrier) (ms []sample.Metric, err error) {
	bs := p.Size("bs")
	blocks := p.Size("size") / bs
	size := blocks * bs
	direct := p.Bool("direct")
	depth := p.Int("iodepth")
	njobs := p.Int("jobs")
	dur := p.Duration("duration")
	pat := p.Str("pattern")
	engine := p.Str("engine")
	mix := p.Int("rwmixread")
	readPct := map[string]int{"randread": 100, "read": 100, "randwrite": 0, "write": 0, "rw": mix, "randrw": mix}[pat]

	dir, err := workload.Scratch()
	if err != nil {
		return nil, err
	}
	jobs := make([]*job, njobs)
	defer func() {
		for i, j := range jobs {
			if j == nil {
				continue
			}
			if j.f != nil {
				j.f.Close()
			}
			if rerr := os.Remove(jobPath(dir, i)); rerr != nil && err == nil && !errors.Is(rerr, os.ErrNotExist) {
				ms, err = nil, fmt.Errorf("disk: remove: %w", rerr)
			}
		}
	}()

	// Untimed: lay out every job's file, open it for the timed part, fill
	// the I/O buffers.
	flags := os.O_RDWR
	if direct {
		flags |= unix.O_DIRECT
	}
	for i := range jobs {
		path := jobPath(dir, i)
		jobs[i] = &job{
			blocks: blocks, bs: bs, direct: direct, readPct: readPct,
			random:     pat == "randread" || pat == "randwrite" || pat == "randrw",
			fsyncEvery: int64(p.Int("fsync")),
		}
		prepare := layout
		if readPct == 0 {
			prepare = preallocate
		}
		if err := prepare(ctx, path, size, uint64(i+1)*0x9E3779B97F4A7C15); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(path, flags, 0)
		if err != nil {
			if direct {
				return nil, directHint(path, err)
			}
			return nil, fmt.Errorf("disk: open %s: %w", path, err)
		}
		jobs[i].f = f
	}
	bufs := make([][][]byte, njobs)
	for i := range bufs {
		bufs[i] = make([][]byte, depth)
		for k := range bufs[i] {
			bufs[i][k] = AlignedBuffer(int(bs), align)
			r := rng(uint64(i*depth+k+7) * 0xBF58476D1CE4E5B9)
			r.fill(bufs[i][k])
		}
	}

	if err := ready(); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	deadline := start.Add(dur)
	errs := make([]error, njobs)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func(i int, j *job) {
			defer wg.Done()
			if engine == "aio" {
				errs[i] = runAIO(runCtx, j, bufs[i], uint64(i), deadline)
			} else {
				errs[i] = runThreads(runCtx, j, bufs[i], uint64(i*depth), deadline)
			}
			if errs[i] != nil {
				cancel() // stop the other jobs too
			}
		}(i, j)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	for _, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			return nil, e
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	var h hist.Histogram
	var reads, writes int64
	for _, j := range jobs {
		h.Merge(&j.hist)
		reads += j.nReads
		writes += j.nWrites
	}
	if h.Count() == 0 {
		return nil, errors.New("disk: no I/O completed; raise duration")
	}
	ops := float64(reads + writes)
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	ms = []sample.Metric{
		{Name: "iops", Value: ops / elapsed, Unit: "IO/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "mib_per_sec", Value: ops * float64(bs) / (1 << 20) / elapsed, Unit: "MiB/s", Better: sample.Higher, Agg: sample.Sum},
	}
	if pat == "rw" || pat == "randrw" {
		ms = append(ms,
			sample.Metric{Name: "read_iops", Value: float64(reads) / elapsed, Unit: "IO/s", Better: sample.Higher, Agg: sample.Sum},
			sample.Metric{Name: "write_iops", Value: float64(writes) / elapsed, Unit: "IO/s", Better: sample.Higher, Agg: sample.Sum},
		)
	}
	ms = append(ms,
		sample.Metric{Name: "lat_p50", Value: msOf(h.Percentile(50)), Unit: "ms", Better: sample.Lower, Agg: sample.Mean},
		sample.Metric{Name: "lat_p95", Value: msOf(h.Percentile(95)), Unit: "ms", Better: sample.Lower, Agg: sample.Max},
		sample.Metric{Name: "lat_p99", Value: msOf(h.Percentile(99)), Unit: "ms", Better: sample.Lower, Agg: sample.Max},
		sample.Metric{Name: "lat_max", Value: msOf(h.Max()), Unit: "ms", Better: sample.Lower, Agg: sample.Max},
	)
	return ms, nil
}

// jobPath names job i's file; the pid keeps concurrent agents sharing a
// scratch directory apart.
func jobPath(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("isobench-disk-%d.%d", os.Getpid(), i))
}
