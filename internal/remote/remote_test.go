package remote

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/native"
	"github.com/isobench/isobench/internal/platform/platformd"
)

// nativeLeftovers lists native instance dirs in this test's TMPDIR.
func nativeLeftovers(dir string) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) {
		out, _ := filepath.Glob(filepath.Join(dir, "isobench-native", "*"))
		sort.Strings(out)
		return out, nil
	}
}

// TestProtocolConformance runs the platform suite on native through the
// protocol, both ends in this process over an in-memory pipe (no SSH):
// every Platform and Instance method crosses the wire.
func TestProtocolConformance(t *testing.T) {
	agent := testAgent(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var p platform.Platform
	conformance.Run(t, func(t *testing.T) platform.Platform {
		hostEnd, remoteEnd := net.Pipe()
		served := make(chan error, 1)
		go func() {
			np, err := native.New(context.Background(), platform.Options{Name: "native"}, platform.Env{AgentBinary: agent, StateDir: t.TempDir()})
			served <- platformd.Serve(context.Background(), remoteEnd, np, err)
		}()
		var err error
		p, err = platformd.NewClient(t.Context(), hostEnd, "pipe://test", func() error { return <-served }, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, conformance.Opts{
		NoNetworks: []string{platform.NetBridge, platform.NetNone},
		Leftovers:  nativeLeftovers(tmp),
		Limits:     nativeLimits,
		Dial: func(ctx context.Context, n, a string) (net.Conn, error) {
			return p.(*platformd.Client).DialContext(ctx, n, a)
		},
	})
}

// nativeLimits reads the limits of the cgroup a native command runs in (it
// sees the host's whole cgroup tree, not only its own).
func nativeLimits(ctx context.Context, inst platform.Instance, cpus float64, memory int64) error {
	const script = `cg() { awk -F: -v c="$1" '$2 ~ "(^|,)"c"(,|$)" {print $3}' /proc/self/cgroup; }
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then d=/sys/fs/cgroup$(awk -F: '$1=="0"{print $3}' /proc/self/cgroup); echo v2; cat $d/cpu.max $d/memory.max
else echo v1; cat /sys/fs/cgroup/cpu$(cg cpu)/cpu.cfs_quota_us /sys/fs/cgroup/cpu$(cg cpu)/cpu.cfs_period_us /sys/fs/cgroup/memory$(cg memory)/memory.limit_in_bytes; fi`
	var out, errb strings.Builder
	if err := inst.Exec(ctx, []string{"sh", "-c", script}, platform.ExecIO{Stdout: &out, Stderr: &errb}); err != nil {
		return fmt.Errorf("reading own cgroup: %w (%s)", err, errb.String())
	}
	f := strings.Fields(out.String())
	if len(f) != 4 {
		return fmt.Errorf("own cgroup files: %q", out.String())
	}
	quota, _ := strconv.ParseFloat(f[1], 64)
	period, _ := strconv.ParseFloat(f[2], 64)
	mem, _ := strconv.ParseInt(f[3], 10, 64)
	if cpus > 0 && (period <= 0 || quota/period < cpus*0.99 || quota/period > cpus*1.01) {
		return fmt.Errorf("cpu quota %v/%v, want %v cores", quota, period, cpus)
	}
	if memory > 0 && (mem > memory || mem < memory-64<<10) {
		return fmt.Errorf("memory limit %d, want %d", mem, memory)
	}
	return nil
}

func TestParseHost(t *testing.T) {
	t.Setenv("USER", "alice")
	for in, want := range map[string]Target{
		"ssh://root@10.0.0.2":      {User: "root", Addr: "10.0.0.2:22"},
		"ssh://root@10.0.0.2:2222": {User: "root", Addr: "10.0.0.2:2222"},
		"ssh://host.example":       {User: "alice", Addr: "host.example:22"},
		"ssh://bob@[fd00::1]:22":   {User: "bob", Addr: "[fd00::1]:22"},
	} {
		got, err := ParseHost(in)
		if err != nil || got != want {
			t.Errorf("ParseHost(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"10.0.0.2", "http://x", "ssh://", "ssh://u:pw@h", "ssh://h/path"} {
		if _, err := ParseHost(bad); err == nil {
			t.Errorf("ParseHost(%q) accepted", bad)
		}
	}
}

func TestUnameTarget(t *testing.T) {
	for in, want := range map[string]string{"Linux x86_64": "linux/amd64", "Linux aarch64": "linux/arm64", "FreeBSD amd64": "freebsd/amd64", "FreeBSD arm64": "freebsd/arm64"} {
		if got := unameTarget(in); got != want {
			t.Errorf("unameTarget(%q) = %q, want %q", in, got, want)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	got, err := binaryTarget(exe)
	if err != nil || got != "linux/amd64" && got != "linux/arm64" {
		t.Errorf("binaryTarget(test binary) = %q, %v", got, err)
	}
}

var (
	agentOnce sync.Once
	agentPath string
	agentErr  error
	agentDir  string
)

func TestMain(m *testing.M) {
	var err error
	agentDir, err = os.MkdirTemp("", "isobench-remote-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(agentDir)
	os.Exit(code)
}

// testAgent builds cmd/isobench once for the package's tests (each test
// copies it to its hosts, where it is cached by digest).
func testAgent(t *testing.T) string {
	t.Helper()
	agentOnce.Do(func() {
		agentPath, agentErr = conformance.BuildAgentTo(context.Background(), agentDir, testLog{t})
	})
	if agentErr != nil {
		t.Fatalf("building the agent binary: %v", agentErr)
	}
	return agentPath
}
