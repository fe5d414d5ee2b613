package lxd

import (
	"bufio"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// A minimal RFC 6455 websocket client, enough for LXD's exec streams: the
// opening handshake over an existing connection, masked client frames,
// unmasked server frames, fragmentation, ping/pong and close. No
// extensions, no subprotocols.

// Websocket opcodes.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// wsGUID is the handshake's fixed GUID (RFC 6455 section 1.3).
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// maxFrame bounds one incoming frame's payload.
const maxFrame = 16 << 20

// wsConn is one websocket connection.
type wsConn struct {
	c  net.Conn
	br *bufio.Reader

	wmu    sync.Mutex
	closed bool // a close frame was sent
}

// wsHandshake upgrades c with a GET of path; host is the Host header.
func wsHandshake(c net.Conn, host, path string) (*wsConn, error) {
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("websocket: %w", err)
	}
	k := base64.StdEncoding.EncodeToString(key)
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + k + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		return nil, fmt.Errorf("websocket handshake: %w", err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, fmt.Errorf("websocket handshake: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("websocket handshake: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if want := wsAccept(k); resp.Header.Get("Sec-WebSocket-Accept") != want {
		return nil, fmt.Errorf("websocket handshake: bad Sec-WebSocket-Accept %q", resp.Header.Get("Sec-WebSocket-Accept"))
	}
	return &wsConn{c: c, br: br}, nil
}

// wsAccept is the server's expected answer to key.
func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}

// writeFrame sends one complete, masked frame.
func (w *wsConn) writeFrame(op byte, payload []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.closed {
		return errors.New("websocket: closed")
	}
	if op == opClose {
		w.closed = true
	}
	return writeFrame(w.c, op, payload)
}

// writeFrame encodes a masked final frame to wr.
func writeFrame(wr io.Writer, op byte, payload []byte) error {
	hdr := make([]byte, 0, 14)
	hdr = append(hdr, 0x80|op)
	n := len(payload)
	switch {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xffff:
		hdr = append(hdr, 0x80|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	if _, err := rand.Read(mask[:]); err != nil {
		return fmt.Errorf("websocket: %w", err)
	}
	hdr = append(hdr, mask[:]...)
	buf := make([]byte, len(hdr)+n)
	copy(buf, hdr)
	for i, b := range payload {
		buf[len(hdr)+i] = b ^ mask[i%4]
	}
	if _, err := wr.Write(buf); err != nil {
		return fmt.Errorf("websocket write: %w", err)
	}
	return nil
}

// readFrame reads one frame: its FIN bit, opcode and (unmasked) payload.
func readFrame(r io.Reader) (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return false, 0, nil, err
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	masked := h[1]&0x80 != 0
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return false, 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return false, 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > maxFrame {
		return false, 0, nil, fmt.Errorf("websocket: frame of %d bytes is too large", n)
	}
	var mask [4]byte
	if masked {
		if _, err := io.ReadFull(r, mask[:]); err != nil {
			return false, 0, nil, err
		}
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return false, 0, nil, err
	}
	if masked {
		for i := range payload {
			payload[i] ^= mask[i%4]
		}
	}
	return fin, op, payload, nil
}

// readMessage returns the next data message (text or binary), answering
// pings on the way. A close frame gives io.EOF.
func (w *wsConn) readMessage() (op byte, data []byte, err error) {
	var msgOp byte
	var msg []byte
	for {
		fin, op, payload, err := readFrame(w.br)
		if err != nil {
			return 0, nil, err
		}
		switch op {
		case opPing:
			w.writeFrame(opPong, payload)
			continue
		case opPong:
			continue
		case opClose:
			w.writeFrame(opClose, closePayload(1000))
			return 0, nil, io.EOF
		case opText, opBinary:
			msgOp, msg = op, payload
		case opContinuation:
			msg = append(msg, payload...)
		default:
			return 0, nil, fmt.Errorf("websocket: unknown opcode %#x", op)
		}
		if fin {
			return msgOp, msg, nil
		}
	}
}

// closePayload is a close frame's body with a status code.
func closePayload(code uint16) []byte { return binary.BigEndian.AppendUint16(nil, code) }

// Close sends a close frame (once) and closes the connection.
func (w *wsConn) Close() error {
	w.writeFrame(opClose, closePayload(1000))
	return w.c.Close()
}
