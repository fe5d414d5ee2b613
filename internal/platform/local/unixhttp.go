package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// UnixHTTPClient is an HTTP client whose every request goes to the unix
// socket at socket, whatever the URL's host: the transport the Docker and
// LXD API clients share.
func UnixHTTPClient(socket string) *http.Client {
	d := net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns:        8,
		MaxIdleConnsPerHost: 8,
	}
	return &http.Client{Transport: tr}
}

// NewRequest makes an API request to url. body is nil, an io.Reader (sent
// as is with Content-Type rawType) or any other value (sent as JSON).
func NewRequest(ctx context.Context, method, url string, body any, rawType string) (*http.Request, error) {
	var r io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case io.Reader:
		r, ctype = b, rawType
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("encoding the request body: %w", err)
		}
		r, ctype = bytes.NewReader(js), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return req, nil
}
