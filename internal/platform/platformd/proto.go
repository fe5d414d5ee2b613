// Package platformd is the protocol between isobench and "isobench
// platformd SPEC", which serves the platform SPEC names at the other end of
// a byte stream: an SSH session to another machine (package remote), or a
// process in a VM (the docker-in-vm platform, whose dockerd runs in a QEMU
// VM). The stream carries a yamux session whose streams each carry one
// call (create, exec, copy-in, address...) as frames. The host's end
// (NewClient) is a platform.Platform, so the runner drives a platform
// served from afar exactly as a local one; every address an instance
// reports is meaningful at the far end, and the host reaches it through a
// stream the far end dials (Client.DialContext, and Published ports
// forwarded to the host's loopback). When the session ends (the host went
// away, the connection was cut), the serving end (Serve, Run) closes every
// instance it made.
package platformd

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/isobench/isobench/internal/platform"
)

// Frame types. Every stream carries frames: one type byte, a big-endian
// uint32 length, the payload.
const (
	frJSON   = 'J' // a JSON message (request, reply)
	frStdin  = '0' // exec or copy-in data, host to remote
	frEOF    = 'e' // end of frStdin data
	frStdout = '1' // exec stdout or the main process's stdout
	frStderr = '2' // exec stderr
	frPhase  = 'P' // a lifecycle phase (JSON {"name"})
	frWait   = 'W' // the main process ended (JSON waitReply)
)

const maxFrame = 4 << 20

// Operations, the first frame of every stream.
const (
	opHello     = "hello"
	opAvailable = "available"
	opFacts     = "facts"
	opPrepare   = "prepare"
	opCreate    = "create"
	opExec      = "exec"
	opCancel    = "cancel"
	opCopyIn    = "copyin"
	opAddress   = "address"
	opPublished = "published"
	opInstFacts = "instfacts"
	opClose     = "close"
	opDial      = "dial"
	opShutdown  = "shutdown"
)

// request is the first frame of a stream.
type request struct {
	Op      string    `json:"op"`
	Inst    string    `json:"inst,omitempty"` // instance handle
	Exec    string    `json:"exec,omitempty"` // exec handle (exec, cancel)
	Argv    []string  `json:"argv,omitempty"`
	Stdin   bool      `json:"stdin,omitempty"`
	Stdout  bool      `json:"stdout,omitempty"`
	Stderr  bool      `json:"stderr,omitempty"`
	Spec    *wireSpec `json:"spec,omitempty"`
	Profile string    `json:"profile,omitempty"`
	Path    string    `json:"path,omitempty"`
	Mode    uint32    `json:"mode,omitempty"`
	Port    int       `json:"port,omitempty"`
	Addr    string    `json:"addr,omitempty"`
	Timeout string    `json:"timeout,omitempty"`
}

// reply answers a request.
type reply struct {
	Err         *wireError        `json:"err,omitempty"`
	Inst        string            `json:"inst,omitempty"`
	ID          string            `json:"id,omitempty"`
	Addr        string            `json:"addr,omitempty"`
	OK          bool              `json:"ok,omitempty"`
	Facts       map[string]string `json:"facts,omitempty"`
	Fingerprint map[string]string `json:"fingerprint,omitempty"`
	Name        string            `json:"name,omitempty"`
	Preparer    bool              `json:"preparer,omitempty"`
	Publisher   bool              `json:"publisher,omitempty"`
	GOOS        string            `json:"goos,omitempty"`
	GOARCH      string            `json:"goarch,omitempty"`
}

type waitReply struct {
	Code int        `json:"code"`
	Err  *wireError `json:"err,omitempty"`
}

type phaseMsg struct {
	Name string `json:"name"`
}

// wireSpec is platform.Spec without its callbacks: MainStdout and Phase
// become flags, their data flows back as frames on the create stream.
type wireSpec struct {
	Name       string            `json:"name"`
	Image      string            `json:"image,omitempty"`
	CPUs       float64           `json:"cpus,omitempty"`
	Memory     int64             `json:"memory,omitempty"`
	Network    string            `json:"network,omitempty"`
	Ports      []int             `json:"ports,omitempty"`
	Storage    string            `json:"storage,omitempty"`
	Extra      map[string]string `json:"extra,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Main       []string          `json:"main,omitempty"`
	MainStdout bool              `json:"main_stdout,omitempty"`
	Phase      bool              `json:"phase,omitempty"`
	Accounting bool              `json:"accounting,omitempty"`
	CPUGroup   bool              `json:"cpu_group,omitempty"`
}

func toWire(s platform.Spec) *wireSpec {
	return &wireSpec{Name: s.Name, Image: s.Image, CPUs: s.CPUs, Memory: s.Memory, Network: s.Network, Ports: s.Ports,
		Storage: s.Storage, Extra: s.Extra, Labels: s.Labels, Main: s.Main, MainStdout: s.MainStdout != nil, Phase: s.Phase != nil, Accounting: s.Accounting, CPUGroup: s.CPUGroup}
}

func (w *wireSpec) spec() platform.Spec {
	return platform.Spec{Name: w.Name, Image: w.Image, CPUs: w.CPUs, Memory: w.Memory, Network: w.Network, Ports: w.Ports,
		Storage: w.Storage, Extra: w.Extra, Labels: w.Labels, Main: w.Main, Accounting: w.Accounting, CPUGroup: w.CPUGroup}
}

// Error kinds that survive the wire, so errors.Is and errors.As work on
// the host as they do locally.
const (
	kindUnsupported = "unsupported"
	kindExit        = "exit"
	kindCanceled    = "canceled"
	kindDeadline    = "deadline"
)

type wireError struct {
	Msg  string   `json:"msg"`
	Kind string   `json:"kind,omitempty"`
	Code int      `json:"code,omitempty"`
	Argv []string `json:"argv,omitempty"`
}

func toWireErr(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Msg: err.Error()}
	var ee *platform.ExitError
	switch {
	case errors.As(err, &ee):
		w.Kind, w.Code, w.Argv = kindExit, ee.Code, ee.Argv
	case errors.Is(err, platform.ErrUnsupported):
		w.Kind = kindUnsupported
	case errors.Is(err, context.Canceled):
		w.Kind = kindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		w.Kind = kindDeadline
	}
	return w
}

// remoteError is an error that happened on the remote side; it unwraps to
// the sentinel its kind names.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	switch w.Kind {
	case kindExit:
		return &platform.ExitError{Code: w.Code, Argv: w.Argv}
	case kindUnsupported:
		return &remoteError{w.Msg, platform.ErrUnsupported}
	case kindCanceled:
		return &remoteError{w.Msg, context.Canceled}
	case kindDeadline:
		return &remoteError{w.Msg, context.DeadlineExceeded}
	}
	return errors.New(w.Msg)
}

// framer writes frames to a stream; it is safe for concurrent use.
type framer struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *framer) frame(typ byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	if _, err := f.w.Write(hdr[:]); err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	_, err := f.w.Write(p)
	return err
}

func (f *framer) json(typ byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return f.frame(typ, b)
}

// stream writes one frame type as an io.Writer (large writes are split).
type stream struct {
	f   *framer
	typ byte
}

func (s stream) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := min(len(p), 64<<10)
		if err := s.f.frame(s.typ, p[:c]); err != nil {
			return n, err
		}
		n += c
		p = p[c:]
	}
	return n, nil
}

// readFrame reads one frame.
func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("remote protocol: frame of %d bytes", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	return hdr[0], p, nil
}

func json2(b []byte, v any) error { return json.Unmarshal(b, v) }

// readJSON reads one frame that must be a JSON frame into v.
func readJSON(r io.Reader, v any) error {
	typ, p, err := readFrame(r)
	if err != nil {
		return err
	}
	if typ != frJSON {
		return fmt.Errorf("remote protocol: expected a JSON frame, got %q", typ)
	}
	return json.Unmarshal(p, v)
}

// muxConfig is the yamux configuration of both ends: keep-alives detect a
// host that went away without closing the connection.
func muxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.LogOutput = io.Discard
	c.EnableKeepAlive = true
	c.KeepAliveInterval = 5 * time.Second
	c.ConnectionWriteTimeout = 30 * time.Second
	c.StreamOpenTimeout = 30 * time.Second
	return c
}

// Conn joins a reader and a writer into the io.ReadWriteCloser the
// session runs over; close closes it.
func Conn(r io.Reader, w io.Writer, close func() error) io.ReadWriteCloser {
	return pipeConn{Reader: r, Writer: w, close: close}
}

// pipeConn is Conn's io.ReadWriteCloser.
type pipeConn struct {
	io.Reader
	io.Writer
	close func() error
}

func (c pipeConn) Close() error { return c.close() }
