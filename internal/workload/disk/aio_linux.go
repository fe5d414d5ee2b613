//go:build linux && (amd64 || arm64)

package disk

import (
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
	list := make([]*iocb, 0, depth)
	r := rng((seed + 1) * 0xD6E8FEB86659FD93)
	var h Histogram
	var reads, writes int64
	defer func() { j.merge(&h, reads, writes) }()

	prep := func(i int) {
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
		list = append(list, &cbs[i])
	}
	submit := func() error {
		now := time.Now()
		for _, cb := range list {
			started[cb.data] = now
		}
		for len(list) > 0 {
			n, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, aioCtx, uintptr(len(list)), uintptr(unsafe.Pointer(&list[0])))
			if e == unix.EAGAIN || e == unix.EINTR {
				continue
			}
			if e != 0 {
				return j.ioErr(list[0].offset, fmt.Errorf("io_submit: %w", e))
			}
			list = list[n:]
		}
		list = list[:0]
		return nil
	}

	for i := range depth {
		prep(i)
	}
	if err := submit(); err != nil {
		return err
	}
	inflight := depth
	var firstErr error
	for inflight > 0 {
		ts := unix.Timespec{Nsec: int64(100 * time.Millisecond)}
		n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, aioCtx, 1, uintptr(len(events)),
			uintptr(unsafe.Pointer(&events[0])), uintptr(unsafe.Pointer(&ts)), 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return fmt.Errorf("disk: io_getevents: %w", e)
		}
		now := time.Now()
		stop := firstErr != nil || ctx.Err() != nil || !now.Before(deadline)
		for _, ev := range events[:n] {
			i := int(ev.data)
			inflight--
			switch {
			case ev.res < 0:
				if firstErr == nil {
					firstErr = j.ioErr(cbs[i].offset, unix.Errno(-ev.res))
				}
				stop = true
				continue
			case ev.res != int64(cbs[i].nbytes):
				if firstErr == nil {
					firstErr = j.ioErr(cbs[i].offset, fmt.Errorf("short I/O: %d of %d bytes", ev.res, cbs[i].nbytes))
				}
				stop = true
				continue
			}
			h.Record(now.Sub(started[i]))
			if isRead[i] {
				reads++
			} else {
				writes++
				if err := j.wrote(); err != nil && firstErr == nil {
					firstErr, stop = err, true
				}
			}
			if !stop {
				prep(i)
			}
		}
		if len(list) > 0 {
			inflight += len(list)
			if err := submit(); err != nil {
				return errors.Join(firstErr, err)
			}
		}
	}
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}
