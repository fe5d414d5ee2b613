package platformd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/isobench/isobench/internal/platform"
)

// Client is the host's end of a platform platformd serves. Addresses its
// instances report are the far end's; DialContext reaches them from here.
type Client struct {
	host    string // as the user named it, e.g. ssh://root@10.0.0.2
	sess    *yamux.Session
	hello   reply
	cleanup func() error // closes what carries the session (SSH)
	stderr  *Tail        // platformd's last words, for errors

	seq       atomic.Int64
	why       atomic.Pointer[string] // why the connection was given up, if it was
	tunnels   sync.Map               // local addresses of Published tunnels
	closeOnce sync.Once
	closeErr  error
}

// preparingPlatform is a Client whose remote side has a Prepare step.
type preparingPlatform struct{ *Client }

// Prepare implements platform.Preparer on the remote side.
func (p preparingPlatform) Prepare(ctx context.Context, profile string) error {
	r, err := p.call(ctx, request{Op: opPrepare, Profile: profile})
	if err != nil {
		return err
	}
	return p.remoteErr(r.Err)
}

// NewClient starts the host's end over conn (the remote end runs Serve).
// host names the remote machine in errors, facts and tags; cleanup, when
// set, is called at Close after the session ends; stderr, when not nil, is
// where the caller sends platformd's standard error (its last line goes
// into the errors of a lost connection). It returns a *Client, or a
// platform.Platform wrapping one that also implements platform.Preparer
// when the remote platform does.
func NewClient(ctx context.Context, conn io.ReadWriteCloser, host string, cleanup func() error, stderr *Tail) (platform.Platform, error) {
	sess, err := yamux.Client(conn, muxConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", host, err)
	}
	if stderr == nil {
		stderr = &Tail{}
	}
	p := &Client{host: host, sess: sess, cleanup: cleanup, stderr: stderr}
	r, err := p.call(ctx, request{Op: opHello})
	if err != nil {
		p.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if r.Err != nil {
		p.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%s: %w", host, r.Err.err())
	}
	p.hello = r
	if r.Preparer {
		return preparingPlatform{p}, nil
	}
	return p, nil
}

// Host is the remote machine as the user named it.
func (p *Client) Host() string { return p.host }

// base is the *Client behind p, or nil for a platform on this machine.
func base(p platform.Platform) *Client {
	switch x := p.(type) {
	case *Client:
		return x
	case preparingPlatform:
		return x.Client
	}
	return nil
}

// Machine returns the host p runs on (as the user named it) and that
// machine's fingerprint (kernel, cpu_model, cores, hostname...); ok is
// false for a platform on this machine.
func Machine(p platform.Platform) (host string, fingerprint map[string]string, ok bool) {
	b := base(p)
	if b == nil {
		return "", nil, false
	}
	return b.host, maps.Clone(b.hello.Fingerprint), true
}

// Lost says why p's connection to its host is gone (the host died, was
// cut off, or platformd there ended): nil while it is up, and always for a
// platform on this machine. A lost connection does not come back.
func Lost(p platform.Platform) error {
	b := base(p)
	if b == nil || !b.sess.IsClosed() {
		return nil
	}
	return b.lost(errors.New("the session ended"))
}

// Closed is closed when p's session ends; p must be a platform NewClient
// returned.
func Closed(p platform.Platform) <-chan struct{} { return base(p).sess.CloseChan() }

// GiveUp records why p's connection is being given up (a keep-alive went
// unanswered), for the errors of the calls it fails and Lost, before the
// caller closes what carries the session; p must be a platform NewClient
// returned.
func GiveUp(p platform.Platform, why string) { base(p).why.Store(&why) }

// lost describes a failure of the connection itself.
func (p *Client) lost(err error) error {
	msg := fmt.Sprintf("remote host %s: connection lost: %v", p.host, err)
	if why := p.why.Load(); why != nil {
		msg = fmt.Sprintf("remote host %s: connection lost: %s", p.host, *why)
	}
	if t := p.stderr.last(); t != "" {
		msg += " (platformd said: " + t + ")"
	}
	return errors.New(msg)
}

// remoteErr wraps an error the remote side reported, naming the host.
func (p *Client) remoteErr(w *wireError) error {
	if w == nil {
		return nil
	}
	return fmt.Errorf("on %s: %w", p.host, w.err())
}

// open starts a stream with req as its first frame.
func (p *Client) open(req request) (*yamux.Stream, *framer, error) {
	st, err := p.sess.OpenStream()
	if err != nil {
		return nil, nil, p.lost(err)
	}
	f := &framer{w: st}
	if err := f.json(frJSON, req); err != nil {
		st.Close()
		return nil, nil, p.lost(err)
	}
	return st, f, nil
}

// call sends req and waits for its one reply, or for ctx.
func (p *Client) call(ctx context.Context, req request) (reply, error) {
	st, _, err := p.open(req)
	if err != nil {
		return reply{}, err
	}
	defer st.Close()
	return p.await(ctx, st)
}

func (p *Client) await(ctx context.Context, st *yamux.Stream) (reply, error) {
	type res struct {
		r   reply
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var r reply
		err := readJSON(st, &r)
		ch <- res{r, err}
	}()
	select {
	case x := <-ch:
		if x.err != nil {
			return reply{}, p.lost(x.err)
		}
		return x.r, nil
	case <-ctx.Done():
		st.Close()
		return reply{}, fmt.Errorf("%s: %w", p.host, ctx.Err())
	}
}

// Name implements platform.Platform: the remote platform's name.
func (p *Client) Name() string { return p.hello.Name }

// Available implements platform.Platform on the remote side.
func (p *Client) Available(ctx context.Context) error {
	r, err := p.call(ctx, request{Op: opAvailable})
	if err != nil {
		return err
	}
	return p.remoteErr(r.Err)
}

// Facts implements platform.Platform: the remote platform's facts, the host
// and the remote machine's fingerprint (host.kernel, host.cpu_model...).
func (p *Client) Facts(ctx context.Context) map[string]string {
	f := map[string]string{}
	if r, err := p.call(ctx, request{Op: opFacts}); err == nil {
		maps.Copy(f, r.Facts)
	} else {
		f["error"] = err.Error()
	}
	f["host"] = p.host
	for k, v := range p.hello.Fingerprint {
		f["host."+k] = v
	}
	return f
}

// hostTags go on every instance's facts, hence on every sample.
func (p *Client) hostTags(f map[string]string) {
	f["host"] = p.host
	fp := p.hello.Fingerprint
	for k, v := range map[string]string{"host_kernel": fp["kernel"], "host_cpu": fp["cpu_model"], "host_cores": fp["cores"], "host_name": fp["hostname"]} {
		if v != "" {
			f[k] = v
		}
	}
}

// Close implements platform.Platform: the remote side closes what is left
// and exits; then the connection is closed.
func (p *Client) Close(ctx context.Context) error {
	p.closeOnce.Do(func() {
		var errs []error
		if !p.sess.IsClosed() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			r, err := p.call(cctx, request{Op: opShutdown})
			cancel()
			if err == nil {
				errs = append(errs, p.remoteErr(r.Err))
			}
		}
		p.sess.Close()
		if p.cleanup != nil {
			errs = append(errs, p.cleanup())
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// DialContext opens a TCP connection from the remote machine to addr (an
// address an instance reported) and returns its host end.
func (p *Client) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil, fmt.Errorf("%s: dial %s: only tcp", p.host, network)
	}
	if _, ok := p.tunnels.Load(addr); ok {
		// a published port already forwarded to this host
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	st, _, err := p.open(request{Op: opDial, Addr: addr})
	if err != nil {
		return nil, err
	}
	r, err := p.await(ctx, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	if r.Err != nil {
		st.Close()
		return nil, fmt.Errorf("dial %s from %s: %w", addr, p.host, r.Err.err())
	}
	return st, nil
}

// HostKeys are the options that say where a platform runs (package
// remote's host=, key=, known-hosts= and binary=); they are not passed on
// to it.
var HostKeys = []string{"host", "key", "known-hosts", "binary"}

// Create implements platform.Platform.
func (p *Client) Create(ctx context.Context, s platform.Spec) (platform.Instance, error) {
	if len(s.Extra) > 0 {
		s.Extra = maps.Clone(s.Extra)
		for _, k := range HostKeys {
			delete(s.Extra, k)
		}
	}
	st, _, err := p.open(request{Op: opCreate, Spec: toWire(s)})
	if err != nil {
		return nil, err
	}
	in := &instance{p: p, st: st, spec: s, waited: make(chan struct{}), tunnels: map[int]net.Listener{}}
	created := make(chan error, 1)
	go in.pump(created)
	select {
	case err := <-created:
		if err != nil {
			st.Close()
			return nil, err
		}
		return in, nil
	case <-ctx.Done():
		// the instance may still be made: close it when it is
		go func() {
			if err := <-created; err == nil {
				cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				in.Close(cctx)
			} else {
				st.Close()
			}
		}()
		return nil, fmt.Errorf("create on %s: %w", p.host, ctx.Err())
	}
}

type instance struct {
	p    *Client
	st   *yamux.Stream
	spec platform.Spec
	h    string
	id   string

	waited   chan struct{}
	waitCode int
	waitErr  error

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool

	mu      sync.Mutex
	tunnels map[int]net.Listener
}

// pump reads the create stream: phases and main stdout, the reply, then
// more main stdout and the main process's end.
func (in *instance) pump(created chan<- error) {
	replied := false
	finish := func(code int, err error) {
		in.waitCode, in.waitErr = code, err
		close(in.waited)
	}
	for {
		typ, b, err := readFrame(in.st)
		if err != nil {
			if !replied {
				created <- in.p.lost(err)
				return
			}
			if in.closed.Load() {
				finish(-1, errors.New("instance closed"))
			} else {
				finish(-1, in.p.lost(err))
			}
			return
		}
		switch typ {
		case frPhase:
			var m phaseMsg
			if json2(b, &m) == nil && in.spec.Phase != nil {
				in.spec.Phase(m.Name, time.Now())
			}
		case frStdout:
			if in.spec.MainStdout != nil {
				in.spec.MainStdout.Write(b)
			}
		case frJSON:
			var r reply
			if err := json2(b, &r); err != nil {
				created <- fmt.Errorf("%s: %w", in.p.host, err)
				return
			}
			if r.Err != nil {
				created <- in.p.remoteErr(r.Err)
				return
			}
			in.h, in.id, replied = r.Inst, r.ID, true
			created <- nil
		case frWait:
			var w waitReply
			if err := json2(b, &w); err != nil {
				finish(-1, err)
			} else {
				finish(w.Code, in.p.remoteErr(w.Err))
			}
			io.Copy(io.Discard, in.st)
			return
		}
	}
}

// ID implements platform.Instance: the remote engine's identifier.
func (in *instance) ID() string { return in.id }

// Exec implements platform.Instance.
func (in *instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if in.closed.Load() {
		return fmt.Errorf("exec on closed instance %s on %s", in.id, in.p.host)
	}
	execID := strconv.FormatInt(in.p.seq.Add(1), 10)
	st, f, err := in.p.open(request{Op: opExec, Inst: in.h, Exec: execID, Argv: argv,
		Stdin: stdio.Stdin != nil, Stdout: stdio.Stdout != nil, Stderr: stdio.Stderr != nil})
	if err != nil {
		return err
	}
	defer st.Close()
	if stdio.Stdin != nil {
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := stdio.Stdin.Read(buf)
				if n > 0 {
					if f.frame(frStdin, buf[:n]) != nil {
						return
					}
				}
				if err != nil {
					f.frame(frEOF, nil)
					return
				}
			}
		}()
	}
	result := make(chan error, 1)
	go func() {
		for {
			typ, b, err := readFrame(st)
			if err != nil {
				result <- in.p.lost(err)
				return
			}
			switch typ {
			case frStdout:
				if stdio.Stdout != nil {
					stdio.Stdout.Write(b)
				}
			case frStderr:
				if stdio.Stderr != nil {
					stdio.Stderr.Write(b)
				}
			case frJSON:
				var r reply
				if err := json2(b, &r); err != nil {
					result <- err
				} else {
					result <- in.p.remoteErr(r.Err)
				}
				return
			}
		}
	}()
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
	}
	// cancel the remote exec and give it a moment to end
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	in.p.call(cctx, request{Op: opCancel, Exec: execID})
	select {
	case <-result:
	case <-cctx.Done():
	}
	return fmt.Errorf("exec %q on %s: %w", strings.Join(argv, " "), in.p.host, ctx.Err())
}

// CopyIn implements platform.Instance: the file is streamed to the remote
// machine, which copies it in.
func (in *instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	fh, err := os.Open(hostPath)
	if err != nil {
		return err
	}
	defer fh.Close()
	st, f, err := in.p.open(request{Op: opCopyIn, Inst: in.h, Path: guestPath, Mode: mode})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := io.Copy(stream{f, frStdin}, fh); err != nil {
		return fmt.Errorf("copy %s to %s: %w", hostPath, in.p.host, err)
	}
	if err := f.frame(frEOF, nil); err != nil {
		return in.p.lost(err)
	}
	r, err := in.p.await(ctx, st)
	if err != nil {
		return err
	}
	return in.p.remoteErr(r.Err)
}

// Address implements platform.Instance. The address is the remote
// machine's view: reach it with Client.DialContext.
func (in *instance) Address(ctx context.Context) (string, error) {
	r, err := in.p.call(ctx, request{Op: opAddress, Inst: in.h})
	if err != nil {
		return "", err
	}
	return r.Addr, in.p.remoteErr(r.Err)
}

// Published implements platform.Publisher: port is forwarded from a port
// on this host's loopback, through the connection, to where the remote
// machine reaches it (its published port, or the instance's address).
func (in *instance) Published(ctx context.Context, port int) (string, bool, error) {
	in.mu.Lock()
	l := in.tunnels[port]
	in.mu.Unlock()
	if l != nil {
		return l.Addr().String(), true, nil
	}
	r, err := in.p.call(ctx, request{Op: opPublished, Inst: in.h, Port: port})
	if err != nil {
		return "", false, err
	}
	if r.Err != nil {
		return "", false, in.p.remoteErr(r.Err)
	}
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", false, err
	}
	target := r.Addr
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				rc, err := in.p.DialContext(context.Background(), "tcp", target)
				if err != nil {
					return
				}
				defer rc.Close()
				done := make(chan struct{}, 2)
				go func() { io.Copy(rc, c); rc.Close(); done <- struct{}{} }()
				go func() { io.Copy(c, rc); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				<-done
				<-done
			}()
		}
	}()
	in.mu.Lock()
	if old := in.tunnels[port]; old != nil {
		in.mu.Unlock()
		l.Close()
		return old.Addr().String(), true, nil
	}
	in.tunnels[port] = l
	in.mu.Unlock()
	in.p.tunnels.Store(l.Addr().String(), true)
	return l.Addr().String(), true, nil
}

// Facts implements platform.Instance: the remote instance's facts and the
// host it runs on.
func (in *instance) Facts(ctx context.Context) map[string]string {
	f := map[string]string{}
	if r, err := in.p.call(ctx, request{Op: opInstFacts, Inst: in.h}); err == nil && r.Err == nil {
		maps.Copy(f, r.Facts)
	} else if err != nil {
		f["error"] = err.Error()
	}
	in.p.hostTags(f)
	return f
}

// Wait implements platform.Instance.
func (in *instance) Wait(ctx context.Context) (int, error) {
	select {
	case <-in.waited:
		return in.waitCode, in.waitErr
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// Close implements platform.Instance. It closes the remote instance even
// when ctx is already cancelled.
func (in *instance) Close(ctx context.Context) error {
	in.closeOnce.Do(func() {
		in.closed.Store(true)
		in.mu.Lock()
		for _, l := range in.tunnels {
			in.p.tunnels.Delete(l.Addr().String())
			l.Close()
		}
		in.mu.Unlock()
		timeout := 2 * time.Minute
		if d, ok := ctx.Deadline(); ok && time.Until(d) > 0 {
			timeout = time.Until(d)
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		r, err := in.p.call(cctx, request{Op: opClose, Inst: in.h, Timeout: timeout.String()})
		if err == nil {
			err = in.p.remoteErr(r.Err)
		} else if in.p.sess.IsClosed() {
			err = fmt.Errorf("%w (platformd there removes its instances itself when it notices the connection is gone)", err)
		}
		in.closeErr = err
		in.st.Close()
	})
	return in.closeErr
}

// NewTail returns a Tail that passes every line on to to (when not nil),
// prefixed with prefix.
func NewTail(to io.Writer, prefix string) *Tail { return &Tail{to: to, pfx: prefix} }

// Tail keeps the last line platformd wrote to its stderr.
type Tail struct {
	mu   sync.Mutex
	line string
	part []byte
	to   io.Writer // progress lines are passed on here, prefixed
	pfx  string
}

// Write implements io.Writer.
func (t *Tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, b...)
	for {
		i := strings.IndexByte(string(t.part), '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(t.part[:i]))
		t.part = t.part[i+1:]
		if line != "" {
			t.line = line
			if t.to != nil {
				fmt.Fprintf(t.to, "%s%s\n", t.pfx, line)
			}
		}
	}
	if len(t.part) > 64<<10 {
		t.part = t.part[len(t.part)-(64<<10):]
	}
	return len(b), nil
}

func (t *Tail) last() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := strings.TrimSpace(string(t.part)); p != "" {
		return p
	}
	return t.line
}
