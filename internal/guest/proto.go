// Package guest is the inside of an isobench VM: the init that sets up a
// guest booted from an isobench initramfs, and the exec server the host
// drives over a byte stream (a virtio-serial port). It depends only on the
// standard library so that any platform package (qemu, a later
// docker-in-vm) can use its protocol on the host side without cycles.
//
// The agent binary serves it as "isobench agent vm-init [serve|probe]":
// the kernel runs /init (a link to the agent) with "agent vm-init" after
// "--" on its command line.
//
// # Protocol
//
// Both directions carry frames:
//
//	type   uint8   one of the Frame* constants
//	stream uint32  big endian; 0 for hello, else chosen by the host
//	length uint32  big endian; at most MaxPayload
//	payload [length]byte
//
// The guest sends FrameHello (a JSON Hello) once when it is ready. The host
// opens a stream with FrameExec (JSON ExecRequest) or FramePut (JSON
// PutRequest) on a stream id it has not used before, then sends FrameData
// chunks (the command's stdin, or the file's bytes) and an empty FrameData
// for end of input. The guest answers with FrameStdout/FrameStderr chunks
// and finally one FrameExit (JSON Exit); no frame of that stream follows
// it. FrameKill from the host kills the stream's process group. Streams are
// independent: every side queues a stream's data so a slow reader or writer
// never stalls the others.
package guest

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Frame types.
const (
	FrameHello  byte = 'H' // guest→host, stream 0, JSON Hello
	FrameExec   byte = 'E' // host→guest, JSON ExecRequest
	FramePut    byte = 'P' // host→guest, JSON PutRequest
	FrameData   byte = 'I' // host→guest stdin or file bytes; empty = EOF
	FrameStdout byte = 'O' // guest→host
	FrameStderr byte = 'R' // guest→host
	FrameExit   byte = 'X' // guest→host, JSON Exit, last frame of a stream
	FrameKill   byte = 'K' // host→guest, kill the stream's process group
)

// MaxPayload bounds one frame's payload.
const MaxPayload = 1 << 20

// ChunkSize is how much data senders put in one frame.
const ChunkSize = 32 << 10

// ProtocolVersion is sent in Hello.
const ProtocolVersion = 1

// Hello is the guest's first frame.
type Hello struct {
	Version int    `json:"version"`
	Kernel  string `json:"kernel"`
	// UptimeNS is the guest's CLOCK_BOOTTIME at hello (kernel boot to
	// agent ready, as the guest counts it).
	UptimeNS int64  `json:"uptime_ns"`
	CPUs     int    `json:"cpus"`
	MemTotal int64  `json:"mem_total"`
	Scratch  string `json:"scratch"` // how the scratch dir is backed
	Warnings string `json:"warnings,omitempty"`
}

// ExecRequest starts a command in the guest.
type ExecRequest struct {
	Argv  []string `json:"argv"`
	Env   []string `json:"env,omitempty"` // added to the guest's default environment
	Dir   string   `json:"dir,omitempty"`
	Stdin bool     `json:"stdin"` // false: /dev/null, no FrameData expected
}

// PutRequest writes a file in the guest from the stream's FrameData.
type PutRequest struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode"`
}

// Exit ends a stream. Error is set when the command could not be started
// or the file not written; Code is then 127 (exec) or 1 (put).
type Exit struct {
	Code  int    `json:"code"`
	Error string `json:"error,omitempty"`
}

// Frame is one decoded frame.
type Frame struct {
	Type    byte
	Stream  uint32
	Payload []byte
}

// ReadFrame reads one frame.
func ReadFrame(r io.Reader) (Frame, error) {
	var h [9]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(h[5:])
	if n > MaxPayload {
		return Frame{}, fmt.Errorf("guest protocol: frame of %d bytes exceeds %d", n, MaxPayload)
	}
	f := Frame{Type: h[0], Stream: binary.BigEndian.Uint32(h[1:5]), Payload: make([]byte, n)}
	if _, err := io.ReadFull(r, f.Payload); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	return f, nil
}

// Writer writes whole frames to one stream safely from many goroutines.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter wraps w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write sends one frame.
func (w *Writer) Write(typ byte, stream uint32, payload []byte) error {
	if len(payload) > MaxPayload {
		return fmt.Errorf("guest protocol: payload of %d bytes exceeds %d", len(payload), MaxPayload)
	}
	buf := make([]byte, 9+len(payload))
	buf[0] = typ
	binary.BigEndian.PutUint32(buf[1:5], stream)
	binary.BigEndian.PutUint32(buf[5:9], uint32(len(payload)))
	copy(buf[9:], payload)
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.w.Write(buf)
	return err
}

// WriteJSON sends v as a frame's JSON payload.
func (w *Writer) WriteJSON(typ byte, stream uint32, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.Write(typ, stream, b)
}

// SendData sends everything r yields as FrameData chunks, then the empty
// end-of-input frame. stop, when closed, ends it early without EOF.
func (w *Writer) SendData(stream uint32, r io.Reader, stop <-chan struct{}) error {
	buf := make([]byte, ChunkSize)
	for {
		n, err := r.Read(buf)
		select {
		case <-stop:
			return nil
		default:
		}
		if n > 0 {
			if werr := w.Write(FrameData, stream, buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return w.Write(FrameData, stream, nil)
		}
		if err != nil {
			// a failing reader ends the input as if closed
			w.Write(FrameData, stream, nil)
			return err
		}
	}
}

// Queue is an unbounded FIFO of byte chunks drained into a writer by its
// own goroutine, so a demultiplexer never blocks on one stream's consumer.
type Queue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	bufs   [][]byte
	closed bool
	done   chan struct{}
	err    error
}

// NewQueue starts draining into w (nil discards) and calls after, if not
// nil, with the first write error (or nil) once the queue is closed and
// drained.
func NewQueue(w io.Writer, after func(error)) *Queue {
	q := &Queue{done: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	go q.drain(w, after)
	return q
}

// Push queues a copy of b.
func (q *Queue) Push(b []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.bufs = append(q.bufs, append([]byte(nil), b...))
	q.cond.Signal()
}

// Close ends the queue; what is queued is still written.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Signal()
	q.mu.Unlock()
}

// Abort ends the queue and drops what is still queued.
func (q *Queue) Abort() {
	q.mu.Lock()
	q.closed = true
	q.bufs = nil
	q.cond.Signal()
	q.mu.Unlock()
}

// Done is closed when the queue is drained after Close or Abort.
func (q *Queue) Done() <-chan struct{} { return q.done }

// Err is the first write error, valid after Done.
func (q *Queue) Err() error { return q.err }

func (q *Queue) drain(w io.Writer, after func(error)) {
	defer close(q.done)
	for {
		q.mu.Lock()
		for len(q.bufs) == 0 && !q.closed {
			q.cond.Wait()
		}
		if len(q.bufs) == 0 {
			q.mu.Unlock()
			break
		}
		b := q.bufs[0]
		q.bufs = q.bufs[1:]
		q.mu.Unlock()
		if w != nil && q.err == nil {
			if _, err := w.Write(b); err != nil {
				q.err = err
			}
		}
	}
	if after != nil {
		after(q.err)
	}
}
