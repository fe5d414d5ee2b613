package service

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// need skips t when a binary is missing on the host.
func need(t *testing.T, bins ...string) {
	t.Helper()
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			if _, serr := os.Stat("/usr/sbin/" + b); serr != nil {
				t.Skipf("%s is not installed on the host", b)
			}
		}
	}
}

// serveHere runs the in-guest half in this process (scratch in a temp
// dir), calls during once the server answers, then stops it.
func serveHere(t *testing.T, params map[string]string, during func(port int)) ([]sample.Metric, error) {
	t.Helper()
	t.Setenv(workload.ScratchEnv, t.TempDir())
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	params["port"] = strconv.Itoa(port)
	params["bind"] = "127.0.0.1"
	if _, ok := params["password"]; !ok {
		params["password"] = testPassword
	}
	p, err := Server.Resolve(params)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	ready := func() error {
		during(port)
		close(stop)
		return nil
	}
	return serve(ctx, p, ready, stop)
}

// readyMs checks the in-guest half's report: a positive ready_ms and its
// untimed setup (for the host's instance_ready_ms), nothing else.
func readyMs(t *testing.T, ms []sample.Metric) {
	t.Helper()
	if len(ms) < 2 || ms[0].Name != ReadyMetric || ms[0].Unit != "ms" || ms[0].Value <= 0 ||
		ms[1].Name != SetupMetric || ms[1].Unit != "ms" || ms[1].Value < 0 {
		t.Errorf("server metrics %v, want a positive ready_ms and a %s", ms, SetupMetric)
		return
	}
	// then the accept queue's overflows while the clients ran, where the
	// kernel counts them (every Linux here does)
	if len(ms) != 3 || ms[2].Name != OverflowMetric || ms[2].Value < 0 || ms[2].Agg != sample.Sum {
		t.Errorf("server metrics %v, want %s (a count, summed) after ready_ms and %s", ms, OverflowMetric, SetupMetric)
		return
	}
	t.Logf("ready_ms %.1f, untimed setup %.3f ms, %v listen overflows", ms[0].Value, ms[1].Value, ms[2].Value)
}

func TestWithInstanceReady(t *testing.T) {
	guest := []sample.Metric{
		{Name: ReadyMetric, Value: 30, Unit: "ms", Better: sample.Lower, Agg: sample.None},
		Setup(250 * time.Millisecond),
	}
	ms := WithInstanceReady(guest, 1500*time.Millisecond)
	got := map[string]sample.Metric{}
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			t.Error(err)
		}
		got[m.Name] = m
	}
	if len(ms) != 2 || got[ReadyMetric].Value != 30 {
		t.Errorf("%v: want ready_ms kept and the setup dropped", ms)
	}
	ir, ok := got[InstanceReadyMetric]
	if !ok || ir.Value != 1250 || ir.Unit != "ms" || ir.Better != sample.Lower || ir.Agg != sample.None {
		t.Errorf("instance_ready_ms %+v, want 1500 ms less the guest's 250 ms of setup, ms, lower, no aggregate", ir)
	}
	if len(guest) != 2 || guest[1].Name != SetupMetric {
		t.Errorf("the guest's slice was changed: %v", guest)
	}
	// a result without ready_ms (nothing started) gets no instance_ready_ms
	if ms := WithInstanceReady([]sample.Metric{Setup(time.Millisecond)}, time.Second); len(ms) != 0 {
		t.Errorf("%v, want nothing", ms)
	}
}

func TestReadyTimeout(t *testing.T) {
	if d := ReadyTimeout(map[string]string{"network": "bridge"}, time.Minute); d != time.Minute {
		t.Errorf("a container: %v, want the default", d)
	}
	if d := ReadyTimeout(map[string]string{"accel": "kvm"}, time.Minute); d != time.Minute {
		t.Errorf("a KVM guest: %v, want the default", d)
	}
	if d := ReadyTimeout(map[string]string{"accel": "tcg"}, time.Minute); d != 10*time.Minute {
		t.Errorf("a TCG guest: %v, want 10 minutes", d)
	}
	p, err := Server.Resolve(map[string]string{"ready-timeout": DurationParam(1500 * time.Millisecond)})
	if err != nil || p.Duration("ready-timeout") != 1500*time.Millisecond {
		t.Errorf("DurationParam does not round-trip: %v %v", p, err)
	}
}

// testPassword is the servers' password in the tests that start them here.
const testPassword = "0123456789abcdef0123456789abcdef"

func runTool(t *testing.T, argv []string, stdin ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(strings.Join(stdin, ""))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("%s: %v", strings.Join(argv, " "), err)
	}
	return string(out)
}

func TestServersNative(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	cases := []struct {
		server, tool string
		bins         []string
		client       workload.Def
		params       map[string]string
		check        []string
	}{
		{Nginx, "ab", []string{"nginx", "ab"}, HTTP, map[string]string{"server": Nginx, "tool": "ab", "requests": "2000", "users": "20", "size": "10k"}, []string{"requests_per_sec", "total_time", "transfer_bytes_per_sec", "latency_p50", "latency_p99", "failed_requests"}},
		{Apache, "wrk", []string{"apache2", "wrk"}, HTTP, map[string]string{"server": Apache, "tool": "wrk", "duration": "1s", "users": "20", "size": "10k"}, []string{"requests_per_sec", "total_time", "transfer_bytes_per_sec", "latency_p50", "latency_p99"}},
		{Redis, "redis-benchmark", []string{"redis-server", "redis-benchmark"}, RedisDef, map[string]string{"requests": "20000"}, []string{"get_ops_per_sec", "set_ops_per_sec", "get_latency_p50", "set_latency_p99"}},
		{MariaDB, "sysbench", []string{"mariadbd", "mariadb-install-db", "sysbench"}, OLTP, map[string]string{"table-size": "1000", "duration": "2s", "threads": "2"}, []string{"tps", "qps", "latency_p95"}},
	}
	for _, c := range cases {
		t.Run(c.server+"/"+c.tool, func(t *testing.T) {
			need(t, c.bins...)
			cp, err := c.client.Resolve(c.params)
			if err != nil {
				t.Fatal(err)
			}
			k := map[string]kind{"http": httpKind, "redis": redisKind, "oltp": oltpKind}[c.client.Name]
			sp := map[string]string{"kind": c.server}
			if v, ok := c.params["size"]; ok {
				sp["size"] = v
			}
			var clientMs []sample.Metric
			var clientErr error
			ms, err := serveHere(t, sp, func(port int) {
				var stdin string
				if k.stdin != nil {
					stdin = k.stdin(testPassword)
				}
				if k.prepareArgv != nil {
					argv, err := k.prepareArgv(cp, "127.0.0.1", port, testPassword)
					if err != nil {
						t.Fatal(err)
					}
					runTool(t, argv, stdin)
				}
				argv, err := k.clientArgv(cp, "127.0.0.1", port, testPassword)
				if err != nil {
					t.Fatal(err)
				}
				out := runTool(t, argv, stdin)
				clientMs, clientErr = k.parser(cp)(strings.NewReader(out))
				if clientErr != nil {
					t.Logf("output:\n%s", out)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			readyMs(t, ms)
			if clientErr != nil {
				t.Fatal(clientErr)
			}
			got := map[string]sample.Metric{}
			for _, m := range clientMs {
				if err := m.Validate(); err != nil {
					t.Error(err)
				}
				got[m.Name] = m
			}
			for _, name := range c.check {
				if _, ok := got[name]; !ok {
					t.Errorf("no %s in %v", name, clientMs)
				}
			}
			for _, name := range []string{"requests_per_sec", "get_ops_per_sec", "tps"} {
				if m, ok := got[name]; ok && m.Value <= 0 {
					t.Errorf("%s = %v", name, m.Value)
				}
			}
			t.Logf("%v", clientMs)
		})
	}
}

// TestServerNeverReady: redis told to listen on an address this host does
// not have exits at once; the failure carries its log, and no number.
func TestServerNeverReady(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	need(t, "redis-server")
	t.Setenv(workload.ScratchEnv, t.TempDir())
	p, err := Server.Resolve(map[string]string{"kind": Redis, "bind": "203.0.113.1", "port": "6399", "ready-timeout": "10s", "password": testPassword})
	if err != nil {
		t.Fatal(err)
	}
	_, err = serve(t.Context(), p, func() error { t.Error("reported ready"); return nil }, make(chan struct{}))
	if err == nil {
		t.Fatal("a server that cannot listen was reported ready")
	}
	if !strings.Contains(err.Error(), logMarker) || !strings.Contains(err.Error(), "203.0.113.1") {
		t.Errorf("error %q does not carry the server's log", err)
	}
	t.Log(err)
}

// TestServerDies: redis shut down while "serving" is a failure with its
// log (its own shutdown lines), not a ready_ms.
func TestServerDies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	need(t, "redis-server", "redis-cli")
	ms, err := serveHere(t, map[string]string{"kind": Redis}, func(port int) {
		// SIGTERM, as the password does not allow SHUTDOWN
		dir, _ := serviceDir(Redis)
		b, err := os.ReadFile(filepath.Join(dir, "redis.pid"))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			t.Fatalf("redis.pid: %q %v", b, err)
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// until it is gone (reaped by serve), as SHUTDOWN returned
		for end := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); os.IsNotExist(err) {
				break
			}
			if time.Now().After(end) {
				t.Fatal("redis did not exit on SIGTERM")
			}
		}
	})
	if err == nil {
		t.Fatalf("a server that exited while serving reported %v", ms)
	}
	if !strings.Contains(err.Error(), logMarker) || !strings.Contains(err.Error(), "ready to exit") {
		t.Errorf("error %q does not carry the server's log", err)
	}
	t.Log(err)
}
