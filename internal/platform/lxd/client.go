package lxd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/isobench/isobench/internal/platform/local"
)

// SocketPath is LXD's unix socket: $LXD_SOCKET, $LXD_DIR/unix.socket, or
// Debian's /var/lib/lxd/unix.socket.
func SocketPath() string {
	if s := os.Getenv("LXD_SOCKET"); s != "" {
		return s
	}
	if d := os.Getenv("LXD_DIR"); d != "" {
		return filepath.Join(d, "unix.socket")
	}
	return "/var/lib/lxd/unix.socket"
}

// client speaks LXD's REST API on its unix socket.
type client struct {
	socket string
	hc     *http.Client
}

func newClient(socket string) *client {
	return &client{socket: socket, hc: local.UnixHTTPClient(socket)}
}

// response is LXD's answer envelope.
type response struct {
	Type       string          `json:"type"` // sync, async, error
	Status     string          `json:"status"`
	StatusCode int             `json:"status_code"`
	Operation  string          `json:"operation"`
	ErrorCode  int             `json:"error_code"`
	Error      string          `json:"error"`
	Metadata   json.RawMessage `json:"metadata"`
}

// apiError is an LXD error answer.
type apiError struct {
	Code int
	Msg  string
}

func (e *apiError) Error() string { return fmt.Sprintf("lxd: %s (%d)", e.Msg, e.Code) }

func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Code == http.StatusNotFound
}

// raw sends a request with body (JSON-encoded unless it is an io.Reader)
// and returns the decoded envelope; error answers become *apiError.
func (c *client) raw(ctx context.Context, method, path string, body any, header http.Header) (*response, error) {
	req, err := local.NewRequest(ctx, method, "http://lxd"+path, body, "application/octet-stream")
	if err != nil {
		return nil, fmt.Errorf("lxd %s %s: %w", method, path, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("lxd %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	var r response
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&r); err != nil {
		return nil, fmt.Errorf("lxd %s %s: %s: %w", method, path, resp.Status, err)
	}
	if r.Type == "error" || resp.StatusCode >= 400 {
		code := r.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		return nil, &apiError{Code: code, Msg: r.Error}
	}
	return &r, nil
}

// sync performs a request and decodes its metadata into out (if not nil).
func (c *client) sync(ctx context.Context, method, path string, body, out any) error {
	r, err := c.raw(ctx, method, path, body, nil)
	if err != nil {
		return err
	}
	if out != nil && len(r.Metadata) > 0 {
		if err := json.Unmarshal(r.Metadata, out); err != nil {
			return fmt.Errorf("lxd %s %s: %w", method, path, err)
		}
	}
	return nil
}

// operation is an LXD background operation.
type operation struct {
	ID         string          `json:"id"`
	Status     string          `json:"status"`
	StatusCode int             `json:"status_code"`
	Err        string          `json:"err"`
	Metadata   json.RawMessage `json:"metadata"`
}

// async performs a request answered with an operation, waits for it and
// returns it; a failed operation is an error.
func (c *client) async(ctx context.Context, method, path string, body any, header http.Header) (*operation, error) {
	r, err := c.raw(ctx, method, path, body, header)
	if err != nil {
		return nil, err
	}
	if r.Type != "async" || r.Operation == "" {
		return nil, fmt.Errorf("lxd %s %s: expected an operation, got a %s answer", method, path, r.Type)
	}
	return c.wait(ctx, r.Operation)
}

// wait waits for the operation at opPath ("/1.0/operations/<id>").
func (c *client) wait(ctx context.Context, opPath string) (*operation, error) {
	var op operation
	if err := c.sync(ctx, http.MethodGet, opPath+"/wait?timeout=-1", nil, &op); err != nil {
		return nil, err
	}
	if op.StatusCode >= 400 || op.Status == "Failure" {
		return &op, fmt.Errorf("lxd operation %s: %s", op.ID, op.Err)
	}
	return &op, nil
}

// websocket opens an operation's websocket with secret.
func (c *client) websocket(ctx context.Context, opPath, secret string) (*wsConn, error) {
	ws, err := dialWebsocket(ctx, c.socket, opPath+"/websocket?secret="+url.QueryEscape(secret))
	if err != nil {
		return nil, fmt.Errorf("lxd %s: %w", opPath, err)
	}
	return ws, nil
}

// escape makes a name safe in a URL path.
func escape(s string) string { return url.PathEscape(s) }

// opPath returns "/1.0/operations/<id>" from an operation URL.
func opPath(op string) string {
	if i := strings.Index(op, "?"); i >= 0 {
		op = op[:i]
	}
	return op
}
