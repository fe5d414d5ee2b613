package blockio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// runNugget is IO-nugget (github.com/Maokei/bsdvlinux, ionugget.py), the
// study-000 tool, step by step: write the file as block-size blocks of
// random data, each write followed by fsync and timed on its own
// (write+fsync); then read it back read-size bytes at a time at every
// read-size offset in shuffled order (lseek+read, each pair timed), straight
// after writing (through the page cache, as IO-nugget did). Each phase's
// throughput is the file size over the sum of its per-block times, in
// MiB/s as IO-nugget prints it ("Mb" there is MiB: size in MiB over
// seconds). The time between blocks (generating data, the loop) is not
// counted, as in IO-nugget.
func runNugget(ctx context.Context, params workload.Params, ready workload.Barrier) (ms []sample.Metric, err error) {
	bs := int(params.Size("block-size"))
	size := params.Size("size")
	rs := int(params.Size("read-size"))
	dir, err := workload.Scratch()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, fmt.Sprintf("isobench-ionugget-%d", os.Getpid()))
	defer func() {
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			ms, err = nil, fmt.Errorf("blockio: remove %s: %w", path, rerr)
		}
	}()
	src := newPool(bs, size)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, openErr(path, false, err)
	}
	defer f.Close()
	blocks := (size + int64(bs) - 1) / int64(bs)
	// Reads: every read-size offset of the file, shuffled (untimed).
	nreads := size / int64(rs)
	offsets := make([]int64, nreads)
	for i := range offsets {
		offsets[i] = int64(i) * int64(rs)
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	r.Shuffle(len(offsets), func(i, j int) { offsets[i], offsets[j] = offsets[j], offsets[i] })
	buf := make([]byte, rs)

	if err := ready(); err != nil {
		return nil, err
	}
	var writeSum, slowestWrite time.Duration
	for i := int64(0); i < blocks; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		blk := src.block(i, int(min(int64(bs), size-i*int64(bs))))
		t0 := time.Now()
		if _, err := f.Write(blk); err != nil {
			return nil, ioErr("write", path, false, err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("blockio: fsync %s: %w", path, err)
		}
		d := time.Since(t0)
		writeSum += d
		slowestWrite = max(slowestWrite, d)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("blockio: close %s: %w", path, err)
	}
	rf, err := os.Open(path)
	if err != nil {
		return nil, openErr(path, false, err)
	}
	defer rf.Close()
	var readSum time.Duration
	var got int64
	for i, off := range offsets {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		// lseek then read, two system calls timed together, as IO-nugget
		// does (a pread would halve the system calls a sandbox pays for).
		t0 := time.Now()
		_, serr := rf.Seek(off, io.SeekStart)
		n, err := rf.Read(buf)
		d := time.Since(t0)
		if serr != nil {
			return nil, ioErr("seek", path, false, serr)
		}
		if err != nil && n < rs {
			return nil, ioErr("read", path, false, err)
		}
		readSum += d
		got += int64(n)
	}
	if writeSum <= 0 || readSum <= 0 {
		return nil, errors.New("blockio: a phase took no measurable time; raise size")
	}
	mib := func(bytes int64, d time.Duration) float64 { return float64(bytes) / (1 << 20) / d.Seconds() }
	return []sample.Metric{
		{Name: "write_mb_per_sec", Value: mib(size, writeSum), Unit: "MiB/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "read_mb_per_sec", Value: mib(got, readSum), Unit: "MiB/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "write_block_max", Value: float64(slowestWrite) / float64(time.Millisecond), Unit: "ms", Better: sample.Lower, Agg: sample.Max},
	}, nil
}
