package netbench

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/docker"
	"github.com/isobench/isobench/internal/platform/local"
	"github.com/isobench/isobench/internal/platform/lxc"
	"github.com/isobench/isobench/internal/platform/native"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

var agentBin string // built once by TestMain

// TestMain builds the isobench binary (the network workloads are
// registered in it) once for every platform test.
func TestMain(m *testing.M) { os.Exit(conformance.AgentTestMain(m, &agentBin, "tcp-stream")) }

func TestCheckAddr(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "172.17.0.2", "10.199.0.5", "192.168.1.2", "::1"} {
		if err := checkAddr(a); err != nil {
			t.Errorf("checkAddr(%s) = %v, want nil", a, err)
		}
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "example.com", ""} {
		if err := checkAddr(a); err == nil {
			t.Errorf("checkAddr(%q) accepted a non-private address", a)
		}
	}
}

func TestHostAddrFacing(t *testing.T) {
	if a, err := hostAddrFacing("127.0.0.1"); err != nil || a != "127.0.0.1" {
		t.Errorf("hostAddrFacing(127.0.0.1) = %q, %v", a, err)
	}
	if _, err := hostAddrFacing("198.51.100.7"); err == nil {
		t.Error("hostAddrFacing found a host interface on a TEST-NET-2 address")
	}
}

func TestPlacementCheck(t *testing.T) {
	if _, err := TCPStream.Resolve(map[string]string{"server": "host", "client": "host"}); err == nil {
		t.Error("server=host,client=host was accepted")
	}
	if _, err := TCPRR.Resolve(map[string]string{"server": "instance", "client": "instance"}); err != nil {
		t.Error(err)
	}
}

// TestLoopbackProtocol runs the server and clients in-process on loopback,
// without any platform.
func TestLoopbackProtocol(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(ln)
	served := make(chan error, 1)
	go func() { served <- s.Serve(t.Context()) }()
	addr := ln.Addr().String()
	for _, c := range []struct {
		mode     string
		download bool
	}{{ModeStream, false}, {ModeStream, true}, {ModeRR, false}, {ModeCRR, false}} {
		cfg := clientConfig{addr: addr, mode: c.mode, download: c.download, streams: 2, msg: 100, resp: 200, duration: 300 * time.Millisecond, dialLimit: 5 * time.Second}
		if c.mode == ModeStream {
			cfg.msg = 128 << 10
		}
		cl, err := prepare(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cl.run(t.Context())
		if err != nil {
			t.Fatalf("%s download=%v: %v", c.mode, c.download, err)
		}
		ms, err := metrics(c.mode, r)
		if err != nil {
			t.Fatalf("%s: %v", c.mode, err)
		}
		checkMetrics(t, c.mode, ms)
		if r.elapsed < cfg.duration {
			t.Errorf("%s: elapsed %v shorter than the duration %v", c.mode, r.elapsed, cfg.duration)
		}
	}
	if err := sendStop(t.Context(), addr); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if s.conns.Load() < 6 {
		t.Errorf("server counted %d connections, want at least 6", s.conns.Load())
	}
}

// checkMetrics asserts the metrics of one mode are there, positive, with
// their units, and internally consistent.
func checkMetrics(t *testing.T, mode string, ms []sample.Metric) {
	t.Helper()
	byName := map[string]sample.Metric{}
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			t.Errorf("%s: %v", mode, err)
		}
		if !(m.Value > 0) || math.IsInf(m.Value, 0) {
			t.Errorf("%s: %s = %v, want a positive finite value", mode, m.Name, m.Value)
		}
		byName[m.Name] = m
	}
	want := map[string]string{}
	switch mode {
	case ModeStream:
		want["throughput"] = "Gbit/s"
	case ModeRR:
		want["transactions_per_sec"] = "transactions/s"
	case ModeCRR:
		want["connections_per_sec"] = "connections/s"
	}
	if mode != ModeStream {
		want["latency_avg"], want["latency_p50"], want["latency_p99"] = "us", "us", "us"
		if byName["latency_p99"].Value < byName["latency_p50"].Value {
			t.Errorf("%s: p99 %v below p50 %v", mode, byName["latency_p99"].Value, byName["latency_p50"].Value)
		}
		rate := byName["transactions_per_sec"].Value + byName["connections_per_sec"].Value
		// one outstanding transaction per stream: rate × latency cannot
		// exceed the number of streams (plus rounding)
		if busy := rate * byName["latency_avg"].Value / 1e6; busy > 2*1.05 {
			t.Errorf("%s: %v/s with %v us average latency means %v transactions in flight, more than the 2 streams", mode, rate, byName["latency_avg"].Value, busy)
		}
	}
	for name, unit := range want {
		m, ok := byName[name]
		if !ok {
			t.Errorf("%s: no metric %s (have %v)", mode, name, ms)
			continue
		}
		if m.Unit != unit {
			t.Errorf("%s: %s unit %q, want %q", mode, name, m.Unit, unit)
		}
	}
}

var seq atomic.Int64

// tracked wraps a platform to check that a workload closes every instance
// it creates (the platforms' own tests check that a closed instance leaves
// nothing behind).
type tracked struct {
	platform.Platform
	mu     sync.Mutex
	open   map[string]bool
	closed int
}

func track(p platform.Platform) *tracked { return &tracked{Platform: p, open: map[string]bool{}} }

func (p *tracked) Create(ctx context.Context, s platform.Spec) (platform.Instance, error) {
	in, err := p.Platform.Create(ctx, s)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.open[s.Name] = true
	p.mu.Unlock()
	return &trackedInstance{Instance: in, name: s.Name, p: p}, nil
}

// check fails t if an instance is still open.
func (p *tracked) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for name := range p.open {
		t.Errorf("instance %s was never closed", name)
	}
	if p.closed == 0 {
		t.Error("no instance was created and closed")
	}
}

type trackedInstance struct {
	platform.Instance
	name string
	p    *tracked
}

// Published forwards to the wrapped instance (an embedded interface does
// not carry its optional methods).
func (in *trackedInstance) Published(ctx context.Context, port int) (string, bool, error) {
	if p, ok := in.Instance.(platform.Publisher); ok {
		return p.Published(ctx, port)
	}
	return "", false, nil
}

func (in *trackedInstance) Close(ctx context.Context) error {
	err := in.Instance.Close(ctx)
	in.p.mu.Lock()
	if in.p.open[in.name] {
		delete(in.p.open, in.name)
		in.p.closed++
	}
	in.p.mu.Unlock()
	return err
}

func hostEnv(p platform.Platform, network, label string, n int) workload.HostEnv {
	return workload.HostEnv{
		Platform:  p,
		Base:      platform.Spec{Image: "minimal", Network: network, Labels: map[string]string{platform.Label: "1", "isobench.test": label}},
		Instances: n,
		NewName:   func() string { return fmt.Sprintf("nbtest-%s-%d", label, seq.Add(1)) },
	}
}

// placements are the server/client placements every platform is tested in.
var placements = [][2]string{{OnInstance, OnHost}, {OnInstance, OnInstance}, {OnHost, OnInstance}}

// testDuration is how long each client runs in the platform tests: enough
// for thousands of transactions, short enough for the whole matrix. A
// client whose streams got nothing written within it under CI's load
// fails, rightly, with "no bytes were transferred" (it did once at 400 ms,
// for a client in a Docker container with the host's network).
const testDuration = "1s"

// runAll runs each network workload briefly with the placement given and
// checks its results.
func runAll(t *testing.T, env workload.HostEnv, server, client, wantNetwork string) {
	for _, def := range []workload.Def{TCPStream, TCPRR, TCPCRR} {
		t.Run(def.Name, func(t *testing.T) {
			p, err := def.Resolve(map[string]string{"server": server, "client": client, "duration": testDuration, "streams": "2"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), def.Timeout(p))
			defer cancel()
			res, err := def.Host(ctx, p, env)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != env.Instances {
				t.Fatalf("%d results, want one per client (%d)", len(res), env.Instances)
			}
			mode := map[string]string{"tcp-stream": ModeStream, "tcp-rr": ModeRR, "tcp-crr": ModeCRR}[def.Name]
			for i, r := range res {
				if r.Instance != i {
					t.Errorf("result %d has instance %d", i, r.Instance)
				}
				checkMetrics(t, mode, r.Metrics)
				if r.Tags["network"] != wantNetwork || r.Tags["server"] != server || r.Tags["client"] != client {
					t.Errorf("tags %v, want network=%s server=%s client=%s", r.Tags, wantNetwork, server, client)
				}
				// only the host reaching a nat server goes through the
				// published port; instances reach it on the bridge
				wantPath := "direct"
				if wantNetwork == platform.NetNAT && server == OnInstance && client == OnHost {
					wantPath = "published-port"
					if r.Tags["nat_path"] == "" {
						t.Errorf("tags %v: no nat_path", r.Tags)
					}
				}
				if r.Tags["path"] != wantPath {
					t.Errorf("tags %v, want path=%s", r.Tags, wantPath)
				}
				t.Logf("client %d: %v", i, r.Metrics)
			}
		})
	}
}

// runMatrix runs every placement on one network of p; clients in
// instances are two instances, clients on the host one.
func runMatrix(t *testing.T, p platform.Platform, network, wantNetwork, label string) {
	for _, pl := range placements {
		t.Run(fmt.Sprintf("network=%s/server=%s,client=%s", wantNetwork, pl[0], pl[1]), func(t *testing.T) {
			n := 1
			if pl[1] == OnInstance {
				n = 2
			}
			runAll(t, hostEnv(p, network, label, n), pl[0], pl[1], wantNetwork)
		})
	}
}

func TestNative(t *testing.T) {
	t.Parallel()
	p, err := native.New(t.Context(), platform.Options{}, platform.Env{AgentBinary: agentBin, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(t.Context())
	tp := track(p)
	before := nativeDirs(t)
	runMatrix(t, tp, "", platform.NetHost, "native")
	t.Run("cancel", func(t *testing.T) {
		for _, client := range []string{OnHost, OnInstance} {
			p, err := TCPRR.Resolve(map[string]string{"duration": "1h", "client": client})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
			_, err = TCPRR.Host(ctx, p, hostEnv(tp, "", "native", 1))
			cancel()
			if err == nil {
				t.Errorf("client=%s: a cancelled run reported no error", client)
			}
		}
	})
	tp.check(t)
	if after := nativeDirs(t); len(after) > len(before) {
		t.Errorf("native scratch dirs left behind: %v", after)
	}
}

func nativeDirs(t *testing.T) []string {
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), "isobench-native", "nbtest-*"))
	return m
}

func TestDocker(t *testing.T) {
	t.Parallel()
	dp, err := docker.New(t.Context(), platform.Options{}, platform.Env{AgentBinary: agentBin, StateDir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close(t.Context())
	if err := dp.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	tp := track(dp)
	label := fmt.Sprintf("%d", time.Now().UnixNano())
	for _, network := range []string{platform.NetBridge, platform.NetNAT, platform.NetHost} {
		runMatrix(t, tp, network, network, label)
	}
	tp.check(t)
	if left := containers(t, label); left != "" {
		t.Errorf("containers left behind: %s", left)
	}
}

// TestLXC runs on LXC's default network, the isobench bridge.
func TestLXC(t *testing.T) {
	t.Parallel()
	o, err := platform.ParseOptions("lxc")
	if err != nil {
		t.Fatal(err)
	}
	lp, err := lxc.New(t.Context(), o, platform.Env{AgentBinary: agentBin, StateDir: local.TestStateDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close(t.Context())
	if err := lp.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "lxc", err)
	}
	if err := lp.(platform.Preparer).Prepare(t.Context(), "minimal"); err != nil {
		t.Fatal(err)
	}
	tp := track(lp)
	for _, pl := range placements {
		t.Run(fmt.Sprintf("network=bridge/server=%s,client=%s", pl[0], pl[1]), func(t *testing.T) {
			n := 1
			if pl[1] == OnInstance {
				n = 2
			}
			runAll(t, hostEnv(tp, "", "lxc", n), pl[0], pl[1], platform.NetBridge)
		})
	}
	tp.check(t)
}

// containers lists containers carrying the test's label (docker CLI).
func containers(t *testing.T, label string) string {
	if _, err := exec.LookPath("docker"); err != nil {
		t.Log("docker CLI not installed: leftover check skipped")
		return ""
	}
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=isobench.test="+label).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestDefsRegisterAndResolve(t *testing.T) {
	reg, err := workload.NewRegistry(Defs()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range reg.Names() {
		if _, err := reg[name].Resolve(nil); err != nil {
			t.Errorf("%s: defaults do not validate: %v", name, err)
		}
	}
	for _, d := range []workload.Def{Server, Client} {
		if d.Agent == nil || !strings.HasPrefix(d.Name, "_") {
			t.Errorf("%s: the in-guest halves must be agent workloads with hidden names", d.Name)
		}
	}
}

// TestPinThread: the workload's pinning names itself in its error (the
// binding is package pin's, tested there).
func TestPinThread(t *testing.T) {
	done := make(chan error, 1)
	go func() { done <- pinThread(4095) }()
	if err := <-done; err == nil || !strings.HasPrefix(err.Error(), "netbench: pinning to cpu 4095") {
		t.Errorf("pinning to cpu 4095: %v, want a netbench error naming the cpu", err)
	}
	if err := pinThread(noCPU); err != nil {
		t.Errorf("no pinning: %v", err)
	}
}

// TestPinnedLoopback runs every mode with both ends pinned to one CPU.
func TestPinnedLoopback(t *testing.T) {
	for _, def := range []workload.Def{TCPStream, TCPRR, TCPCRR} {
		p, err := def.Resolve(map[string]string{"server": OnHost, "client": OnInstance, "duration": "300ms", "client-cpu": "0", "server-cpu": "0"})
		if err != nil {
			t.Fatal(err)
		}
		if p.Int("client-cpu") != 0 || p.Int("server-cpu") != 0 {
			t.Fatalf("%s: params %v", def.Name, p)
		}
		cp := clientParams(ModeRR, p, "127.0.0.1", 1)
		if cp["cpu"] != "0" {
			t.Errorf("client params %v carry no cpu", cp)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(ln)
	s.cpu = 0
	served := make(chan error, 1)
	go func() { served <- s.Serve(t.Context()) }()
	for _, mode := range []string{ModeStream, ModeRR, ModeCRR} {
		cfg := clientConfig{addr: ln.Addr().String(), mode: mode, streams: 2, msg: 100, resp: 100, duration: 200 * time.Millisecond, dialLimit: 5 * time.Second, cpu: 0}
		cl, err := prepare(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cl.run(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		ms, err := metrics(mode, r)
		if err != nil {
			t.Fatal(err)
		}
		checkMetrics(t, mode, ms)
	}
	if err := sendStop(t.Context(), ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	// a server pinned to a CPU it may not use says so from Serve
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s2 := newServer(ln2)
	s2.cpu = 4095
	if err := s2.Serve(t.Context()); err == nil || !strings.Contains(err.Error(), "cpu 4095") {
		t.Errorf("server pinned to cpu 4095: %v", err)
	}
	ln2.Close()
}
