package service_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/builtin"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/service"
)

var agentBin string

func TestMain(m *testing.M) { os.Exit(conformance.AgentTestMain(m, &agentBin, "http", "oltp")) }

var seq atomic.Int64

// tracked checks that a workload closes every instance it creates.
type tracked struct {
	platform.Platform
	mu   sync.Mutex
	open map[string]bool
	n    int
}

func (p *tracked) Create(ctx context.Context, s platform.Spec) (platform.Instance, error) {
	in, err := p.Platform.Create(ctx, s)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.open[s.Name] = true
	p.n++
	p.mu.Unlock()
	return &trackedInstance{Instance: in, name: s.Name, p: p}, nil
}

type trackedInstance struct {
	platform.Instance
	name string
	p    *tracked
}

func (in *trackedInstance) Published(ctx context.Context, port int) (string, bool, error) {
	if p, ok := in.Instance.(platform.Publisher); ok {
		return p.Published(ctx, port)
	}
	return "", false, nil
}

func (in *trackedInstance) Close(ctx context.Context) error {
	err := in.Instance.Close(ctx)
	in.p.mu.Lock()
	delete(in.p.open, in.name)
	in.p.mu.Unlock()
	return err
}

func (p *tracked) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for name := range p.open {
		t.Errorf("instance %s was never closed", name)
	}
	if p.n == 0 {
		t.Error("no instance was created")
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// newPlatform makes the platform named by spec (e.g. "docker:network=nat"),
// skipping when it cannot run here, with the debian image prepared.
func newPlatform(t *testing.T, name string) *tracked {
	t.Helper()
	f, o, err := builtin.Platforms().Parse(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.New(t.Context(), o, platform.Env{AgentBinary: agentBin, StateDir: local.TestStateDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	if err := p.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, o.Name, err)
	}
	if pr, ok := p.(platform.Preparer); ok {
		start := time.Now()
		if err := pr.Prepare(t.Context(), service.Image); err != nil {
			t.Fatalf("prepare the debian image: %v", err)
		}
		t.Logf("%s: debian image ready in %v", name, time.Since(start).Round(time.Millisecond))
	}
	return &tracked{Platform: p, open: map[string]bool{}}
}

func env(p platform.Platform, base platform.Spec, n int) workload.HostEnv {
	base.Image = service.Image
	base.Labels = map[string]string{platform.Label: "1", "isobench.test": "service"}
	return workload.HostEnv{Platform: p, Base: base, Instances: n,
		NewName: func() string { return fmt.Sprintf("svctest-%d-%d", os.Getpid(), seq.Add(1)) }}
}

// runOne runs def with params and returns its results or error.
func runOne(t *testing.T, def workload.Def, params map[string]string, e workload.HostEnv) ([]workload.InstanceResult, error) {
	t.Helper()
	p, err := def.Resolve(params)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), def.Timeout(p))
	defer cancel()
	return def.Host(ctx, p, e)
}

// checkResults checks one result per client with plausible, valid metrics
// and ready_ms and instance_ready_ms on the first: instance start to
// service ready includes the server's own start, so it is not less.
func checkResults(t *testing.T, res []workload.InstanceResult, n int, want ...string) {
	t.Helper()
	if len(res) != n {
		t.Fatalf("%d results, want %d", len(res), n)
	}
	for i, r := range res {
		got := map[string]sample.Metric{}
		for _, m := range r.Metrics {
			if err := m.Validate(); err != nil {
				t.Error(err)
			}
			got[m.Name] = m
		}
		names := want
		if i == 0 {
			names = append([]string{"ready_ms", "instance_ready_ms"}, want...)
			if r, ir := got["ready_ms"], got["instance_ready_ms"]; ir.Value < r.Value {
				t.Errorf("instance_ready_ms %v < ready_ms %v", ir.Value, r.Value)
			}
		}
		if _, ok := got[service.SetupMetric]; ok {
			t.Errorf("client %d: the guest's bookkeeping %s is in the results: %v", i, service.SetupMetric, r.Metrics)
		}
		for _, name := range names {
			m, ok := got[name]
			if !ok {
				t.Errorf("client %d: no %s in %v", i, name, r.Metrics)
				continue
			}
			if m.Value <= 0 && name != "failed_requests" {
				t.Errorf("client %d: %s = %v %s", i, name, m.Value, m.Unit)
			}
		}
		if r.Tags["network"] == "" || r.Tags["server"] == "" || r.Tags["path"] == "" {
			t.Errorf("client %d: tags %v", i, r.Tags)
		}
		t.Logf("client %d %v: %v", i, r.Tags, r.Metrics)
	}
}

func needHost(t *testing.T, bins ...string) {
	t.Helper()
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s is not installed on the host (apt-get install wrk apache2-utils redis-tools sysbench)", b)
		}
	}
}

// runServices runs every service workload briefly against a server in an
// instance of p with the host as client, and a server configured to
// refuse: its failure must carry its log.
func runServices(t *testing.T, p *tracked, base platform.Spec) {
	needHost(t, "ab", "wrk", "redis-benchmark", "sysbench")
	t.Run("http-nginx-ab", func(t *testing.T) {
		res, err := runOne(t, service.HTTP, map[string]string{"server": "nginx", "tool": "ab", "requests": "2000", "users": "20", "size": "16k"}, env(p, base, 1))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, res, 1, "requests_per_sec", "total_time", "transfer_bytes_per_sec", "latency_p50", "latency_p99", "failed_requests")
	})
	t.Run("http-apache-wrk-2clients", func(t *testing.T) {
		res, err := runOne(t, service.HTTP, map[string]string{"server": "apache", "tool": "wrk", "duration": "1s", "users": "10"}, env(p, base, 2))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, res, 2, "requests_per_sec", "latency_p99")
	})
	t.Run("redis", func(t *testing.T) {
		res, err := runOne(t, service.RedisDef, map[string]string{"requests": "20000", "connections": "4"}, env(p, base, 1))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, res, 1, "get_ops_per_sec", "set_ops_per_sec", "get_latency_p99", "set_latency_p50")
	})
	t.Run("oltp", func(t *testing.T) {
		removeNewSeeds(t)
		res, err := runOne(t, service.OLTP, map[string]string{"table-size": "2000", "duration": "1s", "threads": "2", "test": "oltp_read_write"}, env(p, base, 1))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, res, 1, "tps", "qps", "latency_p95")
	})
	t.Run("refusing-server-fails", func(t *testing.T) {
		// nginx with 4 connections per worker against 200 users resets
		// connections: a failure with nginx's complaint, not a number
		res, err := runOne(t, service.HTTP, map[string]string{"server": "nginx", "tool": "wrk", "duration": "1s", "users": "200", "max-conns": "4"}, env(p, base, 1))
		if err == nil {
			t.Fatalf("a refusing server gave results: %v", res)
		}
		if !strings.Contains(err.Error(), "service log: ") || !strings.Contains(err.Error(), "worker_connections are not enough") {
			t.Errorf("the failure does not carry the server's log: %v", err)
		}
		t.Log(err)
	})
	p.check(t)
}

// noContainers fails t when containers of this test are left in docker
// or podman.
func noContainers(t *testing.T, cli string) {
	t.Helper()
	if _, err := exec.LookPath(cli); err != nil {
		return
	}
	out, err := exec.Command(cli, "ps", "-aq", "--filter", "name=svctest-"+fmt.Sprint(os.Getpid())).CombinedOutput()
	if err != nil {
		t.Fatalf("%s ps: %v: %s", cli, err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("%s containers left behind: %s", cli, s)
	}
}

func TestNative(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	for _, b := range []string{"nginx", "apache2", "redis-server", "mariadbd"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s is not installed on the host (apt-get install nginx apache2 redis-server mariadb-server)", b)
		}
	}
	p := newPlatform(t, "native")
	runServices(t, p, platform.Spec{})
	t.Run("oltp-prepared-once", func(t *testing.T) { preparedOnce(t, p, platform.Spec{}) })
	mine := fmt.Sprintf("isobench-native/svctest-%d-", os.Getpid())
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), mine+"*")); len(left) > 0 {
		t.Errorf("native scratch dirs left behind: %v", left)
	}
	if out, err := exec.Command("pgrep", "-af", mine).Output(); err == nil {
		t.Errorf("servers left running:\n%s", out)
	}
}

func TestDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("imports the debian image")
	}
	p := newPlatform(t, "docker")
	t.Run("bridge", func(t *testing.T) { runServices(t, p, platform.Spec{}) })
	t.Run("nat/http", func(t *testing.T) {
		res, err := runOne(t, service.HTTP, map[string]string{"requests": "1000", "users": "10"}, env(p, platform.Spec{Network: platform.NetNAT}, 1))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, res, 1, "requests_per_sec")
		if res[0].Tags["path"] != "published-port" {
			t.Errorf("tags %v, want path=published-port", res[0].Tags)
		}
	})
	t.Run("oltp-prepared-once", func(t *testing.T) { preparedOnce(t, p, platform.Spec{}) })
	t.Run("client=instance/http", func(t *testing.T) {
		res, err := runOne(t, service.HTTP, map[string]string{"requests": "2000", "users": "20", "client": "instance", "tool": "ab"}, env(p, platform.Spec{}, 2))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, res, 2, "requests_per_sec", "latency_p99")
	})
	t.Run("client=instance/redis", func(t *testing.T) {
		res, err := runOne(t, service.RedisDef, map[string]string{"requests": "10000", "client": "instance"}, env(p, platform.Spec{}, 2))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, res, 2, "get_ops_per_sec")
	})
	p.check(t)
	noContainers(t, "docker")
}

func TestLXC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the debian root file system")
	}
	runServices(t, newPlatform(t, "lxc"), platform.Spec{})
}

func TestRunc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the debian root file system")
	}
	runServices(t, newPlatform(t, "runc"), platform.Spec{Network: platform.NetBridge})
}

// The other platforms that run the debian image: the same services, host
// clients on each platform's default network.
func TestOtherPlatforms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds or imports the debian image")
	}
	for _, name := range []string{"podman", "crun", "nspawn", "gvisor", "lxd"} {
		t.Run(name, func(t *testing.T) {
			p := newPlatform(t, name)
			base := platform.Spec{}
			if name != "podman" && name != "lxd" {
				base.Network = platform.NetBridge // their default is none
			}
			runServices(t, p, base)
			if name == "podman" {
				noContainers(t, "podman")
			}
		})
	}
}

// preparedOnce runs oltp twice with a table size no other test uses: the
// first repetition prepares the table and keeps it, the second reuses it
// (no prepare) and still measures.
func preparedOnce(t *testing.T, p *tracked, base platform.Spec) {
	size := strconv.Itoa(1000 + int(seq.Add(1)) + os.Getpid()%1000)
	removeNewSeeds(t)
	for i, want := range []string{"now", "reused"} {
		res, err := runOne(t, service.OLTP, map[string]string{"table-size": size, "duration": "1s", "threads": "2"}, env(p, base, 1))
		if err != nil {
			t.Fatalf("repetition %d: %v", i+1, err)
		}
		checkResults(t, res, 1, "tps", "qps", "latency_p95")
		if res[0].Tags["prepared"] != want {
			t.Errorf("repetition %d: tag prepared=%q, want %q", i+1, res[0].Tags["prepared"], want)
		}
	}
}

// removeNewSeeds removes, when t ends, the prepared tables (see
// service.SeedDir) that appeared while it ran: the cache is the user's,
// tests leave nothing behind.
func removeNewSeeds(t *testing.T) {
	before, _ := filepath.Glob(filepath.Join(service.SeedDir(), "*.tar"))
	t.Cleanup(func() {
		after, _ := filepath.Glob(filepath.Join(service.SeedDir(), "*.tar"))
		for _, f := range after {
			if !slices.Contains(before, f) {
				os.Remove(f)
			}
		}
	})
}

// TestQEMU runs one http and one redis repetition against servers in QEMU
// VMs (booted from the debian root disk) with host clients over the tap on
// the isobench bridge. Under TCG (here: KVM guests hang) a VM boots in tens
// of seconds and serves at a fraction of native speed, so the set is
// minimal; the readiness bound comes from the instance's accel fact.
func TestQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("boots VMs")
	}
	needHost(t, "ab", "redis-benchmark")
	accel := os.Getenv("ISOBENCH_QEMU_ACCEL")
	if accel == "" {
		accel = "tcg" // no KVM probe boot: TCG is what this host runs
	}
	p := newPlatform(t, "qemu:accel="+accel)
	base := platform.Spec{Network: platform.NetBridge, Memory: 1 << 30}
	t.Run("http-nginx-ab", func(t *testing.T) {
		res, err := runOne(t, service.HTTP, map[string]string{"server": "nginx", "tool": "ab", "requests": "500", "users": "10"}, env(p, base, 1))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, res, 1, "requests_per_sec", "total_time", "latency_p99", "failed_requests")
		if res[0].Tags["network"] != platform.NetBridge || res[0].Tags["path"] != "direct" {
			t.Errorf("tags %v, want network=bridge path=direct", res[0].Tags)
		}
	})
	t.Run("redis", func(t *testing.T) {
		res, err := runOne(t, service.RedisDef, map[string]string{"requests": "5000", "connections": "4"}, env(p, base, 1))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, res, 1, "get_ops_per_sec", "set_ops_per_sec")
	})
	p.check(t)
}
