package lifecycle

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/docker"
	"github.com/isobench/isobench/internal/platform/local"
	"github.com/isobench/isobench/internal/platform/local/localtest"
	"github.com/isobench/isobench/internal/platform/lxc"
	"github.com/isobench/isobench/internal/platform/native"
	"github.com/isobench/isobench/internal/sample"
	fake "github.com/isobench/isobench/internal/testkit/fakeplatform"
	"github.com/isobench/isobench/internal/workload"
)

var agentBin string // built once by TestMain

// TestMain builds the isobench binary (the lifecycle workloads are
// registered in it) once for every platform test.
func TestMain(m *testing.M) { os.Exit(conformance.AgentTestMain(m, &agentBin, "footprint")) }

var seq atomic.Int64

func hostEnv(p platform.Platform, base platform.Spec, label string, n int) workload.HostEnv {
	base.Image = "minimal"
	base.Labels = map[string]string{platform.Label: "1", "isobench.test": label}
	return workload.HostEnv{
		Platform:  p,
		Base:      base,
		Instances: n,
		NewName:   func() string { return fmt.Sprintf("lctest-%s-%d", label, seq.Add(1)) },
	}
}

func runDef(t *testing.T, def workload.Def, raw map[string]string, env workload.HostEnv) ([]workload.InstanceResult, error) {
	t.Helper()
	p, err := def.Resolve(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), def.Timeout(p))
	defer cancel()
	return def.Host(ctx, p, env)
}

func metricsOf(t *testing.T, r workload.InstanceResult) map[string]sample.Metric {
	t.Helper()
	out := map[string]sample.Metric{}
	for _, m := range r.Metrics {
		if err := m.Validate(); err != nil {
			t.Error(err)
		}
		// The host's MemAvailable is shared with every other process (and
		// other tests running in parallel): its growth may be negative.
		if m.Value < 0 && m.Name != "host_memory_growth_bytes" {
			t.Errorf("%s = %v is negative", m.Name, m.Value)
		}
		out[m.Name] = m
	}
	return out
}

// footprintPair runs footprint idle and with load=cpu, checks the metrics
// and that the spinning instance used more CPU than the idle one.
func footprintPair(t *testing.T, env workload.HostEnv, wantEngine bool) {
	var cpu [2]float64
	for i, load := range []string{"idle", "cpu"} {
		res, err := runDef(t, Footprint, map[string]string{"load": load, "window": "1s"}, env)
		if err != nil {
			t.Fatalf("load=%s: %v", load, err)
		}
		if len(res) != env.Instances {
			t.Fatalf("load=%s: %d results, want %d", load, len(res), env.Instances)
		}
		for _, r := range res {
			ms := metricsOf(t, r)
			t.Logf("load=%s instance %d: %v tags %v", load, r.Instance, r.Metrics, r.Tags)
			for _, name := range []string{"memory_bytes", "disk_bytes", "cpu_seconds", "startup_ms", "startup_host_cpu_seconds", "startup_instance_cpu_seconds"} {
				if _, ok := ms[name]; !ok {
					t.Errorf("load=%s: no %s", load, name)
				}
			}
			if ms["startup_ms"].Value <= 0 || ms["startup_ms"].Unit != "ms" {
				t.Errorf("startup_ms = %v %s", ms["startup_ms"].Value, ms["startup_ms"].Unit)
			}
			if ms["memory_bytes"].Unit != "bytes" || ms["cpu_seconds"].Unit != "s" {
				t.Errorf("units: memory %q cpu %q", ms["memory_bytes"].Unit, ms["cpu_seconds"].Unit)
			}
			_, hasEngine := ms["engine_rss_bytes"]
			if hasEngine != wantEngine {
				t.Errorf("engine metrics present = %v, want %v", hasEngine, wantEngine)
			}
			if wantEngine && (ms["engine_rss_bytes"].Value <= 0 || ms["engine_pss_bytes"].Value <= 0) {
				t.Errorf("engine rss %v pss %v, want positive", ms["engine_rss_bytes"].Value, ms["engine_pss_bytes"].Value)
			}
			if r.Tags["load"] != load {
				t.Errorf("tag load = %q", r.Tags["load"])
			}
			cpu[i] += ms["cpu_seconds"].Value
		}
	}
	if cpu[1] <= cpu[0] {
		t.Errorf("instances spinning used %v CPU seconds, no more than idle ones (%v)", cpu[1], cpu[0])
	}
}

// footprintService runs footprint idle without and with a MariaDB server
// in the instance: the server answers (ready_ms) and its memory shows.
func footprintService(t *testing.T, env workload.HostEnv) {
	var mem [2]float64
	for i, svc := range []string{"none", "mariadb"} {
		res, err := runDef(t, Footprint, map[string]string{"window": "1s", "service": svc}, env)
		if err != nil {
			t.Fatalf("service=%s: %v", svc, err)
		}
		ms := metricsOf(t, res[0])
		t.Logf("service=%s: %v", svc, res[0].Metrics)
		if res[0].Tags["service"] != svc {
			t.Errorf("tag service = %q, want %s", res[0].Tags["service"], svc)
		}
		_, ready := ms["ready_ms"]
		if ready != (svc != "none") {
			t.Errorf("service=%s: ready_ms present = %v", svc, ready)
		}
		mem[i] = ms["memory_bytes"].Value
	}
	if mem[1] <= mem[0] {
		t.Errorf("an instance running MariaDB used %v bytes, no more than an idle one (%v)", mem[1], mem[0])
	}
}

func newNative(t *testing.T) platform.Platform {
	p, err := native.New(t.Context(), platform.Options{}, platform.Env{AgentBinary: agentBin, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

func TestFootprintNative(t *testing.T) {
	p := newNative(t)
	// with a limit, native instances have a cgroup to account them in
	footprintPair(t, hostEnv(p, platform.Spec{Memory: 64 << 30}, "native", 1), false)
	// without one, footprint asks for an accounting cgroup (study 002's
	// native baseline has no limits)
	footprintPair(t, hostEnv(p, platform.Spec{}, "native", 1), false)
	// an instance created with neither has nothing to account in, and
	// its Footprint says so
	in, err := p.Create(t.Context(), platform.Spec{Name: "lctest-native-plain"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = in.(platform.Footprinter).Footprint(t.Context())
	in.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cgroup") {
		t.Errorf("native without a cgroup: err = %v, want one naming the cgroup", err)
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "isobench-native", "lctest-native-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestFootprintUnsupported(t *testing.T) {
	reg, err := workload.NewRegistry(Defs()...)
	if err != nil {
		t.Fatal(err)
	}
	fp := &fake.Platform{Workloads: reg}
	_, err = runDef(t, Footprint, map[string]string{"window": "100ms"}, hostEnv(fp, platform.Spec{}, "fake", 2))
	if err == nil || err.Error() != "footprint is not supported on fake" {
		t.Errorf("err = %v, want \"footprint is not supported on fake\"", err)
	}
	if open := fp.Open(); len(open) != 0 {
		t.Errorf("instances left open: %v", open)
	}
}

func checkDensity(t *testing.T, res []workload.InstanceResult, want int, wantStop string) {
	t.Helper()
	if len(res) != want {
		t.Fatalf("%d results, want %d", len(res), want)
	}
	for k, r := range res {
		ms := metricsOf(t, r)
		t.Logf("count %d: %v tags %v", k+1, r.Metrics, r.Tags)
		if r.Instance != k || r.Tags["count"] != strconv.Itoa(k+1) {
			t.Errorf("result %d: instance %d, count tag %q", k, r.Instance, r.Tags["count"])
		}
		if r.Tags["stop"] != wantStop {
			t.Errorf("stop = %q, want %q", r.Tags["stop"], wantStop)
		}
		if ms["instances"].Value != float64(k+1) {
			t.Errorf("instances = %v, want %d", ms["instances"].Value, k+1)
		}
		if ms["startup_ms"].Value <= 0 || ms["startup_ms"].Value < ms["create_ms"].Value {
			t.Errorf("startup_ms %v, create_ms %v: want startup positive and at least create", ms["startup_ms"].Value, ms["create_ms"].Value)
		}
		if _, ok := ms["host_memory_growth_bytes"]; !ok {
			t.Error("no host_memory_growth_bytes")
		}
		if ms["isobench_rss_bytes"].Value <= 0 || ms["isobench_cpu_seconds"].Value < 0 {
			t.Errorf("isobench's own rss %v, cpu %v: want positive rss and cpu", ms["isobench_rss_bytes"].Value, ms["isobench_cpu_seconds"].Value)
		}
	}
}

func TestDensityNative(t *testing.T) {
	p := newNative(t)
	env := hostEnv(p, platform.Spec{Memory: 64 << 30}, "native", 1)
	res, err := runDef(t, Density, map[string]string{"max-instances": "3"}, env)
	if err != nil {
		t.Fatal(err)
	}
	checkDensity(t, res, 3, StopMax)
	if _, ok := metricsOf(t, res[2])["instances_memory_bytes"]; !ok {
		t.Error("native with a cgroup: no instances_memory_bytes")
	}
	// a floor above what the host has: nothing can be measured
	if _, err := runDef(t, Density, map[string]string{"memory-limit": "1000t"}, env); err == nil || !strings.Contains(err.Error(), "memory-limit") {
		t.Errorf("unreachable floor: err = %v", err)
	}
	// a ceiling no startup can meet stops after the first instance
	res, err = runDef(t, Density, map[string]string{"max-instances": "5", "startup-ceiling": "1ms"}, hostEnv(p, platform.Spec{}, "native", 1))
	if err != nil {
		t.Fatal(err)
	}
	checkDensity(t, res, 1, StopCeiling)
	if res[0].Tags["footprint_error"] == "" {
		t.Error("native without a cgroup: no footprint_error tag")
	}
}

func newDocker(t *testing.T) platform.Platform {
	dp, err := docker.New(t.Context(), platform.Options{}, platform.Env{AgentBinary: agentBin, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close(context.Background()) })
	if err := dp.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	return dp
}

func TestDocker(t *testing.T) {
	dp := newDocker(t)
	label := strconv.FormatInt(time.Now().UnixNano(), 10)
	t.Run("footprint", func(t *testing.T) {
		footprintPair(t, hostEnv(dp, platform.Spec{}, label, 2), true)
	})
	t.Run("footprint-service", func(t *testing.T) {
		footprintService(t, hostEnv(dp, platform.Spec{}, label, 1))
	})
	t.Run("density", func(t *testing.T) {
		res, err := runDef(t, Density, map[string]string{"max-instances": "3", "startup-ceiling": "1h"}, hostEnv(dp, platform.Spec{}, label, 1))
		if err != nil {
			t.Fatal(err)
		}
		checkDensity(t, res, 3, StopMax)
		ms := metricsOf(t, res[2])
		if ms["instances_memory_bytes"].Value <= 0 || ms["engine_rss_bytes"].Value <= 0 {
			t.Errorf("instances memory %v, engine rss %v: want positive", ms["instances_memory_bytes"].Value, ms["engine_rss_bytes"].Value)
		}
	})
	if _, err := exec.LookPath("docker"); err == nil {
		out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=isobench.test="+label).CombinedOutput()
		if err != nil {
			t.Fatalf("docker ps: %v %s", err, out)
		}
		if s := strings.TrimSpace(string(out)); s != "" {
			t.Errorf("containers left behind: %s", s)
		}
	}
}

func TestProc(t *testing.T) {
	c, err := procCPU(os.Getpid())
	if err != nil || c < 0 {
		t.Errorf("procCPU(self) = %v, %v", c, err)
	}
	rss, pss, err := procMem(os.Getpid())
	if err != nil || rss <= 0 || pss <= 0 || pss > rss {
		t.Errorf("procMem(self) = rss %d pss %d, %v", rss, pss, err)
	}
	b, err := hostBusy()
	if err != nil || b <= 0 {
		t.Errorf("hostBusy = %v, %v", b, err)
	}
	a, err := memAvailable()
	if err != nil || a <= 0 {
		t.Errorf("memAvailable = %v, %v", a, err)
	}
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
}

func TestLXC(t *testing.T) {
	o, err := platform.ParseOptions("lxc")
	if err != nil {
		t.Fatal(err)
	}
	state := local.TestStateDir()
	lp, err := lxc.New(t.Context(), o, platform.Env{AgentBinary: agentBin, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lp.Close(context.Background()) })
	if err := lp.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "lxc", err)
	}
	if err := lp.(platform.Preparer).Prepare(t.Context(), "minimal"); err != nil {
		t.Fatal(err)
	}
	rec := &localtest.Recorder{Platform: lp}
	t.Run("footprint", func(t *testing.T) {
		// lxc-execute, the container's monitor, is its engine
		footprintPair(t, hostEnv(rec, platform.Spec{}, "lxc", 2), true)
	})
	t.Run("density", func(t *testing.T) {
		res, err := runDef(t, Density, map[string]string{"max-instances": "3", "startup-ceiling": "1h"}, hostEnv(rec, platform.Spec{}, "lxc", 1))
		if err != nil {
			t.Fatal(err)
		}
		checkDensity(t, res, 3, StopMax)
		if ms := metricsOf(t, res[2]); ms["instances_memory_bytes"].Value <= 0 {
			t.Errorf("instances memory %v: want positive", ms["instances_memory_bytes"].Value)
		}
	})
	left, err := localtest.Leftovers(t.Context(), lxc.Factory, state)
	if err != nil {
		t.Fatal(err)
	}
	rec.CheckLeftovers(t, left)
}
