package native

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/blockdev"
	"github.com/isobench/isobench/internal/cgroup"
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
	for _, ctl := range []string{"cpu", "memory", "cpuacct", "blkio", ""} {
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

// TestReadThrottle: read-iops and read-bps put the instance in a cgroup
// that throttles reads from the disk holding its scratch directory (the
// whole disk, as the kernel's throttles want it), say so in its facts,
// and leave nothing behind. bench/truth.sh shows the rate it gives.
func TestReadThrottle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	t.Setenv("TMPDIR", t.TempDir())
	o, err := platform.ParseOptions("native:read-iops=1000,read-bps=50m", Factory.Extra...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(t.Context(), o, platform.Env{AgentBinary: "/bin/true", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := p.Create(t.Context(), platform.Spec{Name: "conf-throttle"})
	if err != nil {
		if errors.Is(err, blockdev.ErrNoDisk) {
			t.Skipf("the temporary directory is on no disk here: %v", err)
		}
		t.Fatal(err)
	}
	in := inst.(*Instance)
	d, err := blockdev.Of(in.dir)
	if err != nil {
		t.Fatal(err)
	}
	f := inst.Facts(t.Context())
	if f["read_iops_limit"] != "1000" || f["read_bps_limit"] != strconv.Itoa(50<<20) || f["io_disk"] != d.Node {
		t.Errorf("facts %v", f)
	}
	name := filepath.Base(in.dir)
	if cgroup.Version() == 1 {
		dir := filepath.Join("/sys/fs/cgroup/blkio/isobench", name)
		iops, _ := os.ReadFile(filepath.Join(dir, "blkio.throttle.read_iops_device"))
		bps, _ := os.ReadFile(filepath.Join(dir, "blkio.throttle.read_bps_device"))
		if strings.TrimSpace(string(iops)) != d.MajMin+" 1000" || strings.TrimSpace(string(bps)) != d.MajMin+" "+strconv.Itoa(50<<20) {
			t.Errorf("blkio throttles %q %q, want %s 1000 and 50 MiB/s", iops, bps, d.MajMin)
		}
	} else {
		io, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup/isobench", name, "io.max"))
		if !strings.Contains(string(io), d.MajMin+" ") || !strings.Contains(string(io), "riops=1000") {
			t.Errorf("io.max %q", io)
		}
	}
	if err := inst.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if left, _ := leftovers(t.Context()); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	for _, bad := range []string{"native:read-iops=0", "native:read-iops=1k", "native:read-bps=12"} {
		o, err := platform.ParseOptions(bad, Factory.Extra...)
		if err == nil {
			_, err = New(t.Context(), o, platform.Env{AgentBinary: "/bin/true"})
		}
		if err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestCPUGroup: Spec.CPUGroup puts an unlimited instance's processes in a
// cpu cgroup of their own, not the caller's, so that the scheduler weighs
// them as one group against a client on the host (as a container's); the
// facts say so, and without it they stay in the caller's group.
func TestCPUGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	agent := conformance.BuildAgent(t) // it enters the group (agent cgexec)
	t.Setenv("TMPDIR", t.TempDir())
	p, err := New(t.Context(), platform.Options{Name: "native"}, platform.Env{AgentBinary: agent, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctl := "cpu"
	if cgroup.Version() == 2 {
		ctl = ""
	}
	cpuGroup := func(read func() ([]byte, error)) string {
		b, err := read()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.SplitN(l, ":", 3)
			if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), ctl) {
				return f[2]
			}
		}
		t.Fatalf("no %q controller in %q", ctl, b)
		return ""
	}
	ours := cpuGroup(func() ([]byte, error) { return os.ReadFile("/proc/self/cgroup") })
	for _, grouped := range []bool{true, false} {
		inst, err := p.Create(t.Context(), platform.Spec{Name: "conf-cpugroup", CPUGroup: grouped})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { inst.Close(context.Background()) }) // on a failure; Close is once
		theirs := cpuGroup(func() ([]byte, error) {
			var out strings.Builder
			err := inst.Exec(t.Context(), []string{"cat", "/proc/self/cgroup"}, platform.ExecIO{Stdout: &out})
			return []byte(out.String()), err
		})
		want := map[bool]string{true: "own", false: "host"}[grouped]
		if got := inst.Facts(t.Context())["cpu_group"]; got != want {
			t.Errorf("CPUGroup=%v: fact cpu_group %q, want %q", grouped, got, want)
		}
		if grouped && (theirs == ours || !strings.Contains(theirs, "/isobench/")) {
			t.Errorf("CPUGroup: the instance runs in cpu group %q, want one of its own under isobench (the caller's is %q)", theirs, ours)
		}
		if !grouped && theirs != ours {
			t.Errorf("no CPUGroup: the instance runs in cpu group %q, want the caller's %q", theirs, ours)
		}
		if err := inst.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := leftovers(t.Context()); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
