// Package blockio is the IO-nugget workload of the Docker-vs-Jails study:
// write a file of size bytes as block-size blocks of random data (fsync at
// the end, counted in the write time), then read it back block by block;
// write and read throughput in MB/s (10^6 bytes/s).
//
// By default the file is read through the page cache right after being
// written, as IO-nugget did, so the read phase mostly measures the cache;
// drop-cache=true asks the kernel to evict the file's pages first
// (posix_fadvise DONTNEED, allowed without privileges), direct=true uses
// O_DIRECT for both phases.
package blockio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// Def is the blockio workload.
var Def = workload.Def{
	Name: "blockio",
	Estimate: func(p workload.Params) time.Duration {
		size := float64(p.Size("size"))
		if p.Str("mode") == "ionugget" {
			blocks := size / float64(p.Size("block-size"))
			return workload.Seconds(blocks*5e-3 + size/float64(p.Size("read-size"))*2e-6 + 0.5)
		}
		return workload.Seconds(2*size/150e6 + 0.5)
	},
	Help: "block writer/reader: mode=stream writes a file of random blocks (fsync at the end) and reads it back (MB/s); mode=ionugget is IO-nugget's procedure from study 000 (fsync per 1 MiB block, 512-byte reads at shuffled offsets, per-block times summed; MiB/s)",
	Params: []workload.Param{
		{Name: "mode", Kind: workload.Enum, Default: "stream", Enum: []string{"stream", "ionugget"}, Help: "stream: sequential write, one fsync, sequential read; ionugget: IO-nugget's own procedure (study 000): fsync after every block, read-size reads at shuffled offsets, per-block times summed"},
		{Name: "block-size", Kind: workload.Size, Default: "", Computed: "1m", Min: 1, Max: 1 << 30, Help: "bytes per write (and per read in stream mode)"},
		{Name: "size", Kind: workload.Size, Default: "", Computed: "1g in stream mode, 128m in ionugget mode as IO-nugget", Min: 1, Help: "file size"},
		{Name: "read-size", Kind: workload.Size, Default: "512", Min: 1, Max: 1 << 30, Help: "ionugget mode: bytes per read (IO-nugget reads 512)"},
		{Name: "fsync", Kind: workload.Bool, Default: "true", Help: "fsync after the last write, inside the write time"},
		{Name: "direct", Kind: workload.Bool, Default: "false", Help: "O_DIRECT for both phases"},
		{Name: "drop-cache", Kind: workload.Bool, Default: "false", Help: "evict the file's pages from the page cache before reading (untimed)"},
	},
	Derive: func(p workload.Params) map[string]string {
		if p.Str("mode") == "ionugget" {
			return map[string]string{"block-size": "1m", "size": "128m"}
		}
		return map[string]string{"block-size": "1m", "size": "1g"}
	},
	Check: check,
	Agent: run,
	Timeout: func(p workload.Params) time.Duration {
		// Both phases at a pessimistic 10 MB/s.
		return time.Duration(2*float64(p.Size("size"))/10e6*float64(time.Second)) + 2*time.Minute
	},
}

const align = 4096

// poolMax bounds the random data generated up front.
const poolMax = 64 << 20

func check(p workload.Params) error {
	bs, size := p.Size("block-size"), p.Size("size")
	if size < bs {
		return fmt.Errorf("size=%d is smaller than one block (block-size=%d)", size, bs)
	}
	if p.Str("mode") == "ionugget" {
		if p.Bool("direct") || p.Bool("drop-cache") || !p.Bool("fsync") {
			return fmt.Errorf("mode=ionugget is IO-nugget's procedure (buffered, fsync after every block, no cache drop): direct, drop-cache and fsync=false apply to mode=stream only")
		}
		if rs := p.Size("read-size"); rs > size {
			return fmt.Errorf("read-size=%d is larger than the file (size=%d)", rs, size)
		}
	}
	if p.Bool("direct") && (bs%512 != 0 || size%512 != 0) {
		return fmt.Errorf("block-size=%d and size=%d must be multiples of 512 with direct=true (O_DIRECT); use direct=false or e.g. block-size=1m", bs, size)
	}
	return nil
}

// alignedBuffer returns n bytes starting on a multiple of a (a power of
// two), as O_DIRECT requires.
func alignedBuffer(n, a int) []byte {
	b := make([]byte, n+a)
	off := int(uintptr(unsafe.Pointer(&b[0])) & uintptr(a-1))
	if off != 0 {
		off = a - off
	}
	return b[off : off+n : off+n]
}

// randomFill fills b with xorshift64* output.
func randomFill(b []byte, seed uint64) {
	x := seed | 1
	for i := 0; i < len(b); i += 8 {
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		v := x * 2685821657736338717
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
}

// pool is random data from which every block is cut at a different
// 4096-aligned offset, so no two blocks of a file up to poolMax/4096
// blocks long are equal (deduplicating or compressing file systems gain
// nothing) without generating the whole file in memory.
type pool struct {
	data      []byte
	bs        int
	positions int64
}

func newPool(bs int, size int64) *pool {
	n := int(min(size, poolMax)) + bs
	p := &pool{data: alignedBuffer(n, align), bs: bs}
	randomFill(p.data, uint64(time.Now().UnixNano()))
	p.positions = int64((n-bs)/align + 1)
	return p
}

// block returns the source of block i, of length n <= bs.
func (p *pool) block(i int64, n int) []byte {
	// i*stride mod positions visits every position once per positions
	// blocks, as the stride is a prime that does not divide positions.
	stride := int64(7919)
	if p.positions%stride == 0 {
		stride = 7927
	}
	pos := (i * stride) % p.positions * align
	return p.data[pos : pos+int64(n)]
}

func run(ctx context.Context, params workload.Params, ready workload.Barrier) (ms []sample.Metric, err error) {
	if params.Str("mode") == "ionugget" {
		return runNugget(ctx, params, ready)
	}
	bs := int(params.Size("block-size"))
	size := params.Size("size")
	direct := params.Bool("direct")
	dir, err := workload.Scratch()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, fmt.Sprintf("isobench-blockio-%d", os.Getpid()))
	defer func() {
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			ms, err = nil, fmt.Errorf("blockio: remove %s: %w", path, rerr)
		}
	}()

	// Untimed: generate the random data and open the file.
	src := newPool(bs, size)
	flags := 0
	if direct {
		flags = unix.O_DIRECT
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|flags, 0o600)
	if err != nil {
		return nil, openErr(path, direct, err)
	}
	defer f.Close()
	blocks := (size + int64(bs) - 1) / int64(bs)
	blockLen := func(i int64) int { return int(min(int64(bs), size-i*int64(bs))) }

	if err := ready(); err != nil {
		return nil, err
	}
	start := time.Now()
	for i := int64(0); i < blocks; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := f.Write(src.block(i, blockLen(i))); err != nil {
			return nil, ioErr("write", path, direct, err)
		}
	}
	if params.Bool("fsync") {
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("blockio: fsync %s: %w", path, err)
		}
	}
	writeSecs := time.Since(start).Seconds()
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("blockio: close %s: %w", path, err)
	}

	// Untimed: open for reading, optionally evict the cached pages.
	r, err := os.OpenFile(path, os.O_RDONLY|flags, 0)
	if err != nil {
		return nil, openErr(path, direct, err)
	}
	defer r.Close()
	if params.Bool("drop-cache") {
		if err := unix.Fadvise(int(r.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return nil, fmt.Errorf("blockio: drop cached pages of %s: %w", path, err)
		}
	}
	buf := alignedBuffer(bs, align)
	var got int64
	start = time.Now()
	for i := int64(0); ; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			// Cheap check that the block is the one written.
			k := min(n, 64)
			if i >= blocks || !bytes.Equal(buf[:k], src.block(i, k)) {
				return nil, fmt.Errorf("blockio: block %d read back differs from what was written", i)
			}
			got += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, ioErr("read", path, direct, err)
		}
	}
	readSecs := time.Since(start).Seconds()
	if got != size {
		return nil, fmt.Errorf("blockio: read back %d bytes of %d", got, size)
	}
	if writeSecs <= 0 || readSecs <= 0 {
		return nil, errors.New("blockio: a phase took no measurable time; raise size")
	}
	return []sample.Metric{
		{Name: "write_mb_per_sec", Value: float64(size) / 1e6 / writeSecs, Unit: "MB/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "read_mb_per_sec", Value: float64(size) / 1e6 / readSecs, Unit: "MB/s", Better: sample.Higher, Agg: sample.Sum},
	}, nil
}

func openErr(path string, direct bool, err error) error {
	if direct && errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("blockio: the file system of %s rejects O_DIRECT (%w); rerun with direct=false", filepath.Dir(path), err)
	}
	return fmt.Errorf("blockio: open %s: %w", path, err)
}

func ioErr(op, path string, direct bool, err error) error {
	if direct && errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("blockio: O_DIRECT %s on %s failed (%w); the file system may not support it, rerun with direct=false", op, path, err)
	}
	return fmt.Errorf("blockio: %s %s: %w", op, path, err)
}
