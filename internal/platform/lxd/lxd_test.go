package lxd

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
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

// TestConformance runs the shared platform suite against LXD.
func TestConformance(t *testing.T) {
	skipUnavailable(t)
	agent := conformance.BuildAgent(t)
	state := local.TestStateDir()
	conformance.Run(t, func(t *testing.T) platform.Platform {
		p := newPlatform(t, "lxd", agent, state)
		removeNewImages(t, p)
		return p
	}, conformance.Opts{
		NoNetworks: []string{platform.NetHost}, // LXD containers always have their own network namespace
		Leftovers:  func(ctx context.Context) ([]string, error) { return Leftovers(ctx, state) },
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
	if got := cpuAllowance(0.255); got != "255ms/1000ms" {
		t.Errorf("cpuAllowance(0.255) = %s", got)
	}
}

// TestWebsocket checks the websocket client against a scripted server
// end: handshake, masked frames, a fragmented message, ping and close.
func TestWebsocket(t *testing.T) {
	cli, srv := net.Pipe()
	defer cli.Close()
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			buf := make([]byte, 4096)
			n, err := srv.Read(buf)
			if err != nil {
				return err
			}
			req := string(buf[:n])
			var key string
			for _, l := range strings.Split(req, "\r\n") {
				if v, ok := strings.CutPrefix(l, "Sec-WebSocket-Key: "); ok {
					key = v
				}
			}
			io.WriteString(srv, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "+wsAccept(key)+"\r\n\r\n")
			// the client's message, masked
			fin, op, payload, err := readFrame(srv)
			if err != nil || !fin || op != opBinary || string(payload) != "ping me" {
				t.Errorf("server got %v %x %q %v", fin, op, payload, err)
			}
			// a ping, then "hello world" in two fragments, then close
			srv.Write([]byte{0x80 | opPing, 2, 'h', 'i'})
			if _, op, payload, err := readFrame(srv); err != nil || op != opPong || string(payload) != "hi" {
				t.Errorf("pong %x %q %v", op, payload, err)
			}
			srv.Write(append([]byte{opBinary, 6}, "hello "...))
			srv.Write(append([]byte{0x80 | opContinuation, 5}, "world"...))
			srv.Write([]byte{0x80 | opClose, 2, 0x03, 0xe8})
			_, op, _, err = readFrame(srv)
			if err != nil || op != opClose {
				t.Errorf("close answer %x %v", op, err)
			}
			return nil
		}()
	}()
	ws, err := wsHandshake(cli, "lxd", "/x")
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.writeFrame(opBinary, []byte("ping me")); err != nil {
		t.Fatal(err)
	}
	op, data, err := ws.readMessage()
	if err != nil || op != opBinary || string(data) != "hello world" {
		t.Errorf("message %x %q %v", op, data, err)
	}
	if _, _, err := ws.readMessage(); err != io.EOF {
		t.Errorf("after close: %v, want io.EOF", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// long frames use the 16- and 64-bit lengths
	for _, n := range []int{125, 126, 70000} {
		var b bytes.Buffer
		if err := writeFrame(&b, opBinary, bytes.Repeat([]byte{7}, n)); err != nil {
			t.Fatal(err)
		}
		_, _, p, err := readFrame(&b)
		if err != nil || len(p) != n || p[n-1] != 7 {
			t.Errorf("frame of %d: got %d bytes, %v", n, len(p), err)
		}
	}
}
