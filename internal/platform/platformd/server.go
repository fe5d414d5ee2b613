package platformd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/isobench/isobench/internal/hostinfo"
	"github.com/isobench/isobench/internal/platform"
)

// Run is "isobench platformd SPEC" on the remote machine: it creates
// the platform SPEC names from reg (with env) and serves it to the host
// over in and out until the host shuts it down, the connection ends or ctx
// is cancelled. Every instance still open then is closed, so a host that
// goes away leaves nothing behind here.
func Run(ctx context.Context, reg platform.Registry, env platform.Env, spec string, in io.Reader, out io.WriteCloser) error {
	var p platform.Platform
	f, o, err := reg.Parse(spec)
	if err == nil {
		p, err = f.New(ctx, o, env)
	}
	closeIn := func() error {
		if c, ok := in.(io.Closer); ok {
			c.Close()
		}
		return out.Close()
	}
	return Serve(ctx, pipeConn{Reader: in, Writer: out, close: closeIn}, p, err)
}

// Serve serves p over conn (the remote end of the protocol). newErr, when
// set, is why p could not be made; the host is told at hello.
func Serve(ctx context.Context, conn io.ReadWriteCloser, p platform.Platform, newErr error) error {
	sess, err := yamux.Server(conn, muxConfig())
	if err != nil {
		return fmt.Errorf("platformd: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &server{p: p, newErr: newErr, ctx: ctx, insts: map[string]*srvInst{}, execs: map[string]context.CancelFunc{}, stop: cancel}
	go func() {
		<-ctx.Done()
		sess.Close()
	}()
	var wg sync.WaitGroup
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handle(st)
		}()
	}
	cancel()
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer ccancel()
	s.shutdown(cctx)
	wg.Wait()
	return nil
}

type srvInst struct {
	inst     platform.Instance
	st       *yamux.Stream // the create stream: main stdout, phases, wait
	waitDone chan struct{}
	once     sync.Once
	closed   chan struct{}
}

func (in *srvInst) markClosed() { in.once.Do(func() { close(in.closed) }) }

type server struct {
	p      platform.Platform
	newErr error
	ctx    context.Context
	stop   func()

	mu    sync.Mutex
	seq   int
	insts map[string]*srvInst
	execs map[string]context.CancelFunc
	down  bool
}

func (s *server) handle(st *yamux.Stream) {
	defer st.Close()
	var req request
	if err := readJSON(st, &req); err != nil {
		return
	}
	f := &framer{w: st}
	answer := func(r reply) { f.json(frJSON, r) }
	if s.p == nil && req.Op != opHello && req.Op != opShutdown {
		answer(reply{Err: toWireErr(fmt.Errorf("platform not created: %w", s.newErr))})
		return
	}
	ctx := s.ctx
	switch req.Op {
	case opHello:
		r := reply{Fingerprint: hostinfo.Fingerprint(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Err: toWireErr(s.newErr)}
		if s.p != nil {
			r.Name = s.p.Name()
			_, r.Preparer = s.p.(platform.Preparer)
		}
		answer(r)
	case opAvailable:
		answer(reply{Err: toWireErr(s.p.Available(ctx))})
	case opFacts:
		answer(reply{Facts: s.p.Facts(ctx)})
	case opPrepare:
		var err error
		if pr, ok := s.p.(platform.Preparer); ok {
			err = pr.Prepare(ctx, req.Profile)
		}
		answer(reply{Err: toWireErr(err)})
	case opCreate:
		s.create(st, f, req)
	case opExec:
		s.exec(st, f, req)
	case opCancel:
		s.mu.Lock()
		c := s.execs[req.Exec]
		s.mu.Unlock()
		if c != nil {
			c()
		}
		answer(reply{OK: c != nil})
	case opCopyIn:
		in, err := s.inst(req.Inst)
		if err == nil {
			err = s.copyIn(ctx, st, in, req)
		}
		answer(reply{Err: toWireErr(err)})
	case opAddress:
		in, err := s.inst(req.Inst)
		var a string
		if err == nil {
			a, err = in.inst.Address(ctx)
		}
		answer(reply{Addr: a, Err: toWireErr(err)})
	case opPublished:
		in, err := s.inst(req.Inst)
		var a string
		if err == nil {
			// where this machine reaches the port: the published one,
			// else the instance's address
			a, err = platform.Endpoint(ctx, in.inst, req.Port)
		}
		answer(reply{Addr: a, OK: err == nil, Err: toWireErr(err)})
	case opInstFacts:
		in, err := s.inst(req.Inst)
		var fa map[string]string
		if err == nil {
			fa = in.inst.Facts(ctx)
		}
		answer(reply{Facts: fa, Err: toWireErr(err)})
	case opClose:
		in, err := s.inst(req.Inst)
		if err == nil {
			cctx := ctx
			if d, perr := time.ParseDuration(req.Timeout); perr == nil && d > 0 {
				var cancel context.CancelFunc
				cctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), d)
				defer cancel()
			}
			err = s.closeInst(cctx, req.Inst, in)
		}
		answer(reply{Err: toWireErr(err)})
	case opDial:
		var d net.Dialer
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		c, err := d.DialContext(dctx, "tcp", req.Addr)
		cancel()
		answer(reply{Err: toWireErr(err)})
		if err != nil {
			return
		}
		done := make(chan struct{}, 2)
		go func() { io.Copy(c, st); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
		go func() { io.Copy(st, c); st.Close(); done <- struct{}{} }()
		<-done
		<-done
		c.Close()
	case opShutdown:
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		err := s.shutdown(cctx)
		cancel()
		answer(reply{Err: toWireErr(err)})
		s.stop()
	default:
		answer(reply{Err: toWireErr(fmt.Errorf("platformd: unknown operation %q (is the remote isobench a different version?)", req.Op))})
	}
}

func (s *server) inst(h string) (*srvInst, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.insts[h]
	if in == nil {
		return nil, fmt.Errorf("no instance %q here (closed?)", h)
	}
	return in, nil
}

func (s *server) create(st *yamux.Stream, f *framer, req request) {
	if req.Spec == nil {
		f.json(frJSON, reply{Err: toWireErr(errors.New("create without a spec"))})
		return
	}
	sp := req.Spec.spec()
	if req.Spec.MainStdout {
		sp.MainStdout = stream{f, frStdout}
	}
	if req.Spec.Phase {
		sp.Phase = func(name string, at time.Time) { f.json(frPhase, phaseMsg{Name: name}) }
	}
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		f.json(frJSON, reply{Err: toWireErr(errors.New("platformd is shutting down"))})
		return
	}
	s.seq++
	h := "i" + strconv.Itoa(s.seq)
	s.mu.Unlock()
	inst, err := s.p.Create(s.ctx, sp)
	if err != nil {
		f.json(frJSON, reply{Err: toWireErr(err)})
		return
	}
	in := &srvInst{inst: inst, st: st, waitDone: make(chan struct{}), closed: make(chan struct{})}
	s.mu.Lock()
	s.insts[h] = in
	down := s.down
	s.mu.Unlock()
	if down {
		s.closeInst(context.WithoutCancel(s.ctx), h, in)
		f.json(frJSON, reply{Err: toWireErr(errors.New("platformd is shutting down"))})
		return
	}
	f.json(frJSON, reply{Inst: h, ID: inst.ID()})
	// The main process's end goes on this stream after all of its stdout.
	go func() {
		defer close(in.waitDone)
		code, err := inst.Wait(s.ctx)
		f.json(frWait, waitReply{Code: code, Err: toWireErr(err)})
	}()
	// The stream lives as long as the instance: handle's deferred Close
	// runs only after closeInst.
	<-in.closed
	<-in.waitDone
}

// closeInst closes an instance once and forgets it.
func (s *server) closeInst(ctx context.Context, h string, in *srvInst) error {
	err := in.inst.Close(ctx)
	s.mu.Lock()
	delete(s.insts, h)
	s.mu.Unlock()
	in.markClosed()
	return err
}

func (s *server) exec(st *yamux.Stream, f *framer, req request) {
	in, err := s.inst(req.Inst)
	if err != nil {
		f.json(frJSON, reply{Err: toWireErr(err)})
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	if req.Exec != "" {
		s.mu.Lock()
		s.execs[req.Exec] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.execs, req.Exec)
			s.mu.Unlock()
		}()
	}
	var stdio platform.ExecIO
	if req.Stdout {
		stdio.Stdout = stream{f, frStdout}
	}
	if req.Stderr {
		stdio.Stderr = stream{f, frStderr}
	}
	var pr *io.PipeReader
	if req.Stdin {
		var pw *io.PipeWriter
		pr, pw = io.Pipe()
		stdio.Stdin = pr
		go func() {
			for {
				typ, p, err := readFrame(st)
				if err != nil {
					pw.CloseWithError(err)
					return
				}
				if typ == frEOF {
					pw.Close()
					return
				}
				if _, err := pw.Write(p); err != nil {
					return // the command is done with stdin
				}
			}
		}()
	}
	err = in.inst.Exec(ctx, req.Argv, stdio)
	if pr != nil {
		pr.CloseWithError(io.ErrClosedPipe)
	}
	f.json(frJSON, reply{Err: toWireErr(err)})
}

func (s *server) copyIn(ctx context.Context, st io.Reader, in *srvInst, req request) error {
	tmp, err := os.CreateTemp("", "isobench-copyin-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	for {
		typ, p, err := readFrame(st)
		if err != nil {
			return fmt.Errorf("copy-in data: %w", err)
		}
		if typ == frEOF {
			break
		}
		if _, err := tmp.Write(p); err != nil {
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return in.inst.CopyIn(ctx, tmp.Name(), req.Path, req.Mode)
}

// shutdown closes every instance and the platform, once.
func (s *server) shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		return nil
	}
	s.down = true
	insts := s.insts
	s.insts = map[string]*srvInst{}
	for _, c := range s.execs {
		c()
	}
	s.mu.Unlock()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, in := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := in.inst.Close(ctx)
			in.markClosed()
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if s.p != nil {
		errs = append(errs, s.p.Close(ctx))
	}
	return errors.Join(errs...)
}
