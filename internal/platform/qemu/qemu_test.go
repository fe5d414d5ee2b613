package qemu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/guest"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
)

// testAgent returns an isobench binary that can be a VM's init.
func testAgent(t *testing.T) string {
	t.Helper()
	bin := conformance.BuildAgent(t)
	out, _ := exec.Command(bin, "agent", "vm-init", "probe").Output()
	if strings.TrimSpace(string(out)) != guest.ProbeOutput {
		t.Fatalf("%s agent vm-init probe printed %q, want %q", bin, out, guest.ProbeOutput)
	}
	return bin
}

func newTestPlatform(t *testing.T, agent, state, opts string) *Platform {
	t.Helper()
	o, err := platform.ParseOptions(opts, Factory.Extra...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlatform(o, platform.Env{AgentBinary: agent, StateDir: state, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// accelOption is the test's accelerator: $ISOBENCH_QEMU_ACCEL or tcg, so
// the conformance run does not pay for the KVM probe (TestAccelAuto does).
func accelOption() string {
	if a := os.Getenv("ISOBENCH_QEMU_ACCEL"); a != "" {
		return a
	}
	return AccelTCG
}

// TestConformance runs the shared platform suite against real VMs.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("boots VMs")
	}
	probe := &Platform{}
	if err := availableTools(probe); err != nil {
		conformance.SkipUnlessRequired(t, "qemu", err)
	}
	agent := testAgent(t)
	state := t.TempDir()
	conformance.Run(t, func(t *testing.T) platform.Platform {
		return newTestPlatform(t, agent, state, "qemu:accel="+accelOption())
	}, conformance.Opts{
		NoNetworks: []string{platform.NetHost},
		Limits:     vmLimits,
		Leftovers:  func(ctx context.Context) ([]string, error) { return leftovers(state), nil },
		Timeout:    5 * time.Minute,
	})
}

// availableTools is Available without the agent check (for skipping
// before anything is built).
func availableTools(p *Platform) error {
	if _, err := exec.LookPath(Binary); err != nil {
		return fmt.Errorf("%s not found: %s", Binary, InstallHint)
	}
	_, err := p.findKernel()
	return err
}

// vmLimits checks that the guest sees cpus vCPUs and memory of RAM (less
// what the kernel keeps for itself).
func vmLimits(ctx context.Context, inst platform.Instance, cpus float64, memory int64) error {
	var out bytes.Buffer
	if err := inst.Exec(ctx, []string{"sh", "-c", "nproc; grep MemTotal /proc/meminfo"}, platform.ExecIO{Stdout: &out}); err != nil {
		return err
	}
	f := strings.Fields(out.String())
	if len(f) < 3 {
		return fmt.Errorf("unexpected output %q", out.String())
	}
	n, _ := strconv.Atoi(f[0])
	if cpus > 0 && n != int(cpus) {
		return fmt.Errorf("guest has %d CPUs, want %v", n, cpus)
	}
	kb, _ := strconv.ParseInt(f[2], 10, 64)
	if memory > 0 && (kb<<10 > memory || kb<<10 < memory*3/4) {
		return fmt.Errorf("guest MemTotal is %d KiB, want a little under %d KiB", kb, memory>>10)
	}
	return nil
}

// leftovers lists what this platform could leave: what its Sweep lists
// (run directories with what their owner records name, orphaned overlays
// and VM cgroups), and besides what no record names: this test's qemu and
// virtiofsd processes, taps, disks and volumes in state, and leases. What
// another live process's VMs use (named in their run dir's owner record)
// is not counted: the host, and the shared state dir of the Debian tests,
// may have other isobench VMs starting and stopping meanwhile.
func leftovers(state string) (out []string) {
	others := OwnedByOthers()
	seen := map[string]bool{}
	add := func(kind, name string) {
		if !seen[name] && !others[name] {
			seen[name] = true
			out = append(out, kind+" "+name)
		}
	}
	found, _ := Sweep(context.Background(), platform.SweepEnv{StateDirs: []string{state}})
	for _, l := range found {
		if !others[l.Owner] {
			add(l.Kind, l.Name)
		}
	}
	for _, p := range hostos.Procs() {
		// qemu runs as this test's child: another process's is not ours
		if len(p.Argv) > 0 && (filepath.Base(p.Argv[0]) == Binary || strings.Contains(p.Argv[0], "virtiofsd")) &&
			strings.Contains(strings.Join(p.Argv, " "), state) && p.PPID == os.Getpid() {
			add("process", fmt.Sprintf("%d %s", p.PID, strings.Join(p.Argv, " ")))
		}
	}
	for _, l := range hostnet.Links("isq") {
		add("tap", l)
	}
	for _, pat := range []string{
		filepath.Join(state, "qemu", "disks", "*"),
		filepath.Join(state, "qemu", "volumes", "*"),
		filepath.Join(state, "leases", hostnet.DefaultBridge, "*"),
	} {
		m, _ := filepath.Glob(pat)
		for _, x := range m {
			add("file", x)
		}
	}
	sort.Strings(out)
	return out
}

// TestBootPhases boots one VM and logs how long kernel boot to agent
// hello took (the numbers vary with the accelerator and the host).
func TestBootPhases(t *testing.T) {
	if testing.Short() {
		t.Skip("boots VMs")
	}
	if err := availableTools(&Platform{}); err != nil {
		conformance.SkipUnlessRequired(t, "qemu", err)
	}
	agent := testAgent(t)
	p := newTestPlatform(t, agent, t.TempDir(), "qemu:accel="+accelOption())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	// the first Create builds the initramfs: boot twice, time the second
	for i := range 2 {
		phases := map[string]time.Time{}
		start := time.Now()
		inst, err := p.Create(ctx, platform.Spec{Name: "boot", CPUs: 1, Memory: 256 << 20, Network: platform.NetNone,
			Phase: func(n string, at time.Time) { phases[n] = at }})
		if err != nil {
			t.Fatal(err)
		}
		f := inst.Facts(ctx)
		uptime, _ := strconv.ParseInt(f["guest_uptime_ns"], 10, 64)
		if uptime <= 0 {
			t.Errorf("guest uptime at hello %q", f["guest_uptime_ns"])
		}
		if !phases["started"].After(phases["created"]) {
			t.Errorf("phases %v", phases)
		}
		t.Logf("boot %d (accel=%s): Create %v, created→started %v, guest uptime at hello %v",
			i, f["accel"], time.Since(start).Round(time.Millisecond), phases["started"].Sub(phases["created"]).Round(time.Millisecond), time.Duration(uptime).Round(time.Millisecond))
		var out bytes.Buffer
		if err := inst.Exec(ctx, []string{"sh", "-c", "grep ' /isobench-scratch ' /proc/mounts; cat /proc/cmdline"}, platform.ExecIO{Stdout: &out}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "/dev/vda /isobench-scratch ext4") {
			t.Errorf("scratch disk not mounted: %q", out.String())
		}
		// no nameserver is reachable from a VM: lookups must fail at once
		out.Reset()
		if err := inst.Exec(ctx, []string{"cat", "/etc/resolv.conf"}, platform.ExecIO{Stdout: &out}); err != nil || out.String() != guestenv.NoResolver {
			t.Errorf("guest resolv.conf %q (%v), want guestenv.NoResolver", out.String(), err)
		}
		if err := inst.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAccelAuto runs the KVM probe and checks its verdict is cached.
func TestAccelAuto(t *testing.T) {
	if testing.Short() {
		t.Skip("boots VMs")
	}
	if err := availableTools(&Platform{}); err != nil {
		conformance.SkipUnlessRequired(t, "qemu", err)
	}
	agent := testAgent(t)
	state := t.TempDir()
	before := leftovers(state)
	p := newTestPlatform(t, agent, state, "qemu")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	f := p.Facts(ctx)
	t.Logf("auto accelerator: %s (%s) after %v", f["accel"], f["accel_reason"], time.Since(start).Round(time.Millisecond))
	if f["accel"] != AccelKVM && f["accel"] != AccelTCG {
		t.Fatalf("facts %v", f)
	}
	if _, kerr := openKVM(); kerr == nil {
		b, err := os.ReadFile(filepath.Join(state, "qemu", "accel.json"))
		if err != nil || !strings.Contains(string(b), `"accel": "`+f["accel"]+`"`) {
			t.Errorf("verdict not cached: %q %v", b, err)
		}
		p2 := newTestPlatform(t, agent, state, "qemu")
		if f2 := p2.Facts(ctx); f2["accel"] != f["accel"] || !strings.Contains(f2["accel_reason"], "cached") {
			t.Errorf("second platform's facts %v", f2)
		}
	}
	if after := leftovers(state); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("the probe changed host state: before %q, after %q", before, after)
	}
}

func TestSpecChecks(t *testing.T) {
	for _, c := range []struct {
		s       platform.Spec
		unsupp  bool
		invalid bool
	}{
		{platform.Spec{CPUs: 1.5}, true, false},
		{platform.Spec{Network: platform.NetHost}, true, false},
		{platform.Spec{Network: platform.NetNAT}, true, false},
		{platform.Spec{Network: "weird"}, false, true},
		{platform.Spec{Storage: "weird"}, false, true},
		{platform.Spec{Memory: 1 << 20}, false, true},
	} {
		err := checkSpec(c.s)
		if err == nil {
			t.Errorf("%+v accepted", c.s)
			continue
		}
		if errors.Is(err, platform.ErrUnsupported) != c.unsupp {
			t.Errorf("%+v: %v (unsupported=%v)", c.s, err, c.unsupp)
		}
	}
	if err := checkSpec(platform.Spec{CPUs: 2, Memory: 512 << 20, Network: platform.NetNone, Storage: platform.StorageVolume}); err != nil {
		t.Error(err)
	}
	if _, err := NewPlatform(platform.Options{Extra: map[string]string{"accel": "hvf"}}, platform.Env{AgentBinary: "x"}); err == nil {
		t.Error("accel=hvf accepted")
	}
	reg := platform.NewRegistry(Factory)
	if _, o, err := reg.Parse("qemu:cpus=2,accel=tcg,disk=1g"); err != nil || o.Extra["disk"] != "1g" {
		t.Errorf("parse: %+v %v", o, err)
	}
	env := platform.Env{AgentBinary: "x", StateDir: t.TempDir()}
	for _, bad := range []string{"0", "-1", "half", "0.001", "NaN", "2000"} {
		if _, err := NewPlatform(platform.Options{Extra: map[string]string{"quota": bad}}, env); err == nil || !strings.Contains(err.Error(), "quota=") {
			t.Errorf("quota=%s: %v", bad, err)
		}
	}
	if p, err := NewPlatform(platform.Options{Extra: map[string]string{"quota": "0.5"}}, env); err != nil || p.quota != 0.5 {
		t.Errorf("quota=0.5: %v", err)
	}
}

// TestCPIO checks the archive with the host's cpio when there is one, and
// its framing always.
func TestCPIO(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a/b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/b/f"), []byte("hello"), 0o640)
	os.Symlink("/a/b/f", filepath.Join(dir, "l"))
	var buf bytes.Buffer
	if err := writeCPIO(&buf, dir); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d not 4-aligned", buf.Len())
	}
	s := buf.String()
	for _, want := range []string{"a/b/f\x00", "hello", "l\x00", "/a/b/f", "dev/console\x00", "TRAILER!!!\x00"} {
		if !strings.Contains(s, want) {
			t.Errorf("archive lacks %q", want)
		}
	}
	if !strings.HasPrefix(s, "070701") {
		t.Errorf("not newc: %q", s[:6])
	}
	if _, err := exec.LookPath("cpio"); err == nil {
		cmd := exec.Command("cpio", "-it", "--quiet")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cpio -it: %v", err)
		}
		names := strings.Fields(string(out))
		sort.Strings(names)
		if strings.Join(names, " ") != "a a/b a/b/f dev dev/console l" {
			t.Errorf("cpio lists %q", names)
		}
	}
}

func TestModuleOrder(t *testing.T) {
	dir := t.TempDir()
	dep := "kernel/a/virtio_ring.ko:\nkernel/a/virtio.ko: kernel/a/virtio_ring.ko\n" +
		"kernel/a/virtio_pci.ko: kernel/a/virtio_pci_modern_dev.ko kernel/a/virtio.ko kernel/a/virtio_ring.ko\n" +
		"kernel/a/virtio_pci_modern_dev.ko:\nkernel/n/virtio_net.ko: kernel/n/net_failover.ko kernel/n/failover.ko kernel/a/virtio.ko kernel/a/virtio_ring.ko\n" +
		"kernel/n/net_failover.ko: kernel/n/failover.ko\nkernel/n/failover.ko:\n"
	os.WriteFile(filepath.Join(dir, "modules.dep"), []byte(dep), 0o644)
	got, err := moduleOrder(dir, []string{"virtio_pci", "virtio_net", "virtio_blk"})
	if err != nil {
		t.Fatal(err)
	}
	want := "kernel/a/virtio_ring.ko kernel/a/virtio.ko kernel/a/virtio_pci_modern_dev.ko kernel/a/virtio_pci.ko kernel/n/failover.ko kernel/n/net_failover.ko kernel/n/virtio_net.ko"
	if strings.Join(got, " ") != want {
		t.Errorf("order\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// TestProtocol runs the guest server against the host conn over a pipe.
func TestProtocol(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	a, b := net.Pipe()
	defer b.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go guest.Serve(ctx, b, guest.Hello{Version: guest.ProtocolVersion, Kernel: "test"})
	k := newConn(a)
	select {
	case h := <-k.hello:
		if h.Kernel != "test" {
			t.Errorf("hello %+v", h)
		}
	case <-time.After(time.Minute):
		t.Fatal("no hello")
	}
	var out, errb bytes.Buffer
	big := bytes.Repeat([]byte("x"), 300000)
	ex, err := k.exec(ctx, guest.ExecRequest{Argv: []string{"sh", "-c", "wc -c; echo e >&2; exit 4"}, Stdin: true}, platform.ExecIO{Stdin: bytes.NewReader(big), Stdout: &out, Stderr: &errb})
	if err != nil || ex.Code != 4 || strings.TrimSpace(out.String()) != "300000" || errb.String() != "e\n" {
		t.Errorf("exec: %+v %v out %q err %q", ex, err, out.String(), errb.String())
	}
	ex, err = k.exec(ctx, guest.ExecRequest{Argv: []string{"/no/such"}}, platform.ExecIO{})
	if err != nil || ex.Error == "" {
		t.Errorf("missing binary: %+v %v", ex, err)
	}
	dst := filepath.Join(t.TempDir(), "sub", "f")
	ex, err = k.put(ctx, guest.PutRequest{Path: dst, Mode: 0o751}, bytes.NewReader(big))
	if err != nil || ex.Code != 0 {
		t.Fatalf("put: %+v %v", ex, err)
	}
	if st, err := os.Stat(dst); err != nil || st.Size() != int64(len(big)) || st.Mode().Perm() != 0o751 {
		t.Errorf("put file: %v %v", st, err)
	}
	// cancel a long command; a stdin that never ends does not hold Exec
	cctx, ccancel := context.WithTimeout(ctx, 200*time.Millisecond)
	pr, pw := io.Pipe()
	defer pw.Close()
	_, err = k.exec(cctx, guest.ExecRequest{Argv: []string{"sleep", "1000"}, Stdin: true}, platform.ExecIO{Stdin: pr})
	ccancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled exec: %v", err)
	}
	// the channel still works
	out.Reset()
	if ex, err := k.exec(ctx, guest.ExecRequest{Argv: []string{"echo", "ok"}}, platform.ExecIO{Stdout: &out}); err != nil || ex.Code != 0 || out.String() != "ok\n" {
		t.Errorf("after cancel: %+v %v %q", ex, err, out.String())
	}
	k.close()
}

// TestFootprintVolume: with storage=volume the VM's qemu and virtiofsd
// both run in its cgroup, a write to the virtiofs volume shows as disk,
// and Close removes the cgroup.
func TestFootprintVolume(t *testing.T) {
	if testing.Short() {
		t.Skip("boots VMs")
	}
	if err := availableTools(&Platform{}); err != nil {
		conformance.SkipUnlessRequired(t, "qemu", err)
	}
	agent := testAgent(t)
	p := newTestPlatform(t, agent, t.TempDir(), "qemu:accel="+accelOption())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	inst, err := p.Create(ctx, platform.Spec{Name: "fpvol", CPUs: 1, Memory: 256 << 20, Network: platform.NetNone, Storage: platform.StorageVolume})
	if errors.Is(err, platform.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	in := inst.(*Instance)
	defer in.Close(context.WithoutCancel(ctx))
	dirs := in.cg.Dirs()
	procs := in.cg.Pids()
	for name, c := range map[string]*exec.Cmd{"qemu": in.cmd, "virtiofsd": in.vfs} {
		if c == nil || c.Process == nil || !slices.Contains(procs, c.Process.Pid) {
			t.Errorf("%s is not in the VM's cgroup %v (its processes: %v)", name, dirs, procs)
		}
	}
	fp0, err := in.Footprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Exec(ctx, []string{"sh", "-c", `dd if=/dev/zero of="$ISOBENCH_SCRATCH/f" bs=1048576 count=16 2>/dev/null && sync`}, platform.ExecIO{}); err != nil {
		t.Fatal(err)
	}
	fp1, err := in.Footprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("storage=volume footprint: memory %d KiB, cpu %.3f s, disk %d -> %d KiB", fp1.MemoryBytes>>10, fp1.CPUSeconds, fp0.DiskBytes>>10, fp1.DiskBytes>>10)
	if grew := fp1.DiskBytes - fp0.DiskBytes; grew < 15<<20 {
		t.Errorf("disk grew %d KiB after 16 MiB written to the volume", grew>>10)
	}
	if fp1.MemoryBytes <= 0 || fp1.CPUSeconds <= 0 {
		t.Errorf("footprint %+v", fp1)
	}
	if err := in.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("cgroup %s after Close: %v", d, err)
		}
	}
	if _, err := in.Footprint(ctx); err == nil {
		t.Error("a closed VM reported a footprint")
	}
}

func TestIsVCPUThread(t *testing.T) {
	for comm, want := range map[string]bool{
		"CPU 0/TCG": true, "CPU 12/KVM": true, "ALL CPUs/TCG": true,
		"qemu-system-x86": false, "IO mon_iothread": false, "call_rcu": false, "CPU 0/": false, "worker/TCG": false,
	} {
		if got := isVCPUThread(comm); got != want {
			t.Errorf("isVCPUThread(%q) = %v, want %v", comm, got, want)
		}
	}
}

// TestQuotaOnVCPUs boots a 2-vCPU VM with quota=0.5 and checks the quota
// limits each vCPU thread in a child of its cgroup of its own (vcpuN, as
// libvirt's vcpu_quota), and none of QEMU's other threads; Close removes
// every group.
func TestQuotaOnVCPUs(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a VM")
	}
	if err := availableTools(&Platform{}); err != nil {
		conformance.SkipUnlessRequired(t, "qemu", err)
	}
	p := newTestPlatform(t, testAgent(t), t.TempDir(), "qemu:accel="+accelOption()+",quota=0.5")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	pi, err := p.Create(ctx, platform.Spec{Name: "quota", CPUs: 2, Memory: 256 << 20, Network: platform.NetNone})
	if pi != nil {
		defer pi.Close(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	in := pi.(*Instance)
	tids, err := vcpuThreads(in.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, tid := range tids {
		want = append(want, strconv.Itoa(tid))
	}
	var cpuDir string
	for _, d := range in.cg.Dirs() {
		if _, err := os.Stat(filepath.Join(d, "cpu.cfs_quota_us")); err == nil {
			cpuDir = d
		} else if _, err := os.Stat(filepath.Join(d, "cpu.max")); err == nil {
			cpuDir = d
		}
	}
	children, _ := filepath.Glob(filepath.Join(cpuDir, "vcpu*"))
	if len(tids) == 2 && len(children) != 2 {
		t.Fatalf("vCPU threads %v, quota groups %v: want one group per vCPU", tids, children)
	}
	for _, child := range children {
		quota, _ := os.ReadFile(filepath.Join(child, "cpu.cfs_quota_us"))
		if q := strings.TrimSpace(string(quota)); q != "50000" {
			if max, _ := os.ReadFile(filepath.Join(child, "cpu.max")); !strings.HasPrefix(string(max), "50000 ") {
				t.Errorf("%s: quota %q / cpu.max %q, want 50000 per 100000", child, q, max)
			}
		}
		in2, _ := os.ReadFile(filepath.Join(child, "tasks"))
		if len(in2) == 0 {
			in2, _ = os.ReadFile(filepath.Join(child, "cgroup.threads"))
		}
		if f := strings.Fields(string(in2)); len(f) != 1 {
			t.Errorf("%s holds threads %v, want one vCPU thread", child, f)
		}
		got = append(got, strings.Fields(string(in2))...)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("threads in the quota groups %v, want the vCPU threads %v", got, want)
	}
	for _, g := range got {
		if g == strconv.Itoa(in.cmd.Process.Pid) {
			t.Errorf("QEMU's main thread %s is under the quota", g)
		}
	}
	dirs := in.cg.Dirs()
	if err := pi.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s left after Close", d)
		}
	}
}
