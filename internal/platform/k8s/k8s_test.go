package k8s

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
)

// TestConformance runs the shared platform suite against a real cluster
// (scripts/start-k8s.sh) with the runc and gvisor RuntimeClasses.
func TestConformance(t *testing.T) {
	for _, rc := range []string{"runc", "gvisor"} {
		t.Run(rc, func(t *testing.T) {
			opts := "k8s:runtime=" + rc
			probe, err := NewPlatform(mustParse(t, opts), platform.Env{})
			if err != nil {
				t.Fatal(err)
			}
			// no agent build when there is no cluster
			if _, err := probe.Version(t.Context()); err != nil {
				conformance.SkipUnlessRequired(t, "k8s", err)
			}
			agent := conformance.BuildAgent(t)
			state := t.TempDir()
			var p *Platform
			newPlatform := func(t *testing.T) platform.Platform {
				p, err = NewPlatform(mustParse(t, opts), platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			copts := conformance.Opts{
				NoNetworks: []string{platform.NetNone},
				Leftovers:  func(ctx context.Context) ([]string, error) { return leftovers(ctx, p) },
			}
			if rc == "gvisor" {
				// gVisor's own cgroupfs shows its sandbox's (the pause
				// container's) unlimited values, not the pod's limits: they
				// are checked where they are enforced, the pod's cgroup on
				// the node, which holds the sandbox. network=host is refused
				// (gVisor's netstack serves the pod's sockets).
				copts.NoNetworks = append(copts.NoNetworks, platform.NetHost)
				copts.Limits = podCgroupLimits
			}
			conformance.Run(t, newPlatform, copts)
		})
	}
}

func mustParse(t *testing.T, s string) platform.Options {
	t.Helper()
	o, err := platform.ParseOptions(s, Factory.Extra...)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// leftovers lists the suite's pods (label isobench.test=conformance) and
// the veths on the test cluster's bridge.
func leftovers(ctx context.Context, p *Platform) ([]string, error) {
	q := url.Values{}
	q.Set("labelSelector", "isobench=1,isobench.test=conformance")
	var l struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := p.c.do(ctx, http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(p.ns())+"/pods", q, nil, &l); err != nil {
		return nil, err
	}
	var out []string
	for _, it := range l.Items {
		out = append(out, "pod "+it.Metadata.Name)
	}
	links, _ := filepath.Glob("/sys/class/net/*/master")
	for _, m := range links {
		if dst, err := os.Readlink(m); err == nil && filepath.Base(dst) == "cni-isob0" {
			out = append(out, "veth "+filepath.Base(filepath.Dir(m)))
		}
	}
	sort.Strings(out)
	return out, nil
}

// TestImport imports the minimal image into the test cluster's containerd
// (no apiserver needed) and checks that containerd lists it and that a
// second Prepare reuses it.
func TestImport(t *testing.T) {
	if _, err := os.Stat(DefaultContainerd); err != nil {
		conformance.SkipUnlessRequired(t, "k8s", err)
	}
	agent := conformance.BuildAgent(t)
	p, err := NewPlatform(mustParse(t, "k8s"), platform.Env{AgentBinary: agent, StateDir: t.TempDir(), Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := p.image(t.Context(), "minimal")
	if err != nil {
		t.Fatal(err)
	}
	ok, err := p.hasImage(t.Context(), ref)
	if err != nil || !ok {
		t.Fatalf("after the import containerd lists %s: %v, %v", ref, ok, err)
	}
	if err := p.Prepare(t.Context(), "minimal"); err != nil {
		t.Fatal(err)
	}
	if err := p.Prepare(t.Context(), "no-such-profile"); err == nil {
		t.Error("Prepare of an unknown profile succeeded")
	}
}

// TestCleanPods makes two pods on the test cluster, one of a run the judge
// calls dead and one of a live run, and checks that CleanPods (what
// `isobench clean` calls) lists only the dead one with --dry-run, then
// removes it and keeps the other.
func TestCleanPods(t *testing.T) {
	probe, err := NewPlatform(mustParse(t, "k8s:runtime=runc"), platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := probe.Version(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "k8s", err)
	}
	agent := conformance.BuildAgent(t)
	p, err := NewPlatform(mustParse(t, "k8s:runtime=runc"), platform.Env{AgentBinary: agent, StateDir: t.TempDir(), Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	tag := fmt.Sprintf("%x", time.Now().UnixNano())
	deadTok, liveTok := "d"+tag[len(tag)-5:], "l"+tag[len(tag)-5:]
	var insts [2]platform.Instance
	for i, tok := range []string{deadTok, liveTok} {
		insts[i], err = p.Create(t.Context(), platform.Spec{Name: "clean-" + tok, Labels: map[string]string{runLabel: tok, "isobench.test": "conformance"}})
		if err != nil {
			t.Fatal(err)
		}
		inst := insts[i]
		t.Cleanup(func() {
			if err := inst.Close(context.Background()); err != nil {
				t.Errorf("Close(%s): %v", inst.ID(), err)
			}
		})
	}
	judge := func(tok string) (bool, string) {
		switch tok {
		case deadTok:
			return true, "test: dead"
		case liveTok:
			return false, ""
		}
		return false, "test: not this test's"
	}
	var out strings.Builder
	if err := CleanPods(t.Context(), &out, "", judge, true); err != nil {
		t.Fatal(err)
	}
	dry := out.String()
	if !strings.Contains(dry, "would remove k8s-pod default/"+insts[0].ID()+" (test: dead)") || strings.Contains(dry, insts[1].ID()) {
		t.Fatalf("dry run said:\n%s", dry)
	}
	out.Reset()
	if err := CleanPods(t.Context(), &out, "", judge, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "removed k8s-pod default/"+insts[0].ID()) {
		t.Errorf("clean said:\n%s", out.String())
	}
	pods, err := p.listPods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var live, dead bool
	for _, pd := range pods {
		switch pd.Name {
		case insts[0].ID():
			dead = !pd.Deleting
		case insts[1].ID():
			live = !pd.Deleting
			if pd.Host != thisHost() || pd.Token != liveTok {
				t.Errorf("live pod's labels: host %q token %q, want %q %q", pd.Host, pd.Token, thisHost(), liveTok)
			}
		}
	}
	if dead || !live {
		t.Errorf("after clean: dead run's pod still there %v, live run's pod there %v (pods %+v)", dead, live, pods)
	}
	if out := mustExec(t, insts[1], "echo", "alive"); out != "alive\n" {
		t.Errorf("the live run's pod after clean printed %q", out)
	}
}

func mustExec(t *testing.T, in platform.Instance, argv ...string) string {
	t.Helper()
	var out strings.Builder
	if err := in.Exec(t.Context(), argv, platform.ExecIO{Stdout: &out}); err != nil {
		t.Fatalf("exec %q: %v", argv, err)
	}
	return out.String()
}

// podCgroupLimits checks, on the node (this host), the CPU quota and memory
// limit of the pod's cgroup (cgroup v1, cgroupfs driver: kubepods[/QOS]/pod<uid>)
// and that the pod's runsc sandbox runs in it.
func podCgroupLimits(ctx context.Context, inst platform.Instance, cpus float64, memory int64) error {
	f := inst.Facts(ctx)
	uid, qos := f["pod_uid"], strings.ToLower(f["qos_class"])
	if uid == "" {
		return fmt.Errorf("instance facts have no pod_uid: %v", f)
	}
	rel := "kubepods/pod" + uid
	if qos != "" && qos != "guaranteed" {
		rel = "kubepods/" + qos + "/pod" + uid
	}
	read := func(ctrl, file string) (int64, error) {
		b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", ctrl, rel, file))
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	quota, err := read("cpu", "cpu.cfs_quota_us")
	if err != nil {
		return err
	}
	period, err := read("cpu", "cpu.cfs_period_us")
	if err != nil {
		return err
	}
	mem, err := read("memory", "memory.limit_in_bytes")
	if err != nil {
		return err
	}
	if got := float64(quota) / float64(period); cpus > 0 && (quota <= 0 || got < cpus*0.99 || got > cpus*1.01) {
		return fmt.Errorf("pod cgroup %s: cpu quota %d/%d, want %.3f cores", rel, quota, period, cpus)
	}
	if memory > 0 && (mem > memory || mem < memory-64<<10) {
		return fmt.Errorf("pod cgroup %s: memory limit %d, want %d", rel, mem, memory)
	}
	// the sandbox's processes are in the pod's cgroup (or below it)
	found := false
	filepath.WalkDir(filepath.Join("/sys/fs/cgroup/memory", rel), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(path)
		for _, pid := range strings.Fields(string(b)) {
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			if strings.HasPrefix(string(cmd), "runsc-sandbox") {
				found = true
			}
		}
		return nil
	})
	if !found {
		return fmt.Errorf("no runsc-sandbox process in the pod's cgroup %s", rel)
	}
	return nil
}

// TestGvisorHostNetwork: network=host with the gvisor RuntimeClass is
// refused before any pod is made (gVisor's netstack would serve the pod's
// sockets, so nothing would listen on the node).
func TestGvisorHostNetwork(t *testing.T) {
	p, err := NewPlatform(mustParse(t, "k8s:runtime=gvisor"), platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Version(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "k8s", err)
	}
	inst, err := p.Create(t.Context(), platform.Spec{Name: "gvisor-host", Network: platform.NetHost})
	if err == nil {
		inst.Close(t.Context())
		t.Fatal("network=host with RuntimeClass gvisor was accepted")
	}
	if !errors.Is(err, platform.ErrUnsupported) {
		t.Errorf("network=host with gvisor: %v, want ErrUnsupported", err)
	}
}

// failurePlatform is a k8s platform for the failure tests on the test
// cluster, or a skip (a failure with ISOBENCH_REQUIRE_PLATFORMS=k8s) when
// no cluster answers.
func failurePlatform(t *testing.T, opts string) *Platform {
	t.Helper()
	probe, err := NewPlatform(mustParse(t, opts), platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := probe.Version(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "k8s", err)
	}
	agent := conformance.BuildAgent(t)
	p, err := NewPlatform(mustParse(t, opts), platform.Env{AgentBinary: agent, StateDir: t.TempDir(), Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// podsOf lists the pods on the cluster carrying isobench.name=NAME.
func podsOf(t *testing.T, p *Platform, name string) []string {
	t.Helper()
	q := url.Values{}
	q.Set("labelSelector", "isobench=1,isobench.name="+name)
	var l struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := p.c.do(t.Context(), http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(p.ns())+"/pods", q, nil, &l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range l.Items {
		out = append(out, it.Metadata.Name)
	}
	return out
}

// TestUnschedulablePodIsAFailure asks for 100000 GiB of memory: Create
// fails at once (not after the pending bound, and not with a number) with
// the scheduler's reason, and leaves no pod.
func TestUnschedulablePodIsAFailure(t *testing.T) {
	p := failurePlatform(t, "k8s:runtime=runc")
	name := fmt.Sprintf("unsched-%x", time.Now().UnixNano()&0xffffff)
	inst, err := p.Create(t.Context(), platform.Spec{Name: name, Memory: 100000 << 30, Labels: map[string]string{"isobench.test": "conformance"}})
	if err == nil {
		inst.Close(context.Background())
		t.Fatal("a pod requesting 100000 GiB of memory was created and started")
	}
	t.Logf("Create: %v", err)
	var pe *PodError
	if !errors.As(err, &pe) || pe.Reason != "Unschedulable" || pe.Pending != 0 {
		t.Fatalf("Create: %v; want an Unschedulable PodError before the pending bound", err)
	}
	for _, want := range []string{"Insufficient memory", "it requests memory 100000Gi; the most any of the"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if left := podsOf(t, p, name); len(left) > 0 {
		t.Errorf("pods left behind: %v", left)
	}
}

// oomArgv allocates and touches 256 MiB in one buffer (busybox dd reads
// /dev/zero into it), past the tests' 32 MiB limit.
var oomArgv = []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"}

// TestOOMKilledIsAFailure runs a main process that allocates past the
// pod's memory limit: Wait reports Kubernetes' OOMKilled as a PodError
// rather than a bare exit status. A process run with exec in an idle pod
// and killed the same way fails, and OOMKilled (what the runner asks)
// confirms the OOM kill. With runc the OOM killer takes that process (status
// 137) and the pod runs on; with gVisor the whole sandbox is the host
// process that grew, so the pod dies with it, and Wait says OOMKilled.
func TestOOMKilledIsAFailure(t *testing.T) {
	for _, rc := range []string{"runc", "gvisor"} {
		t.Run(rc, func(t *testing.T) {
			p := failurePlatform(t, "k8s:runtime="+rc)
			labels := map[string]string{"isobench.test": "conformance"}
			inst, err := p.Create(t.Context(), platform.Spec{Name: "oom-main", Memory: 32 << 20, Main: oomArgv, Labels: labels})
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Close(context.Background())
			code, err := inst.Wait(t.Context())
			t.Logf("Wait: %d, %v", code, err)
			var pe *PodError
			if !errors.As(err, &pe) || pe.Reason != "OOMKilled" || !strings.Contains(err.Error(), "memory limit") {
				t.Errorf("Wait of a main killed at its memory limit: %d, %v; want an OOMKilled PodError", code, err)
			}
			if yes, err := inst.(*Instance).OOMKilled(t.Context()); err != nil || !yes {
				t.Errorf("OOMKilled of the pod whose main was OOM-killed: %v, %v", yes, err)
			}
			if err := inst.Close(t.Context()); err != nil {
				t.Fatal(err)
			}

			idle, err := p.Create(t.Context(), platform.Spec{Name: "oom-exec", Memory: 32 << 20, Labels: labels})
			if err != nil {
				t.Fatal(err)
			}
			defer idle.Close(context.Background())
			if yes, err := idle.(*Instance).OOMKilled(t.Context()); err != nil || yes {
				t.Fatalf("OOMKilled of a fresh pod: %v, %v; want false", yes, err)
			}
			err = idle.Exec(t.Context(), oomArgv, platform.ExecIO{})
			t.Logf("Exec: %v", err)
			var ee *platform.ExitError
			if err == nil || (rc == "runc" && (!errors.As(err, &ee) || ee.Code != 137)) {
				t.Fatalf("exec of an allocation past the limit: %v; want a failure (status 137 with runc)", err)
			}
			if yes, err := idle.(*Instance).OOMKilled(t.Context()); err != nil || !yes {
				t.Errorf("OOMKilled after the exec was killed: %v, %v; want true", yes, err)
			}
			if rc == "runc" {
				// the OOM killer took the process that went past the limit; the pod runs on
				if out := mustExec(t, idle, "echo", "alive"); out != "alive\n" {
					t.Errorf("the pod after the OOM kill printed %q", out)
				}
				return
			}
			code, err = idle.Wait(t.Context())
			t.Logf("Wait of the gVisor pod: %d, %v", code, err)
			if !errors.As(err, &pe) || pe.Reason != "OOMKilled" {
				t.Errorf("Wait of the gVisor pod whose sandbox the OOM killer took: %d, %v; want an OOMKilled PodError", code, err)
			}
		})
	}
}
