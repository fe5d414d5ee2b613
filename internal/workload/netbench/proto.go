package netbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
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
	ln    net.Listener
	conns atomic.Int64 // connections served
	bytes atomic.Int64 // payload bytes received and sent

	mu      sync.Mutex
	open    map[net.Conn]struct{}
	stopped chan struct{}
	once    sync.Once
}

func newServer(ln net.Listener) *server {
	return &server{ln: ln, open: map[net.Conn]struct{}{}, stopped: make(chan struct{})}
}

// stop ends Serve.
func (s *server) stop() { s.once.Do(func() { close(s.stopped); s.ln.Close() }) }

// Serve accepts connections until ctx ends or a stop header arrives, then
// closes every open connection and returns.
func (s *server) Serve(ctx context.Context) error {
	defer context.AfterFunc(ctx, s.stop)()
	var wg sync.WaitGroup
	defer func() {
		s.mu.Lock()
		open := make([]net.Conn, 0, len(s.open))
		for c := range s.open {
			open = append(open, c)
		}
		s.mu.Unlock()
		for _, c := range open {
			go c.Close() // a blocking-mode handler holds Close up to a tick
		}
		wg.Wait()
	}()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.stopped:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("netbench server: accept: %w", err)
		}
		s.mu.Lock()
		s.open[c] = struct{}{}
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handle(c)
			c.Close()
			s.mu.Lock()
			delete(s.open, c)
			s.mu.Unlock()
		}()
	}
}

func (s *server) handle(c net.Conn) {
	noDelay(c)
	hb := make([]byte, headerSize)
	if _, err := io.ReadFull(c, hb); err != nil {
		return
	}
	h, err := decodeHeader(hb)
	if err != nil {
		return
	}
	s.conns.Add(1)
	switch h.mode {
	case modeStop:
		c.Write([]byte{1})
		s.stop()
	case modeUpload:
		buf := make([]byte, max(int(h.msg), 64<<10))
		var n int64
		for {
			k, err := c.Read(buf)
			n += int64(k)
			if err != nil {
				break
			}
		}
		s.bytes.Add(n)
		var out [8]byte
		binary.BigEndian.PutUint64(out[:], uint64(n))
		c.Write(out[:])
	case modeDownload:
		buf := make([]byte, h.msg)
		var n int64
		for {
			k, err := c.Write(buf)
			n += int64(k)
			if err != nil {
				break
			}
		}
		s.bytes.Add(n)
	case modeRR:
		req := make([]byte, h.msg)
		resp := make([]byte, h.resp)
		check := func() error {
			select {
			case <-s.stopped:
				return errGiveUp
			default:
				return nil
			}
		}
		var n int64
		withBlocking(c, func(fd int) error {
			var y yielder
			for {
				y.maybe(time.Now())
				if err := readFull(fd, req, check); err != nil {
					return err
				}
				if err := writeFull(fd, resp, check); err != nil {
					return err
				}
				n += int64(len(req) + len(resp))
			}
		})
		s.bytes.Add(n)
	case modeCRR:
		// one transaction, then the server closes first, as netperf's
		// TCP_CRR server does
		req := make([]byte, h.msg)
		if _, err := io.ReadFull(c, req); err != nil {
			return
		}
		if _, err := c.Write(make([]byte, h.resp)); err != nil {
			return
		}
		s.bytes.Add(int64(h.msg + h.resp))
	}
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
