//go:build linux && (amd64 || arm64)

package disk

import (
	"github.com/isobench/isobench/internal/hist"

	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// iocb is struct iocb of linux/aio_abi.h on a little-endian machine.
type iocb struct {
	data      uint64
	key       uint32
	rwFlags   uint32
	opcode    uint16
	reqprio   int16
	fildes    uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// ioEvent is struct io_event.
type ioEvent struct {
	data uint64
	obj  uint64
	res  int64
	res2 int64
}

const (
	iocbCmdPread  = 0
	iocbCmdPwrite = 1
)

// runAIO is engine=aio, what fio's libaio engine does: one io_context per
// job with depth I/Os queued; every completion reaped is replaced by a new
// I/O until the deadline, then the queue drains. Latency runs from
// submission to reaping. With direct=false the kernel performs buffered
// AIO synchronously inside io_submit, as it does for fio.
//
// Each new I/O is submitted on its own, right after its predecessor's
// completion is handled, as fio does by default (iodepth_batch_submit=1),
// rather than in one io_submit for every completion an io_getevents
// returned. Batching looked cheaper but fell into lock step on a virtio
// disk: a batch went to the device together, completed together, and was
// reaped together (perf stat: 30k io_submit and 30k io_getevents for 450k
// I/Os, so about 15 of 16 I/Os per call; fio made one of each per I/O),
// and the queue drained between batches. Measured on the 2-core VM's ext4,
// 4 KiB randwrite, O_DIRECT, iodepth 16, same fallocated 256 MiB file,
// interleaved with fio (libaio) at about 115k IOPS: batched 85-90k IOPS
// (0.75-0.78x fio), one I/O per io_submit 114-115k (0.98-1.01x).
func runAIO(ctx context.Context, j *job, bufs [][]byte, seed uint64, deadline time.Time) (err error) {
	depth := len(bufs)
	var aioCtx uintptr
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, uintptr(depth), uintptr(unsafe.Pointer(&aioCtx)), 0); e != 0 {
		return fmt.Errorf("disk: io_setup: %w (native AIO is unavailable here; rerun with engine=threads)", e)
	}
	// io_destroy waits for I/Os still queued, so bufs outlive them.
	defer unix.Syscall(unix.SYS_IO_DESTROY, aioCtx, 0, 0)

	cbs := make([]iocb, depth)
	isRead := make([]bool, depth)
	started := make([]time.Time, depth)
	events := make([]ioEvent, depth)
	r := rng((seed + 1) * 0xD6E8FEB86659FD93)
	var h hist.Histogram
	var reads, writes int64
	defer func() { j.merge(&h, reads, writes) }()

	inflight := 0
	// start picks slot i's next I/O and submits it.
	start := func(i int) error {
		off, read := j.pick(&r)
		op := uint16(iocbCmdPwrite)
		if read {
			op = iocbCmdPread
		}
		isRead[i] = read
		cbs[i] = iocb{
			data:   uint64(i),
			opcode: op,
			fildes: uint32(j.f.Fd()),
			buf:    uint64(uintptr(unsafe.Pointer(&bufs[i][0]))),
			nbytes: uint64(len(bufs[i])),
			offset: off,
		}
		cb := &cbs[i]
		started[i] = time.Now()
		for {
			n, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, aioCtx, 1, uintptr(unsafe.Pointer(&cb)))
			switch {
			case e == unix.EAGAIN || e == unix.EINTR:
				continue
			case e != 0:
				return j.ioErr(off, fmt.Errorf("io_submit: %w", e))
			case n == 1:
				inflight++
				return nil
			}
		}
	}

	var firstErr error
	for i := range depth {
		if err := start(i); err != nil {
			firstErr = err
			break
		}
	}
	for inflight > 0 {
		ts := unix.Timespec{Nsec: int64(100 * time.Millisecond)}
		n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, aioCtx, 1, uintptr(len(events)),
			uintptr(unsafe.Pointer(&events[0])), uintptr(unsafe.Pointer(&ts)), 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return errors.Join(firstErr, fmt.Errorf("disk: io_getevents: %w", e))
		}
		for _, ev := range events[:n] {
			now := time.Now()
			i := int(ev.data)
			inflight--
			switch {
			case ev.res < 0:
				if firstErr == nil {
					firstErr = j.ioErr(cbs[i].offset, unix.Errno(-ev.res))
				}
				continue
			case ev.res != int64(cbs[i].nbytes):
				if firstErr == nil {
					firstErr = j.ioErr(cbs[i].offset, fmt.Errorf("short I/O: %d of %d bytes", ev.res, cbs[i].nbytes))
				}
				continue
			}
			h.Record(now.Sub(started[i]))
			if isRead[i] {
				reads++
			} else {
				writes++
				if err := j.wrote(); err != nil && firstErr == nil {
					firstErr = err
				}
			}
			if firstErr == nil && ctx.Err() == nil && now.Before(deadline) {
				if err := start(i); err != nil {
					firstErr = err
				}
			}
		}
	}
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}
