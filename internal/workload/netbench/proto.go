package netbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The wire protocol between a client and the server. Every connection
// starts with a fixed header from the client saying what it wants; the
// server then plays its part until the connection ends:
//
//   - upload: the client sends; after it shuts down its write side the
//     server answers with the number of bytes it received (8 bytes, big
//     endian), so throughput is counted where the data arrived.
//   - download: the server sends msg-size writes until the client closes.
//   - rr: the client sends req-size bytes, the server answers resp-size
//     bytes; repeated, one transaction outstanding, until EOF (netperf TCP_RR).
//   - crr: one rr transaction, then the server closes (netperf TCP_CRR).
//   - stop: the server stops accepting and its agent workload returns.
const (
	magic      = 0x49534e42 // "ISNB"
	headerSize = 16
	maxMsg     = 64 << 20
)

// Modes in the header.
const (
	modeUpload byte = iota + 1
	modeDownload
	modeRR
	modeCRR
	modeStop
)

type header struct {
	mode byte
	msg  uint32 // upload/download write size; rr/crr request size
	resp uint32 // rr/crr response size
}

func (h header) encode() []byte {
	b := make([]byte, headerSize)
	binary.BigEndian.PutUint32(b[0:4], magic)
	b[4] = h.mode
	binary.BigEndian.PutUint32(b[8:12], h.msg)
	binary.BigEndian.PutUint32(b[12:16], h.resp)
	return b
}

func decodeHeader(b []byte) (header, error) {
	if binary.BigEndian.Uint32(b[0:4]) != magic {
		return header{}, errors.New("netbench: bad magic (not an isobench client)")
	}
	h := header{mode: b[4], msg: binary.BigEndian.Uint32(b[8:12]), resp: binary.BigEndian.Uint32(b[12:16])}
	if h.mode < modeUpload || h.mode > modeStop {
		return header{}, fmt.Errorf("netbench: unknown mode %d", h.mode)
	}
	if h.msg > maxMsg || h.resp > maxMsg {
		return header{}, fmt.Errorf("netbench: message size %d/%d above %d", h.msg, h.resp, maxMsg)
	}
	return h, nil
}

// server answers clients on one listener until Serve's context ends or a
// client sends a stop header.
type server struct {
	ln      net.Listener
	cpu     int          // pin the serving threads here; noCPU: don't
	noYield bool         // both ends share one pinned CPU: never yield
	conns   atomic.Int64 // connections served
	bytes   atomic.Int64 // payload bytes received and sent

	stopped chan struct{}
	once    sync.Once
}

func newServer(ln net.Listener) *server {
	return &server{ln: ln, cpu: noCPU, stopped: make(chan struct{})}
}

// stop ends Serve.
func (s *server) stop() { s.once.Do(func() { close(s.stopped); s.ln.Close() }) }

// Serve accepts connections until ctx ends or a stop header arrives, and
// returns once every connection's loop has seen the stop (within a tick).
//
// Like the request/response loops, the accept loop runs off Go's
// netpoller (see blocking.go): a few workers block in accept(2) on a
// duplicate of the listening socket, as a pre-forked server's processes
// do, read each connection's header with plain system calls and serve
// tcp-crr's single transaction inline, so a connection costs no epoll
// registration and no hand-off between threads. rr and stream connections
// get a goroutine of their own on the blocking socket.
func (s *server) Serve(ctx context.Context) error {
	defer context.AfterFunc(ctx, s.stop)()
	lfd, err := blockingListener(s.ln)
	if err != nil {
		return err
	}
	defer syscall.Close(lfd)
	// accept(2) ignores SO_RCVTIMEO here; shutting the listening socket
	// down wakes every worker blocked in it (with EINVAL)
	woken := make(chan struct{})
	go func() {
		defer close(woken)
		<-s.stopped
		syscall.Shutdown(lfd, syscall.SHUT_RDWR)
	}()
	defer func() { s.stop(); <-woken }()
	var wg sync.WaitGroup
	defer wg.Wait()
	workers := max(runtime.GOMAXPROCS(0), 2)
	errs := make(chan error, workers)
	for range workers {
		go func() { errs <- s.acceptLoop(lfd, &wg) }()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
			s.stop()
		}
	}
	return first
}

// isStopped reports whether stop was called.
func (s *server) isStopped() bool {
	select {
	case <-s.stopped:
		return true
	default:
		return false
	}
}

// check is the blocking loops' give-up test: stop was called.
func (s *server) check() error {
	if s.isStopped() {
		return errGiveUp
	}
	return nil
}

// acceptLoop accepts connections on the blocking listener lfd until stop.
func (s *server) acceptLoop(lfd int, wg *sync.WaitGroup) error {
	if err := pinThread(s.cpu); err != nil {
		return err
	}
	y := yielder{off: s.noYield}
	for {
		y.maybe(time.Now())
		fd, _, err := syscall.Accept4(lfd, syscall.SOCK_CLOEXEC)
		switch {
		case err == syscall.EAGAIN:
			if s.isStopped() {
				return nil
			}
			continue
		case err == syscall.EINTR, err == syscall.ECONNABORTED:
			continue
		case err != nil:
			if s.isStopped() {
				return nil
			}
			return fmt.Errorf("netbench server: accept: %w", err)
		}
		if s.isStopped() {
			syscall.Close(fd)
			return nil
		}
		s.serveFD(fd, wg)
	}
}

// serveFD reads a new connection's header and serves it; fd is closed
// when the connection is done (or handed to a net.Conn).
func (s *server) serveFD(fd int, wg *sync.WaitGroup) {
	keep := false
	defer func() {
		if !keep {
			syscall.Close(fd)
		}
	}()
	if err := blockingFD(fd); err != nil {
		return
	}
	syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	hb := make([]byte, headerSize)
	if err := readFull(fd, hb, s.check); err != nil {
		return
	}
	h, err := decodeHeader(hb)
	if err != nil {
		return
	}
	s.conns.Add(1)
	switch h.mode {
	case modeStop:
		writeFull(fd, []byte{1}, s.check)
		s.stop()
	case modeCRR:
		// one transaction, then the server closes first, as netperf's
		// TCP_CRR server does
		if err := readFull(fd, make([]byte, h.msg), s.check); err != nil {
			return
		}
		if err := writeFull(fd, make([]byte, h.resp), s.check); err != nil {
			return
		}
		s.bytes.Add(int64(h.msg + h.resp))
	case modeRR:
		keep = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer syscall.Close(fd)
			if pinThread(s.cpu) != nil { // the accept loop pinned: cannot fail here
				return
			}
			s.bytes.Add(s.rr(fd, h))
		}()
	case modeUpload, modeDownload:
		keep = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer syscall.Close(fd)
			if pinThread(s.cpu) != nil { // the accept loop pinned: cannot fail here
				return
			}
			s.bytes.Add(s.stream(fd, h))
		}()
	}
}

// rr answers requests on a blocking fd until EOF or stop and returns the
// payload bytes moved.
func (s *server) rr(fd int, h header) int64 {
	req := make([]byte, h.msg)
	resp := make([]byte, h.resp)
	var n int64
	y := yielder{off: s.noYield}
	for {
		y.maybe(time.Now())
		if err := readFull(fd, req, s.check); err != nil {
			return n
		}
		if err := writeFull(fd, resp, s.check); err != nil {
			return n
		}
		n += int64(len(req) + len(resp))
	}
}

// stream serves an upload or download connection on a blocking fd until
// the client closes (or its half, for an upload) or stop, and returns the
// payload bytes moved. Like iperf 2's server it calls read or write
// directly, off the netpoller: with Go's non-blocking reads, every time the
// reader caught up with the writer it parked and was woken through epoll
// by the next segment (see blocking.go); with both ends on one CPU over
// loopback tcp-stream read 0.95 of iperf3 that way and 1.06 this way
// (docs/fidelity.md).
func (s *server) stream(fd int, h header) int64 {
	y := yielder{off: s.noYield}
	var n int64
	switch h.mode {
	case modeUpload:
		buf := make([]byte, max(int(h.msg), 64<<10))
		for !s.isStopped() {
			y.maybe(time.Now())
			k, err := syscall.Read(fd, buf)
			if again, err := retry("read", err, s.check); again {
				continue
			} else if err != nil {
				return n
			}
			if k == 0 { // the client's half close: the upload is done
				var out [8]byte
				binary.BigEndian.PutUint64(out[:], uint64(n))
				writeFull(fd, out[:], s.check)
				return n
			}
			n += int64(k)
		}
	case modeDownload:
		buf := make([]byte, h.msg)
		for !s.isStopped() {
			y.maybe(time.Now())
			k, err := syscall.Write(fd, buf)
			if again, err := retry("write", err, s.check); again {
				continue
			} else if err != nil {
				return n // the client closed: the download is done
			}
			n += int64(k)
		}
	}
	return n
}

// noDelay turns Nagle off: every request/response goes out at once.
func noDelay(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
}

// sendStop asks the server at addr to stop.
func sendStop(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("netbench: stopping server %s: %w", addr, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := c.Write(header{mode: modeStop}.encode()); err != nil {
		return fmt.Errorf("netbench: stopping server %s: %w", addr, err)
	}
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil {
		return fmt.Errorf("netbench: stopping server %s: %w", addr, err)
	}
	return nil
}
