package netbench

import (
	"github.com/isobench/isobench/internal/hist"

	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"golang.org/x/sys/unix"
)

// Client modes, as the _net-client parameter "mode" spells them.
const (
	ModeStream = "stream"
	ModeRR     = "rr"
	ModeCRR    = "crr"
)

// clientConfig is what one client (one instance's worth of streams) does.
type clientConfig struct {
	addr      string // host:port of the server
	mode      string // ModeStream, ModeRR, ModeCRR
	download  bool   // stream only: the server sends
	streams   int
	msg       int // stream write size, or rr/crr request size
	resp      int // rr/crr response size
	duration  time.Duration
	dialLimit time.Duration // bound on one connect
	cpu       int           // pin the streams' threads here; noCPU: don't
	noYield   bool          // both ends share one pinned CPU: never yield
}

// client is a client whose untimed setup (connecting) is done.
type client struct {
	cfg   clientConfig
	conns []net.Conn // stream and rr: one per stream, connected
}

// prepare connects the streams (not for crr, whose connects are timed).
func prepare(ctx context.Context, cfg clientConfig) (*client, error) {
	c := &client{cfg: cfg}
	if cfg.mode == ModeCRR {
		return c, nil
	}
	d := net.Dialer{Timeout: cfg.dialLimit}
	for i := 0; i < cfg.streams; i++ {
		conn, err := d.DialContext(ctx, "tcp", cfg.addr)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("netbench: connect to %s: %w", cfg.addr, err)
		}
		noDelay(conn)
		c.conns = append(c.conns, conn)
	}
	return c, nil
}

func (c *client) close() {
	for _, conn := range c.conns {
		conn.Close()
	}
}

// result is what a client measured.
type result struct {
	bytes   int64           // stream payload bytes counted at the receiver
	trans   int64           // rr/crr transactions
	elapsed time.Duration   // from start to the last stream's end
	hist    *hist.Histogram // rr/crr latency
}

// run is the timed part: every stream for the configured duration.
func (c *client) run(ctx context.Context) (result, error) {
	defer c.close()
	start := time.Now()
	end := start.Add(c.cfg.duration)
	n := c.cfg.streams
	res := make([]result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := pinThread(c.cfg.cpu); err != nil {
				errs[i] = err
				return
			}
			var conn net.Conn
			if i < len(c.conns) {
				conn = c.conns[i]
				stop := context.AfterFunc(ctx, func() { conn.Close() })
				defer stop()
			}
			switch {
			case c.cfg.mode == ModeStream && c.cfg.download:
				res[i], errs[i] = c.download(ctx, conn, start, end)
			case c.cfg.mode == ModeStream:
				res[i], errs[i] = c.upload(ctx, conn, start, end)
			case c.cfg.mode == ModeRR:
				res[i], errs[i] = c.rr(ctx, conn, start, end)
			default:
				res[i], errs[i] = c.crr(ctx, start, end)
			}
		}(i)
	}
	wg.Wait()
	if ctx.Err() != nil {
		return result{}, ctx.Err()
	}
	if err := errors.Join(errs...); err != nil {
		return result{}, err
	}
	total := result{hist: &hist.Histogram{}}
	for _, r := range res {
		total.bytes += r.bytes
		total.trans += r.trans
		total.elapsed = max(total.elapsed, r.elapsed)
		if r.hist != nil {
			total.hist.Merge(r.hist)
		}
	}
	return total, nil
}

// grace bounds how long a stream may take past its end (a dead server).
const grace = 30 * time.Second

// upload writes for the duration, half-closes and reads the byte count
// the server received. Both stream directions use the blocking socket with
// plain system calls, as iperf 2 does (see server.stream for why).
func (c *client) upload(ctx context.Context, conn net.Conn, start, end time.Time) (result, error) {
	check := c.giveUp(ctx, end)
	buf := make([]byte, c.cfg.msg)
	var got int64
	err := withBlocking(conn, func(fd int) error {
		if err := writeFull(fd, header{mode: modeUpload, msg: uint32(c.cfg.msg)}.encode(), check); err != nil {
			return err
		}
		y := yielder{off: c.cfg.noYield}
		for now := time.Now(); now.Before(end); now = time.Now() {
			y.maybe(now)
			_, err := syscall.Write(fd, buf)
			if again, err := retry("write", err, check); again {
				continue
			} else if err != nil {
				return err
			}
		}
		if err := syscall.Shutdown(fd, syscall.SHUT_WR); err != nil {
			return fmt.Errorf("half close: %w", err)
		}
		var cnt [8]byte
		if err := readFull(fd, cnt[:], check); err != nil {
			return fmt.Errorf("server did not confirm the bytes it received: %w", err)
		}
		got = int64(binary.BigEndian.Uint64(cnt[:]))
		return nil
	})
	if err != nil {
		return result{}, fmt.Errorf("netbench upload: %w", err)
	}
	return result{bytes: got, elapsed: time.Since(start)}, nil
}

// download reads for the duration and closes.
func (c *client) download(ctx context.Context, conn net.Conn, start, end time.Time) (result, error) {
	check := c.giveUp(ctx, end)
	buf := make([]byte, max(c.cfg.msg, 64<<10))
	var n int64
	err := withBlocking(conn, func(fd int) error {
		if err := writeFull(fd, header{mode: modeDownload, msg: uint32(c.cfg.msg)}.encode(), check); err != nil {
			return err
		}
		y := yielder{off: c.cfg.noYield}
		for now := time.Now(); now.Before(end); now = time.Now() {
			y.maybe(now)
			k, err := syscall.Read(fd, buf)
			if again, err := retry("read", err, check); again {
				continue
			} else if err != nil {
				return err
			}
			if k == 0 {
				return io.ErrUnexpectedEOF // the server ended the stream early
			}
			n += int64(k)
		}
		return nil
	})
	if err != nil {
		return result{}, fmt.Errorf("netbench download: %w", err)
	}
	return result{bytes: n, elapsed: time.Since(start)}, nil
}

// giveUp is a blocking loop's check: the run was cancelled, or the peer
// has not answered for grace past the end.
func (c *client) giveUp(ctx context.Context, end time.Time) func() error {
	limit := end.Add(grace)
	return func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(limit) {
			return fmt.Errorf("no answer %v after the end", grace)
		}
		return nil
	}
}

func (c *client) rr(ctx context.Context, conn net.Conn, start, end time.Time) (result, error) {
	h := &hist.Histogram{}
	if _, err := conn.Write(header{mode: modeRR, msg: uint32(c.cfg.msg), resp: uint32(c.cfg.resp)}.encode()); err != nil {
		return result{}, fmt.Errorf("netbench rr: %w", err)
	}
	check := c.giveUp(ctx, end)
	req := make([]byte, c.cfg.msg)
	resp := make([]byte, c.cfg.resp)
	var n int64
	var now time.Time
	err := withBlocking(conn, func(fd int) error {
		now = time.Now()
		y := yielder{off: c.cfg.noYield}
		for now.Before(end) {
			y.maybe(now)
			t := now
			if err := writeFull(fd, req, check); err != nil {
				return err
			}
			if err := readFull(fd, resp, check); err != nil {
				return err
			}
			now = time.Now()
			h.Record(now.Sub(t))
			n++
		}
		return nil
	})
	if err != nil {
		return result{}, fmt.Errorf("netbench rr: %w", err)
	}
	return result{trans: n, elapsed: now.Sub(start), hist: h}, nil
}

// crr connects, sends the request, reads the response and the server's
// close, and closes, over and over. It uses plain blocking system calls
// (socket, connect, write, read, close), as netperf's TCP_CRR does, not
// Go's dialer: that one connects in non-blocking mode through the
// netpoller and adds keep-alive options and address look-ups to every
// connection.
func (c *client) crr(ctx context.Context, start, end time.Time) (result, error) {
	sa, family, err := sockaddr(c.cfg.addr)
	if err != nil {
		return result{}, fmt.Errorf("netbench crr: %w", err)
	}
	h := &hist.Histogram{}
	msg := append(header{mode: modeCRR, msg: uint32(c.cfg.msg), resp: uint32(c.cfg.resp)}.encode(), make([]byte, c.cfg.msg)...)
	resp := make([]byte, c.cfg.resp)
	check := c.giveUp(ctx, end)
	var n int64
	y := yielder{off: c.cfg.noYield}
	now := time.Now()
	for now.Before(end) {
		y.maybe(now)
		t := now
		if err := crrOnce(sa, family, msg, resp, check); err != nil {
			return result{}, fmt.Errorf("netbench crr: %s: %w", c.cfg.addr, err)
		}
		now = time.Now()
		h.Record(now.Sub(t))
		n++
	}
	return result{trans: n, elapsed: now.Sub(start), hist: h}, nil
}

// crrOnce is one connect/request/response/close transaction on a new
// blocking socket.
func crrOnce(sa syscall.Sockaddr, family int, msg, resp []byte, check func() error) error {
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)
	if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1); err != nil {
		return fmt.Errorf("TCP_NODELAY: %w", err)
	}
	tv := syscall.NsecToTimeval(int64(tick))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("SO_RCVTIMEO: %w", err)
	}
	// SO_SNDTIMEO also bounds a blocking connect
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv); err != nil {
		return fmt.Errorf("SO_SNDTIMEO: %w", err)
	}
	if err := connect(fd, sa, check); err != nil {
		return err
	}
	if err := writeFull(fd, msg, check); err != nil {
		return err
	}
	if err := readFull(fd, resp, check); err != nil {
		return err
	}
	// the server closes first; wait for its FIN so the close is timed
	var one [1]byte
	if err := readFull(fd, one[:], check); err != io.EOF {
		return fmt.Errorf("server did not close after its response (%v)", err)
	}
	return nil
}

// connect connects a blocking socket. A connect interrupted (EINTR) or
// timed out (EINPROGRESS, after SO_SNDTIMEO) goes on in the background;
// then connect waits for the socket to become writable and reads the
// outcome from SO_ERROR.
func connect(fd int, sa syscall.Sockaddr, check func() error) error {
	err := syscall.Connect(fd, sa)
	switch err {
	case nil:
		return nil
	case syscall.EINTR, syscall.EINPROGRESS, syscall.EALREADY:
	default:
		return fmt.Errorf("connect: %w", err)
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		n, err := unix.Poll(pfd, int(tick/time.Millisecond))
		if err != nil && err != unix.EINTR {
			return fmt.Errorf("connect: poll: %w", err)
		}
		if n > 0 {
			break
		}
		if cerr := check(); cerr != nil {
			return cerr
		}
	}
	soerr, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ERROR)
	if err != nil {
		return fmt.Errorf("connect: SO_ERROR: %w", err)
	}
	if soerr != 0 {
		return fmt.Errorf("connect: %w", syscall.Errno(soerr))
	}
	return nil
}

// sockaddr resolves a numeric host:port to a socket address and family.
func sockaddr(hostport string) (syscall.Sockaddr, int, error) {
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil {
		return nil, 0, fmt.Errorf("server address %q: %w", hostport, err)
	}
	a := ap.Addr().Unmap()
	if a.Is4() {
		return &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}, syscall.AF_INET, nil
	}
	return &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}, syscall.AF_INET6, nil
}

// metrics turns a client's result into samples for its workload.
func metrics(mode string, r result) ([]sample.Metric, error) {
	secs := r.elapsed.Seconds()
	if secs <= 0 {
		return nil, errors.New("netbench: nothing was measured (zero elapsed time)")
	}
	switch mode {
	case ModeStream:
		if r.bytes == 0 {
			return nil, errors.New("netbench: no bytes were transferred")
		}
		return []sample.Metric{
			{Name: "throughput", Value: float64(r.bytes) * 8 / secs / 1e9, Unit: "Gbit/s", Better: sample.Higher, Agg: sample.Sum},
		}, nil
	case ModeRR, ModeCRR:
		if r.trans == 0 {
			return nil, errors.New("netbench: no transaction completed")
		}
		name := "transactions_per_sec"
		unit := "transactions/s"
		if mode == ModeCRR {
			name, unit = "connections_per_sec", "connections/s"
		}
		return []sample.Metric{
			{Name: name, Value: float64(r.trans) / secs, Unit: unit, Better: sample.Higher, Agg: sample.Sum},
			{Name: "latency_avg", Value: us(float64(r.hist.Mean())), Unit: "us", Better: sample.Lower, Agg: sample.Mean},
			{Name: "latency_p50", Value: us(float64(r.hist.Percentile(50))), Unit: "us", Better: sample.Lower, Agg: sample.Max},
			{Name: "latency_p99", Value: us(float64(r.hist.Percentile(99))), Unit: "us", Better: sample.Lower, Agg: sample.Max},
		}, nil
	}
	return nil, fmt.Errorf("netbench: unknown mode %q", mode)
}

func us(d float64) float64 { return d / 1e3 }
