package netbench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"syscall"
	"time"
)

// Request/response runs with the socket in blocking mode, calling read and
// write directly, as netperf and sockperf do. It also takes the socket out
// of Go's netpoller: while registered, every arriving segment wakes a
// runtime thread parked in epoll_wait on an idle P, which doubled the
// round trip on a 2-CPU host. So the socket is duplicated and the
// net.Conn closed (which removes its epoll registration); the duplicate
// keeps the connection and is used with plain system calls.

// A goroutine looping over blocking system calls never passes through the
// scheduler, so after 10 ms on the same scheduling tick the runtime's
// sysmon thread treats it as a long runner: it takes the goroutine's P
// away at every one of its system calls and hands it to another thread,
// and the goroutine comes back from each read on a P it must win back,
// often on another thread. On a 2-CPU host that churn woke extra threads
// that competed with both ends, halving the transaction rate across the
// docker bridge and tripling the tail. A loop therefore yields to the
// scheduler every yieldEvery (runtime.Gosched starts a new tick), which
// keeps the P with the goroutine for the whole system call, as a C
// program's thread would have it.
const yieldEvery = time.Millisecond

//
// Except when both ends are pinned to one CPU: a goroutine locked to its
// thread that yields hands its P to another thread and waits to be handed
// back, and with the peer sharing the CPU that round trip put 80 us into
// the 99th percentile (8 us without); pinned to different CPUs the yield
// still helps (p99 105 us against 133 us without).

// yielder calls runtime.Gosched when yieldEvery has passed since the last
// time it did, unless off.
type yielder struct {
	last time.Time
	off  bool
}

// maybe yields if it is time to; now is the caller's current time.
func (y *yielder) maybe(now time.Time) {
	if !y.off && now.Sub(y.last) >= yieldEvery {
		runtime.Gosched()
		y.last = now
	}
}

// tick is the socket timeout (SO_RCVTIMEO/SO_SNDTIMEO): how often a
// blocked read or write comes back to check whether it should give up.
const tick = 200 * time.Millisecond

// errGiveUp is returned by a blocking loop told to stop by its check.
var errGiveUp = errors.New("netbench: stopped")

// withBlocking detaches c's socket from the netpoller as described above
// and runs fn on it in blocking mode, with socket timeouts of one tick. c
// is closed when withBlocking returns; the connection ends when fn's
// descriptor is closed, right after fn.
func withBlocking(c net.Conn, fn func(fd int) error) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return fmt.Errorf("netbench: %T is not a TCP connection", c)
	}
	fd, err := blockingDup(tc)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	c.Close() // drops the epoll registration; fd keeps the socket open
	return fn(fd)
}

// blockingListener duplicates ln's socket out of the netpoller, in
// blocking mode. ln stays open; the caller closes the returned fd, and
// wakes threads blocked in accept(2) on it with shutdown(2).
func blockingListener(ln net.Listener) (int, error) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return -1, fmt.Errorf("netbench: %T is not a TCP listener", ln)
	}
	return blockingDup(tl)
}

// blockingDup duplicates sc's socket and puts the duplicate in blocking
// mode with timeouts of one tick (the mode is the socket's, shared with
// sc's descriptor: the caller stops using sc).
func blockingDup(sc syscall.Conn) (int, error) {
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("netbench: %w", err)
	}
	fd := -1
	var derr error
	if err := rc.Control(func(ufd uintptr) { fd, derr = syscall.Dup(int(ufd)) }); err != nil {
		return -1, fmt.Errorf("netbench: %w", err)
	}
	if derr != nil {
		return -1, fmt.Errorf("netbench: dup: %w", derr)
	}
	syscall.CloseOnExec(fd)
	if err := blockingFD(fd); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// blockingFD puts a socket in blocking mode with send and receive
// timeouts of one tick.
func blockingFD(fd int) error {
	tv := syscall.NsecToTimeval(int64(tick))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("netbench: SO_RCVTIMEO: %w", err)
	}
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv); err != nil {
		return fmt.Errorf("netbench: SO_SNDTIMEO: %w", err)
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		return fmt.Errorf("netbench: blocking mode: %w", err)
	}
	return nil
}

// readFull reads len(b) bytes from a blocking fd. check is called whenever
// a read timed out; a non-nil error from it ends the read. A clean EOF
// before any byte is io.EOF.
func readFull(fd int, b []byte, check func() error) error {
	got := 0
	for got < len(b) {
		n, err := syscall.Read(fd, b[got:])
		if again, err := retry("read", err, check); again {
			continue
		} else if err != nil {
			return err
		}
		if n == 0 {
			if got == 0 {
				return io.EOF
			}
			return io.ErrUnexpectedEOF
		}
		got += n
	}
	return nil
}

// writeFull writes all of b to a blocking fd.
func writeFull(fd int, b []byte, check func() error) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if again, err := retry("write", err, check); again {
			continue
		} else if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// retry sorts the error of a blocking read or write (op): again on EINTR
// and on a timeout that check lets pass; else the error that ends the
// loop (check's, or err named by op), nil when there was none.
func retry(op string, err error, check func() error) (again bool, _ error) {
	switch {
	case err == syscall.EINTR:
		return true, nil
	case err == syscall.EAGAIN:
		if cerr := check(); cerr != nil {
			return false, cerr
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("%s: %w", op, err)
	}
	return false, nil
}
