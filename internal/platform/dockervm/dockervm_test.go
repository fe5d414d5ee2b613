package dockervm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/qemu"
	"github.com/isobench/isobench/internal/platform/qemu/vmowner"
)

var agentBin string

func TestMain(m *testing.M) { os.Exit(conformance.AgentTestMain(m, &agentBin)) }

// state is where the debian-docker tree and root disk are kept:
// $ISOBENCH_STATE_DIR or /var/lib/isobench (building the tree takes
// minutes with mmdebstrap; it is reused across runs).
func state() string {
	if d := os.Getenv("ISOBENCH_STATE_DIR"); d != "" {
		return d
	}
	return "/var/lib/isobench"
}

func accel() string {
	if a := os.Getenv("ISOBENCH_QEMU_ACCEL"); a != "" {
		return a
	}
	return qemu.AccelTCG
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func newTestPlatform(t *testing.T, opts string) platform.Platform {
	t.Helper()
	o, err := platform.ParseOptions(opts, Factory.Extra...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(t.Context(), o, platform.Env{AgentBinary: agentBin, StateDir: state(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOptions(t *testing.T) {
	for _, bad := range []string{"docker-in-vm:network=host", "docker-in-vm:network=nat", "docker-in-vm:vm-cpus=1.5", "docker-in-vm:vm-memory=1m"} {
		o, err := platform.ParseOptions(bad, Factory.Extra...)
		if err != nil {
			continue
		}
		if _, err := New(t.Context(), o, platform.Env{AgentBinary: "/bin/true", StateDir: t.TempDir()}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	o, err := platform.ParseOptions("docker-in-vm:cpus=2,memory=8g,runtime=runc,vm-cpus=3,accel=tcg", Factory.Extra...)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := New(t.Context(), o, platform.Env{AgentBinary: "/bin/true", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Platform)
	if p.vmSpec.CPUs != 3 || p.vmSpec.Memory != 8<<30 {
		t.Errorf("VM %v vCPUs %d bytes, want 3 and 8g", p.vmSpec.CPUs, p.vmSpec.Memory)
	}
	for _, want := range []string{"docker:", "runtime=runc", "cpus=2"} {
		if !strings.Contains(p.remoteSpec, want) {
			t.Errorf("guest spec %q lacks %q", p.remoteSpec, want)
		}
	}
	if _, err := p.Create(t.Context(), platform.Spec{Image: "debian"}); err == nil || !strings.Contains(err.Error(), "image debian") {
		t.Errorf("image debian: %v", err)
	}
	for _, no := range []string{"vm-cpus", "accel"} {
		if strings.Contains(p.remoteSpec, no) {
			t.Errorf("guest spec %q has the VM option %q", p.remoteSpec, no)
		}
	}
}

// leftovers lists qemu processes of the state dir, taps, run dirs and the
// VMs' cgroups.
func leftovers(ctx context.Context) ([]string, error) {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if args := strings.Split(string(b), "\x00"); filepath.Base(args[0]) == qemu.Binary && strings.Contains(string(b), "docker-vm") {
			out = append(out, "process "+filepath.Dir(p))
		}
	}
	for _, l := range hostnet.Links("isq") {
		out = append(out, "link "+l)
	}
	for _, pat := range []string{filepath.Join(state(), "qemu", "disks", "isobench-docker-vm*"), filepath.Join(vmowner.Base(), vmowner.DirPrefix+"*")} {
		m, _ := filepath.Glob(pat)
		for _, x := range m {
			out = append(out, "file "+x)
		}
	}
	// the VMs' cgroups, by name (what owner records name)
	for _, pat := range []string{"/sys/fs/cgroup/isobench/" + vmowner.DirPrefix + "*", "/sys/fs/cgroup/*/isobench/" + vmowner.DirPrefix + "*"} {
		m, _ := filepath.Glob(pat)
		for _, x := range m {
			out = append(out, "cgroup "+filepath.Base(x)+" "+x)
		}
	}
	others := qemu.OwnedByOthers()
	kept := out[:0]
	for _, x := range out {
		if !others[strings.SplitN(x, " ", 3)[1]] {
			kept = append(kept, x)
		}
	}
	sort.Strings(kept)
	return kept, nil
}

// TestConformance runs the platform suite on containers in one VM (the
// VM boots once, in prepare).
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a VM")
	}
	conformance.Run(t, func(t *testing.T) platform.Platform {
		return newTestPlatform(t, "docker-in-vm:accel="+accel()+",vm-cpus=2,vm-memory=2g")
	}, conformance.Opts{
		NoNetworks: []string{platform.NetHost},
		Leftovers:  leftovers,
		SharedHost: true,
		Timeout:    6 * time.Minute,
		// measured: 16 MiB written grew the VM's disk by 8.1-9.6 MiB after
		// the suite's earlier instances, by 17.4 MiB after an fstrim
		FootprintNoDisk: "the VM's scratch disk is a sparse image on the host, and the guest's ext4 reuses blocks freed by earlier containers and by the image import, " +
			"which the host already allocated (the guest does not discard them): a container's write grows the VM's disk only by what lands on never-used blocks",
	})
}

// TestContainerInVM checks the container runs in the VM's kernel under
// the guest's dockerd: its kernel is the guest's, its cgroup is Docker's,
// and it answers on the VM's bridge address.
func TestContainerInVM(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a VM")
	}
	p := newTestPlatform(t, "docker-in-vm:accel="+accel()+",vm-cpus=1,vm-memory=1g")
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	defer p.Close(context.WithoutCancel(ctx))
	if err := p.Available(ctx); err != nil {
		conformance.SkipUnlessRequired(t, Name, err)
	}
	if err := p.(platform.Preparer).Prepare(ctx, "minimal"); err != nil {
		t.Fatal(err)
	}
	in, err := p.Create(ctx, platform.Spec{Name: "probe", CPUs: 0.5, Memory: 128 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(ctx)
	var out bytes.Buffer
	if err := in.Exec(ctx, []string{"sh", "-c", "cat /proc/self/cgroup; uname -r; cat /sys/fs/cgroup/cpu.max; hostname"}, platform.ExecIO{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	f := in.Facts(ctx)
	t.Logf("in the container: %q; facts vm.accel=%s vm.root=%s", out.String(), f["vm.accel"], f["vm.root"])
	if !strings.Contains(out.String(), "50000 100000") {
		t.Errorf("the container's cpu.max is not 0.5 CPU: %q", out.String())
	}
	if f["vm.root"] == "" || !strings.Contains(f["vm.root"], "debian-docker") {
		t.Errorf("vm.root fact %q does not name the debian-docker root disk", f["vm.root"])
	}
	addr, err := in.Address(ctx)
	if err != nil || addr == "" {
		t.Fatalf("address %q %v", addr, err)
	}
	pf := p.Facts(ctx)
	t.Logf("VM boot to dockerd answering: %s ns; guest docker %s", pf["vm_boot_to_docker_ns"], pf["guest.server_version"])
}

// TestLedger checks how the VM's CPU is dealt out: equally among the
// containers alive while it accrued, each share never decreasing, the
// shares adding up to the VM's CPU since the first deal.
func TestLedger(t *testing.T) {
	a, b := &Instance{}, &Instance{}
	l := ledger{live: map[*Instance]bool{a: true}, cpu: map[*Instance]float64{}}
	l.deal(10) // primes: the VM's CPU before is no container's
	if l.cpu[a] != 0 {
		t.Fatalf("first deal gave %v", l.cpu[a])
	}
	l.deal(12)
	l.live[b] = true
	l.deal(16)
	l.deal(15) // a reading that went back (none should) takes nothing away
	if l.cpu[a] != 4 || l.cpu[b] != 2 {
		t.Errorf("shares a=%v b=%v, want 4 and 2", l.cpu[a], l.cpu[b])
	}
	if sum := l.cpu[a] + l.cpu[b]; sum != 6 {
		t.Errorf("shares add up to %v, want the VM's 6 s since the first deal", sum)
	}
}
