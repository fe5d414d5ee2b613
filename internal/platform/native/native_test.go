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

// TestScratchBaseHostile: an isobench-native directory someone else
// planted in the temporary directory (a link to where they want root's
// workloads to write, a directory of theirs, one anyone can write to) is
// refused with one error naming it, and nothing is made in it.
func TestScratchBaseHostile(t *testing.T) {
	agent := "/bin/true"
	p, err := New(t.Context(), platform.Options{Name: "native"}, platform.Env{AgentBinary: agent, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	plants := map[string]func(base, victim string){
		"symlink": func(base, victim string) { os.Symlink(victim, base) },
		"world-writable": func(base, _ string) {
			os.Mkdir(base, 0o700)
			os.Chmod(base, os.ModeSticky|0o777)
		},
	}
	if os.Geteuid() == 0 {
		plants["uid 65534"] = func(base, _ string) {
			os.Mkdir(base, 0o711)
			if err := os.Chown(base, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			tmp, victim := t.TempDir(), t.TempDir()
			t.Setenv("TMPDIR", tmp)
			base := filepath.Join(tmp, "isobench-native")
			plant(base, victim)
			in, err := p.Create(t.Context(), platform.Spec{Name: "hostile", Network: platform.NetHost})
			if err == nil {
				in.Close(t.Context())
				t.Fatal("Create used a planted scratch base")
			}
			if !strings.Contains(err.Error(), base) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line naming %s", err, base)
			}
			for _, d := range []string{victim, base} {
				if es, _ := os.ReadDir(d); len(es) > 0 {
					t.Errorf("something was made in %s: %v", d, es)
				}
			}
		})
	}
	// a good one is used, and made private (others may only search it)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	in, err := p.Create(t.Context(), platform.Spec{Name: "good", Network: platform.NetHost})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(t.Context())
	if st, err := os.Lstat(filepath.Join(tmp, "isobench-native")); err != nil || st.Mode().Perm() != 0o711 {
		t.Errorf("scratch base %v, %v; want mode 0711", st.Mode(), err)
	}
}
