package netbench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// Request/response runs with the socket in blocking mode, calling read and
// write directly, as netperf and sockperf do: through Go's netpoller every
// transaction would park and wake a goroutine on each side, which costs
// more than the network path being measured on loopback or a bridge.

// tick is the socket timeout (SO_RCVTIMEO/SO_SNDTIMEO): how often a
// blocked read or write comes back to check whether it should give up.
const tick = 200 * time.Millisecond

// errGiveUp is returned by a blocking loop told to stop by its check.
var errGiveUp = errors.New("netbench: stopped")

// withBlocking runs fn with c's socket in blocking mode and socket timeouts
// of one tick. While fn runs, closing c waits for it.
func withBlocking(c net.Conn, fn func(fd int) error) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return fmt.Errorf("netbench: %T is not a TCP connection", c)
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return fmt.Errorf("netbench: %w", err)
	}
	var ferr error
	if err := rc.Control(func(ufd uintptr) {
		fd := int(ufd)
		tv := syscall.NsecToTimeval(int64(tick))
		if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
			ferr = fmt.Errorf("netbench: SO_RCVTIMEO: %w", err)
			return
		}
		if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv); err != nil {
			ferr = fmt.Errorf("netbench: SO_SNDTIMEO: %w", err)
			return
		}
		if err := syscall.SetNonblock(fd, false); err != nil {
			ferr = fmt.Errorf("netbench: blocking mode: %w", err)
			return
		}
		defer syscall.SetNonblock(fd, true)
		ferr = fn(fd)
	}); err != nil {
		return fmt.Errorf("netbench: %w", err)
	}
	return ferr
}

// readFull reads len(b) bytes from a blocking fd. check is called whenever
// a read timed out; a non-nil error from it ends the read. A clean EOF
// before any byte is io.EOF.
func readFull(fd int, b []byte, check func() error) error {
	got := 0
	for got < len(b) {
		n, err := syscall.Read(fd, b[got:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			if cerr := check(); cerr != nil {
				return cerr
			}
			continue
		case err != nil:
			return fmt.Errorf("read: %w", err)
		case n == 0:
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
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			if cerr := check(); cerr != nil {
				return cerr
			}
			continue
		case err != nil:
			return fmt.Errorf("write: %w", err)
		}
		b = b[n:]
	}
	return nil
}
