package docker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Stream numbers in the multiplexed attach/exec stream of a container
// without a TTY: every frame is an 8-byte header (stream, 3 zero bytes,
// big-endian uint32 length) and the payload.
const (
	streamStdin  = 0
	streamStdout = 1
	streamStderr = 2
	streamSystem = 3 // daemon error message (API 1.42+)
)

// maxFrame bounds one frame's payload so a corrupt header cannot make us
// allocate gigabytes.
const maxFrame = 64 << 20

// demux copies the frames of r to stdout and stderr (nil discards) until
// r ends. A clean end of stream between frames returns nil; a system
// frame (stream 3) becomes an error carrying its text.
func demux(r io.Reader, stdout, stderr io.Writer) error {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	var hdr [8]byte
	buf := make([]byte, 32<<10)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("docker stream: reading frame header: %w", err)
		}
		size := binary.BigEndian.Uint32(hdr[4:])
		if size > maxFrame {
			return fmt.Errorf("docker stream: frame of %d bytes is implausible (corrupt stream?)", size)
		}
		var w io.Writer
		sysMsg := false
		switch hdr[0] {
		case streamStdin, streamStdout:
			w = stdout
		case streamStderr:
			w = stderr
		case streamSystem:
			sysMsg = true
		default:
			return fmt.Errorf("docker stream: unknown stream %d in frame header", hdr[0])
		}
		if sysMsg {
			msg := make([]byte, size)
			if _, err := io.ReadFull(r, msg); err != nil {
				return fmt.Errorf("docker stream: reading system frame: %w", err)
			}
			return fmt.Errorf("docker daemon: %s", msg)
		}
		for size > 0 {
			n := min(int(size), len(buf))
			m, err := io.ReadFull(r, buf[:n])
			if m > 0 {
				if _, werr := w.Write(buf[:m]); werr != nil {
					return fmt.Errorf("docker stream: writing output: %w", werr)
				}
			}
			if err != nil {
				return fmt.Errorf("docker stream: frame cut short: %w", io.ErrUnexpectedEOF)
			}
			size -= uint32(m)
		}
	}
}
