package native

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
)

// leftovers lists this test's native instance dirs (in its private
// TMPDIR) and the cgroups of instances the suite named ("conf-..."); other
// packages' tests create native instances of their own at the same time.
func leftovers(ctx context.Context) ([]string, error) {
	var out []string
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "isobench-native", "*"))
	out = append(out, dirs...)
	for _, ctl := range []string{"cpu", "memory", "cpuacct", ""} {
		cg, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", ctl, "isobench", "conf-*"))
		out = append(out, cg...)
	}
	sort.Strings(out)
	return out, nil
}

// ownCgroupLimits reads the limits of the cgroup the command runs in: a
// native process sees the host's whole cgroup tree, not just its own.
func ownCgroupLimits(ctx context.Context, inst platform.Instance, cpus float64, memory int64) error {
	const script = `cg() { awk -F: -v c="$1" '$2 ~ "(^|,)"c"(,|$)" {print $3}' /proc/self/cgroup; }
cat /sys/fs/cgroup/cpu$(cg cpu)/cpu.cfs_quota_us /sys/fs/cgroup/cpu$(cg cpu)/cpu.cfs_period_us /sys/fs/cgroup/memory$(cg memory)/memory.limit_in_bytes`
	var out, errb strings.Builder
	if err := inst.Exec(ctx, []string{"sh", "-c", script}, platform.ExecIO{Stdout: &out, Stderr: &errb}); err != nil {
		return fmt.Errorf("reading own cgroup: %w (%s)", err, errb.String())
	}
	f := strings.Fields(out.String())
	if len(f) != 3 {
		return fmt.Errorf("own cgroup files: %q", out.String())
	}
	quota, _ := strconv.ParseFloat(f[0], 64)
	period, _ := strconv.ParseFloat(f[1], 64)
	mem, _ := strconv.ParseInt(f[2], 10, 64)
	if cpus > 0 && (period <= 0 || quota/period < cpus*0.99 || quota/period > cpus*1.01) {
		return fmt.Errorf("cpu quota %v/%v, want %v cores", quota, period, cpus)
	}
	if memory > 0 && (mem > memory || mem < memory-64<<10) {
		return fmt.Errorf("memory limit %d, want %d", mem, memory)
	}
	return nil
}

// TestConformance runs the shared platform suite against native processes.
// Native has only the host's network, so bridge and none are not offered.
func TestConformance(t *testing.T) {
	agent := conformance.BuildAgent(t)
	t.Setenv("TMPDIR", t.TempDir())
	conformance.Run(t, func(t *testing.T) platform.Platform {
		p, err := New(t.Context(), platform.Options{Name: "native"}, platform.Env{AgentBinary: agent, StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, conformance.Opts{
		NoNetworks: []string{platform.NetBridge, platform.NetNone},
		Leftovers:  leftovers,
		Limits:     ownCgroupLimits,
	})
}
