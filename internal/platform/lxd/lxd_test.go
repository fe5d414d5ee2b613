package lxd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
	"github.com/isobench/isobench/internal/platform/local/localtest"
)

func newPlatform(t *testing.T, opts, agent, state string) *Platform {
	o, err := platform.ParseOptions(opts, Factory.Extra...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(t.Context(), o, platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// skipUnavailable skips (or fails, when required) before building the agent.
func skipUnavailable(t *testing.T) {
	if err := newPlatform(t, "lxd", "-", t.TempDir()).Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "lxd", err)
	}
}

// removeNewImages deletes, when t ends, the images imported meanwhile.
func removeNewImages(t *testing.T, p *Platform) {
	before, err := p.Images(t.Context(), "minimal")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		after, _ := p.Images(context.Background(), "minimal")
		for _, a := range after {
			if !slices.Contains(before, a) {
				if err := p.RemoveImage(context.Background(), a); err != nil {
					t.Errorf("removing test image %s: %v", a, err)
				}
			}
		}
	})
}

// TestConformance runs the shared platform suite against LXD. Leftovers
// are those of the suite's own instances: other packages' tests share the
// state directory and the daemon.
func TestConformance(t *testing.T) {
	skipUnavailable(t)
	agent := conformance.BuildAgent(t)
	state := local.TestStateDir()
	rec := &localtest.Recorder{}
	conformance.Run(t, func(t *testing.T) platform.Platform {
		p := newPlatform(t, "lxd", agent, state)
		removeNewImages(t, p)
		rec.Platform = p
		return rec
	}, conformance.Opts{
		NoNetworks: []string{platform.NetHost}, // LXD containers always have their own network namespace
		Leftovers: func(ctx context.Context) ([]string, error) {
			all, err := Leftovers(ctx, state)
			return rec.Mine(all), err
		},
	})
}

// TestStartup times create → agent hello → exit, for the report.
func TestStartup(t *testing.T) {
	skipUnavailable(t)
	agent := conformance.BuildAgent(t)
	p := newPlatform(t, "lxd:network=none", agent, local.TestStateDir())
	removeNewImages(t, p)
	if err := p.Prepare(t.Context(), "minimal"); err != nil {
		t.Fatal(err)
	}
	t.Logf("facts %v", p.Facts(t.Context()))
	for i := 0; i < 3; i++ {
		var out strings.Builder
		start := time.Now()
		var phases []string
		inst, err := p.Create(t.Context(), platform.Spec{Image: "minimal", Main: []string{platform.AgentPlaceholder, "agent", "hello"}, MainStdout: &out,
			Phase: func(n string, at time.Time) {
				phases = append(phases, n+"@"+at.Sub(start).Round(time.Millisecond).String())
			}})
		if err != nil {
			t.Fatal(err)
		}
		code, err := inst.Wait(t.Context())
		total := time.Since(start)
		if err != nil || code != 0 || !strings.Contains(out.String(), "hello") {
			t.Fatalf("Wait = %d, %v; stdout %q", code, err, out.String())
		}
		if err := inst.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Logf("lxd create→hello→exit %v (phases %v), with close %v", total, phases, time.Since(start))
	}
}

func TestOptions(t *testing.T) {
	env := platform.Env{AgentBinary: "/a", StateDir: t.TempDir()}
	reg := platform.NewRegistry(Factory)
	for _, bad := range []string{"lxd:network=host", "lxd:privileged=maybe", "lxd:network=weird"} {
		f, o, err := reg.Parse(bad)
		if err == nil {
			_, err = f.New(t.Context(), o, env)
		}
		if err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	f, o, err := reg.Parse("lxd:pool=fast,privileged=true,cpus=1.5,memory=256m")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := f.New(t.Context(), o, env)
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Platform)
	req := p.instanceConfig(platform.Spec{CPUs: 1.5, Memory: 256 << 20}, "isob-x1", "isobench-minimal-abc", "/v", "isvx1")
	if req.Config["limits.cpu.allowance"] != "150ms/100ms" || req.Config["limits.memory"] != "268435456" || req.Config["security.privileged"] != "true" {
		t.Errorf("config %v", req.Config)
	}
	if req.Devices["root"]["pool"] != "fast" || req.Devices["scratch"]["source"] != "/v" || req.Devices["eth0"]["host_name"] != "isvx1" {
		t.Errorf("devices %v", req.Devices)
	}
	if !strings.Contains(req.Config["raw.lxc"], "lxc.init.cmd = /usr/local/bin/isobench agent idle") || len(req.Profiles) != 0 {
		t.Errorf("raw.lxc %q profiles %v", req.Config["raw.lxc"], req.Profiles)
	}
	// Docker's confinement: no seccomp policy of LXD's, Docker's devices
	// after a deny-all, no swap beyond the memory limit
	raw := req.Config["raw.lxc"]
	if req.Config["security.syscalls.deny_default"] != "false" ||
		!strings.Contains(raw, "devices.deny = a\n") || !strings.Contains(raw, "devices.allow = c 136:* rwm\n") ||
		strings.Index(raw, "devices.deny = a") > strings.Index(raw, "devices.allow") {
		t.Errorf("confinement config %v", req.Config)
	}
	if got := noSwapLXC(256<<20, false, true); got != "lxc.cgroup.memory.memsw.limit_in_bytes = 268435456\n" {
		t.Errorf("noSwapLXC v1 = %q", got)
	}
	if got := noSwapLXC(256<<20, false, false); got != "lxc.cgroup.memory.swappiness = 0\n" {
		t.Errorf("noSwapLXC v1 without swap accounting = %q", got)
	}
	if got := noSwapLXC(256<<20, true, true); got != "lxc.cgroup2.memory.swap.max = 0\n" {
		t.Errorf("noSwapLXC v2 = %q", got)
	}
	if got := cpuAllowance(0.255); got != "255ms/1000ms" {
		t.Errorf("cpuAllowance(0.255) = %s", got)
	}
}

// TestWebsocket checks the websocket streams against a websocket server on
// a unix socket, as LXD's: the handshake with the secret in the query, a
// binary message each way, a ping answered with a pong, the empty text
// message that ends stdin, and the server's close read as io.EOF; a refused
// handshake reports the server's answer.
func TestWebsocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "unix.socket")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	serverErr := make(chan error, 1)
	gone := make(chan struct{})
	up := websocket.Upgrader{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("secret") == "ping-then-gone" {
			// a ping and data, then the connection closed before the
			// client reads: the pong cannot be written, the data must
			// still be read
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				serverErr <- err
				return
			}
			c.WriteControl(websocket.PingMessage, []byte("x"), time.Now().Add(5*time.Second))
			c.WriteMessage(websocket.BinaryMessage, []byte("last words"))
			c.Close()
			close(gone)
			return
		}
		if r.URL.Query().Get("secret") != "s3cret" {
			http.Error(w, "bad secret", http.StatusForbidden)
			return
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			serverErr <- err
			return
		}
		defer c.Close()
		serverErr <- func() error {
			ponged := make(chan string, 1)
			c.SetPongHandler(func(p string) error { ponged <- p; return nil })
			if typ, m, err := c.ReadMessage(); err != nil || typ != websocket.BinaryMessage || string(m) != "ping me" {
				return fmt.Errorf("server read %d %q %v", typ, m, err)
			}
			if err := c.WriteControl(websocket.PingMessage, []byte("hi"), time.Now().Add(5*time.Second)); err != nil {
				return err
			}
			if err := c.WriteMessage(websocket.BinaryMessage, []byte("hello world")); err != nil {
				return err
			}
			if typ, m, err := c.ReadMessage(); err != nil || typ != websocket.TextMessage || len(m) != 0 {
				return fmt.Errorf("server read %d %q %v, want the empty text message", typ, m, err)
			}
			select {
			case p := <-ponged:
				if p != "hi" {
					return fmt.Errorf("pong %q, want hi", p)
				}
			default:
				return errors.New("the client did not answer the ping before its next message")
			}
			if err := c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(5*time.Second)); err != nil {
				return err
			}
			if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				return fmt.Errorf("after close: %v, want the client's close", err)
			}
			return nil
		}()
	})}
	go srv.Serve(l)
	defer srv.Close()

	ctx := t.Context()
	ws, err := dialWebsocket(ctx, sock, "/1.0/operations/x/websocket?secret=ping-then-gone")
	if err != nil {
		t.Fatal(err)
	}
	<-gone
	if _, data, err := ws.readMessage(); err != nil || string(data) != "last words" {
		t.Errorf("after a ping the peer closed: %q, %v; want the data it sent", data, err)
	}
	ws.Close()
	if _, err := dialWebsocket(ctx, sock, "/1.0/operations/x/websocket?secret=wrong"); err == nil || !strings.Contains(err.Error(), "bad secret") {
		t.Errorf("refused handshake: %v, want the server's answer", err)
	}
	ws, err = dialWebsocket(ctx, sock, "/1.0/operations/x/websocket?secret=s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.write(false, []byte("ping me")); err != nil {
		t.Fatal(err)
	}
	text, data, err := ws.readMessage()
	if err != nil || text || string(data) != "hello world" {
		t.Errorf("message %v %q %v", text, data, err)
	}
	if err := ws.write(true, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.readMessage(); err != io.EOF {
		t.Errorf("after the server's close: %v, want io.EOF", err)
	}
	if err := <-serverErr; err != nil {
		t.Fatal(err)
	}
}

func TestRootIDs(t *testing.T) {
	m := `[{"Isuid":true,"Isgid":false,"Hostid":1000000,"Nsid":0,"Maprange":1000000000},{"Isuid":false,"Isgid":true,"Hostid":1000001,"Nsid":0,"Maprange":1000000000}]`
	if u, g, err := rootIDs(m); err != nil || u != 1000000 || g != 1000001 {
		t.Errorf("rootIDs = %d, %d, %v", u, g, err)
	}
	if u, g, err := rootIDs(""); err != nil || u != 0 || g != 0 {
		t.Errorf("privileged: %d, %d, %v", u, g, err)
	}
	if _, _, err := rootIDs(`[{"Isuid":true,"Isgid":true,"Hostid":1000000,"Nsid":1,"Maprange":10}]`); err == nil {
		t.Error("a map without root accepted")
	}
}
