package service

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// probe connects to addr and checks the server c speaks its protocol: an
// HTTP GET of the served file (status 200 and size bytes), a Redis AUTH
// with its password (+OK) and PING (+PONG), or MariaDB's greeting
// (protocol 10, not an error packet).
func probe(ctx context.Context, c config, addr string) error {
	kind, size := c.kind, c.size
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	conn.SetDeadline(dl)
	switch kind {
	case Nginx, Apache:
		return probeHTTP(conn, addr, size)
	case Redis:
		auth := fmt.Sprintf("*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(c.password), c.password)
		if _, err := io.WriteString(conn, auth+"PING\r\n"); err != nil {
			return err
		}
		rd := bufio.NewReader(conn)
		for _, want := range []string{"+OK", "+PONG"} {
			line, err := rd.ReadString('\n')
			if err != nil {
				return err
			}
			if got := strings.TrimSpace(line); got != want {
				return fmt.Errorf("%w: AUTH and PING answered %q", errBadAnswer, got)
			}
		}
		return nil
	case MariaDB:
		return probeMySQL(conn)
	}
	return fmt.Errorf("probe: unknown kind %q", kind)
}

func probeHTTP(conn net.Conn, addr string, size int64) error {
	if _, err := fmt.Fprintf(conn, "GET /index.html HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: GET /index.html: %s", errBadAnswer, resp.Status)
	}
	if n != size {
		return fmt.Errorf("%w: GET /index.html: %d bytes, want %d", errBadAnswer, n, size)
	}
	return nil
}

// probeMySQL reads the server's first packet: a handshake (protocol
// version 10) when it accepts clients, an error packet (0xff) when not.
func probeMySQL(conn net.Conn) error {
	var hdr [4]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return err
	}
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	if n < 1 || n > 1<<16 {
		return fmt.Errorf("%w: greeting of %d bytes", errBadAnswer, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return err
	}
	switch body[0] {
	case 10:
		return nil
	case 0xff:
		msg := ""
		if len(body) > 3 {
			msg = string(body[3:])
		}
		return fmt.Errorf("%w: the server refused: %s", errBadAnswer, msg)
	}
	return fmt.Errorf("%w: greeting protocol %d", errBadAnswer, body[0])
}
