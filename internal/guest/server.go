package guest

import (
	"github.com/isobench/isobench/internal/guestenv"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// DefaultEnv is the environment every command in the guest starts with.
var DefaultEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root",
	guestenv.ScratchEnv + "=" + guestenv.ScratchDir,
}

// Server runs commands and writes files for the host over one frame stream.
type Server struct {
	w       *Writer
	mu      sync.Mutex
	streams map[uint32]*serverStream
}

type serverStream struct {
	in   *Queue // stdin or file bytes
	kill func()
}

// Serve answers the host on rw until it fails (the port closed) or ctx
// ends. hello is sent first.
func Serve(ctx context.Context, rw io.ReadWriter, hello Hello) error {
	s := &Server{w: NewWriter(rw), streams: map[uint32]*serverStream{}}
	if err := s.w.WriteJSON(FrameHello, 0, hello); err != nil {
		return fmt.Errorf("guest: hello: %w", err)
	}
	errc := make(chan error, 1)
	go func() {
		for {
			f, err := ReadFrame(rw)
			if err != nil {
				errc <- err
				return
			}
			s.handle(f)
		}
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("guest: control channel: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) handle(f Frame) {
	switch f.Type {
	case FrameExec:
		var req ExecRequest
		if err := json.Unmarshal(f.Payload, &req); err != nil || len(req.Argv) == 0 {
			s.w.WriteJSON(FrameExit, f.Stream, Exit{Code: 127, Error: fmt.Sprintf("bad exec request: %v", err)})
			return
		}
		s.exec(f.Stream, req)
	case FramePut:
		var req PutRequest
		if err := json.Unmarshal(f.Payload, &req); err != nil || req.Path == "" {
			s.w.WriteJSON(FrameExit, f.Stream, Exit{Code: 1, Error: fmt.Sprintf("bad put request: %v", err)})
			return
		}
		s.put(f.Stream, req)
	case FrameData:
		s.mu.Lock()
		st := s.streams[f.Stream]
		s.mu.Unlock()
		if st == nil || st.in == nil {
			return
		}
		if len(f.Payload) == 0 {
			st.in.Close()
		} else {
			st.in.Push(f.Payload)
		}
	case FrameKill:
		var kill func()
		s.mu.Lock()
		if st := s.streams[f.Stream]; st != nil {
			kill = st.kill
		}
		s.mu.Unlock()
		if kill != nil {
			kill()
		}
	}
}

func (s *Server) finish(id uint32, e Exit) {
	s.mu.Lock()
	st := s.streams[id]
	delete(s.streams, id)
	s.mu.Unlock()
	if st != nil && st.in != nil {
		st.in.Abort()
	}
	s.w.WriteJSON(FrameExit, id, e)
}

// frameWriter turns writes into frames of one type on one stream.
type frameWriter struct {
	w      *Writer
	typ    byte
	stream uint32
}

func (f frameWriter) Write(p []byte) (int, error) {
	for off := 0; off < len(p); off += ChunkSize {
		end := min(off+ChunkSize, len(p))
		if err := f.w.Write(f.typ, f.stream, p[off:end]); err != nil {
			return off, err
		}
	}
	return len(p), nil
}

func (s *Server) exec(id uint32, req ExecRequest) {
	cmd := exec.Command(req.Argv[0], req.Argv[1:]...)
	cmd.Env = append(append([]string(nil), DefaultEnv...), req.Env...)
	cmd.Dir = req.Dir
	if cmd.Dir == "" {
		cmd.Dir = "/"
	}
	cmd.Stdout = frameWriter{s.w, FrameStdout, id}
	cmd.Stderr = frameWriter{s.w, FrameStderr, id}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// a daemon started by the command may keep its output open
	cmd.WaitDelay = 2 * time.Second
	st := &serverStream{}
	var stdin io.WriteCloser
	if req.Stdin {
		p, err := cmd.StdinPipe()
		if err != nil {
			s.w.WriteJSON(FrameExit, id, Exit{Code: 127, Error: err.Error()})
			return
		}
		stdin = p
		st.in = NewQueue(ignoreEPIPE{p}, func(error) { p.Close() })
	}
	s.mu.Lock()
	s.streams[id] = st
	s.mu.Unlock()
	if err := cmd.Start(); err != nil {
		if stdin != nil {
			stdin.Close()
		}
		s.finish(id, Exit{Code: 127, Error: err.Error()})
		return
	}
	pid := cmd.Process.Pid
	s.mu.Lock()
	st.kill = func() { syscall.Kill(-pid, syscall.SIGKILL) }
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
			if code < 0 { // killed by a signal
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					code = 128 + int(ws.Signal())
				}
			}
		case err != nil && !errors.Is(err, exec.ErrWaitDelay):
			code = 1
		}
		s.finish(id, Exit{Code: code})
	}()
}

// ignoreEPIPE lets a command exit without reading all its stdin.
type ignoreEPIPE struct{ w io.Writer }

func (i ignoreEPIPE) Write(p []byte) (int, error) {
	n, err := i.w.Write(p)
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		return len(p), nil
	}
	return n, err
}

func (s *Server) put(id uint32, req PutRequest) {
	if err := os.MkdirAll(filepath.Dir(req.Path), 0o755); err != nil {
		s.w.WriteJSON(FrameExit, id, Exit{Code: 1, Error: err.Error()})
		return
	}
	// write aside and rename, so a running binary can be replaced
	tmp := filepath.Join(filepath.Dir(req.Path), "."+filepath.Base(req.Path)+".isobench-put")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		s.w.WriteJSON(FrameExit, id, Exit{Code: 1, Error: err.Error()})
		return
	}
	st := &serverStream{}
	st.in = NewQueue(f, func(werr error) {
		cerr := f.Close()
		err := errors.Join(werr, cerr)
		if err == nil {
			err = os.Chmod(tmp, os.FileMode(req.Mode&0o7777))
		}
		if err == nil {
			err = os.Rename(tmp, req.Path)
		}
		if err != nil {
			os.Remove(tmp)
			s.finish(id, Exit{Code: 1, Error: err.Error()})
			return
		}
		s.finish(id, Exit{Code: 0})
	})
	s.mu.Lock()
	s.streams[id] = st
	s.mu.Unlock()
}
