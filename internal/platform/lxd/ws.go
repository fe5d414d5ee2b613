package lxd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// LXD's exec streams are websockets on its unix socket; the framing is
// github.com/gorilla/websocket's (pure Go, so the binary stays static).

// maxMessage bounds one incoming message.
const maxMessage = 16 << 20

// wsConn is one websocket of an LXD operation. gorilla/websocket allows
// one concurrent writer: data writes are serialised here, control frames
// (close, the pong its default ping handler sends) may come from anywhere.
type wsConn struct {
	c   *websocket.Conn
	wmu sync.Mutex
}

// dialWebsocket opens the websocket at path (with its query) on the unix
// socket.
func dialWebsocket(ctx context.Context, socket, path string) (*wsConn, error) {
	d := websocket.Dialer{
		NetDialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, "unix", socket)
		},
		HandshakeTimeout: 30 * time.Second,
	}
	c, resp, err := d.DialContext(ctx, "ws://lxd"+path, nil)
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			return nil, fmt.Errorf("websocket handshake: %s: %s", resp.Status, strings.TrimSpace(string(body)))
		}
		return nil, fmt.Errorf("websocket: %w", err)
	}
	c.SetReadLimit(maxMessage)
	// LXD may ping a stream it has finished writing and closed: a pong
	// that cannot be written is no reason to lose the data still to be
	// read (gorilla's default handler returns that write's error from
	// the read)
	c.SetPingHandler(func(m string) error {
		c.WriteControl(websocket.PongMessage, []byte(m), time.Now().Add(time.Second))
		return nil
	})
	return &wsConn{c: c}, nil
}

// write sends one binary (or, when text, text) message.
func (w *wsConn) write(text bool, p []byte) error {
	typ := websocket.BinaryMessage
	if text {
		typ = websocket.TextMessage
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.c.WriteMessage(typ, p); err != nil {
		return fmt.Errorf("websocket write: %w", err)
	}
	return nil
}

// readMessage returns the next data message and whether it is text;
// pings are answered on the way. The peer's close gives io.EOF.
func (w *wsConn) readMessage() (text bool, data []byte, err error) {
	typ, data, err := w.c.ReadMessage()
	if err != nil {
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return false, nil, io.EOF
		}
		return false, nil, err
	}
	return typ == websocket.TextMessage, data, nil
}

// Close sends a close frame and closes the connection.
func (w *wsConn) Close() error {
	w.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	return w.c.Close()
}
