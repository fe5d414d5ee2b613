package docker

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
)

// TestConformance runs the shared platform suite against the real dockerd.
func TestConformance(t *testing.T) {
	// do not spend a minute building the agent when there is no daemon
	if probe, err := NewPlatform(platform.Options{}, platform.Env{}); err != nil {
		t.Fatal(err)
	} else if err := probe.ping(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	agent := conformance.BuildAgent(t)
	state := t.TempDir()
	var p *Platform
	newPlatform := func(t *testing.T) platform.Platform {
		o, err := platform.ParseOptions("docker")
		if err != nil {
			t.Fatal(err)
		}
		p, err = NewPlatform(o, platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		// remove the image this test imported, keep what was there and
		// what other sessions import meanwhile
		if before, err := p.Images(t.Context(), "minimal"); err == nil {
			t.Cleanup(func() {
				removed, err := p.RemoveImages(context.Background(), "minimal", keepOthers(p, before))
				if err != nil {
					t.Errorf("removing test images: %v", err)
				}
				t.Logf("removed test images %q", removed)
			})
		}
		return p
	}
	conformance.Run(t, newPlatform, conformance.Opts{
		NAT:        true,
		Leftovers:  func(ctx context.Context) ([]string, error) { return leftovers(ctx, p, state) },
		SharedHost: true,
	})
}

// leftovers lists what the suite's docker instances may leave on the host:
// containers labelled by the suite, overlay mounts, network namespaces and
// veths on docker0, volume and rootfs directories in the state dir. Other
// sessions may run isobench containers at the same time: host state that
// belongs to a container the suite did not create is not listed.
func leftovers(ctx context.Context, p *Platform, state string) ([]string, error) {
	var out []string
	links, _ := filepath.Glob("/sys/class/net/veth*")
	veths := map[string]string{} // ifindex → name
	for _, l := range links {
		if m, err := os.Readlink(filepath.Join(l, "master")); err == nil && filepath.Base(m) == "docker0" {
			idx, _ := os.ReadFile(filepath.Join(l, "ifindex"))
			veths[strings.TrimSpace(string(idx))] = filepath.Base(l)
		}
	}
	var mounts []string
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mi), "\n") {
			f := strings.Fields(line)
			if len(f) < 5 {
				continue
			}
			mp := f[4]
			switch {
			case strings.HasPrefix(mp, "/run/docker/netns/") || strings.HasPrefix(mp, "/var/run/docker/netns/"):
				// "default" is the daemon's own handle on the host
				// namespace, made once for the first host-network
				// container. Unmounted namespace files of removed
				// containers are garbage-collected by dockerd within a
				// minute, so only mounts count.
				if filepath.Base(mp) != "default" {
					mounts = append(mounts, mp)
				}
			case strings.Contains(mp, "/docker/") && (strings.Contains(mp, "/overlay2/") || strings.Contains(mp, "/containers/")):
				mounts = append(mounts, mp)
			}
		}
	}
	// containers listed after the host scan, so every container that
	// owned something scanned is known
	var cs []struct {
		ID     string `json:"Id"`
		Names  []string
		Labels map[string]string
	}
	q := url.Values{}
	q.Set("all", "1")
	if err := p.c.do(ctx, http.MethodGet, "/containers/json", q, nil, &cs); err != nil {
		return nil, err
	}
	owned := map[string]bool{} // mounts and veth ifindexes of others' containers
	for _, c := range cs {
		if c.Labels["isobench.test"] == "conformance" {
			out = append(out, "container "+c.ID+" "+strings.Join(c.Names, ","))
			continue
		}
		var ci struct {
			State           struct{ Pid int }
			GraphDriver     struct{ Data map[string]string }
			HostsPath       string
			ResolvConfPath  string
			NetworkSettings struct{ SandboxKey string }
		}
		if err := p.c.do(ctx, http.MethodGet, "/containers/"+c.ID+"/json", nil, nil, &ci); err != nil {
			continue // gone meanwhile
		}
		for _, v := range ci.GraphDriver.Data {
			owned[v] = true
		}
		owned[ci.NetworkSettings.SandboxKey] = true
		owned[filepath.Dir(ci.HostsPath)] = true
		if ci.State.Pid > 0 {
			// sysfs inside the container shows its own network namespace
			ifl, _ := filepath.Glob(fmt.Sprintf("/proc/%d/root/sys/class/net/*/iflink", ci.State.Pid))
			for _, f := range ifl {
				if b, err := os.ReadFile(f); err == nil {
					owned["ifindex "+strings.TrimSpace(string(b))] = true
				}
			}
		}
	}
	for _, m := range mounts {
		if owned[m] || owned[filepath.Dir(m)] || owned[strings.TrimSuffix(m, "/merged")] {
			continue
		}
		if strings.Contains(m, "/containers/") {
			// /var/lib/docker/containers/ID/mounts/shm and the like
			if i := strings.Index(m, "/containers/"); i >= 0 {
				rest := m[i+len("/containers/"):]
				id, _, _ := strings.Cut(rest, "/")
				if owned[m[:i+len("/containers/")]+id] {
					continue
				}
			}
		}
		out = append(out, "mount "+m)
	}
	for idx, name := range veths {
		if !owned["ifindex "+idx] {
			out = append(out, "veth "+name)
		}
	}
	for _, pat := range []string{filepath.Join(state, "volumes", "*"), filepath.Join(state, "docker-rootfs-*")} {
		m, _ := filepath.Glob(pat)
		for _, x := range m {
			out = append(out, "dir "+x)
		}
	}
	sort.Strings(out)
	return out, nil
}

// keepOthers keeps every image but those p imported itself and that were
// not there before.
func keepOthers(p *Platform, before []string) func(string) bool {
	p.imageMu.Lock()
	mine := map[string]bool{}
	for _, r := range p.refs {
		mine[r] = true
	}
	p.imageMu.Unlock()
	return func(ref string) bool { return !mine[ref] || slices.Contains(before, ref) }
}

func TestNegotiate(t *testing.T) {
	for _, c := range []struct {
		server, want string
		ok           bool
	}{
		{"1.41", "1.41", true},
		{"1.43", "1.43", true},
		{"1.51", MaxAPIVersion, true},
		{"1.40", "", false},
		{"", "", false},
	} {
		got, err := negotiate(c.server)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("negotiate(%q) = %q, %v; want %q ok=%v", c.server, got, err, c.want, c.ok)
		}
	}
}

func TestSocketPath(t *testing.T) {
	if p, err := socketPath(""); err != nil || p != DefaultSocket {
		t.Errorf("socketPath(\"\") = %q, %v", p, err)
	}
	if p, err := socketPath("unix:///tmp/d.sock"); err != nil || p != "/tmp/d.sock" {
		t.Errorf("socketPath(unix) = %q, %v", p, err)
	}
	if _, err := socketPath("tcp://1.2.3.4:2375"); err == nil {
		t.Error("tcp DOCKER_HOST accepted")
	}
}

func TestBuildRequest(t *testing.T) {
	q := url.Values{}
	q.Set("name", "isobench-x")
	req, err := buildRequest(context.Background(), "1.41", http.MethodPost, "/containers/create", q, map[string]int{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.Path != "/v1.41/containers/create" || req.URL.Query().Get("name") != "isobench-x" {
		t.Errorf("URL %s", req.URL)
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	buf := make([]byte, 100)
	n, _ := req.Body.Read(buf)
	if string(buf[:n]) != `{"a":1}` {
		t.Errorf("body %q", buf[:n])
	}

	req, err = buildRequest(context.Background(), "", http.MethodGet, "/_ping", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.Path != "/_ping" || req.Body != nil && req.Body != http.NoBody {
		t.Errorf("unversioned request %s body %v", req.URL, req.Body)
	}

	req, err = buildRequest(context.Background(), "1.41", http.MethodPut, "/containers/abc/archive", url.Values{"path": {"/"}}, strings.NewReader("tar"))
	if err != nil {
		t.Fatal(err)
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-tar" {
		t.Errorf("archive Content-Type %q", ct)
	}

	req, err = buildHijackRequest(context.Background(), "1.41", http.MethodPost, "/exec/e1/start", nil, map[string]bool{"Detach": false})
	if err != nil {
		t.Fatal(err)
	}
	if req.Header.Get("Connection") != "Upgrade" || req.Header.Get("Upgrade") != "tcp" {
		t.Errorf("hijack headers %v", req.Header)
	}
}

func TestImportQuery(t *testing.T) {
	q := importQuery("minimal", "0123abcd")
	if q.Get("fromSrc") != "-" || q.Get("repo") != "isobench/minimal" || q.Get("tag") != "0123abcd" {
		t.Errorf("import query %v", q)
	}
	if q.Get("changes") != "LABEL "+platform.ImageLabel+"=1" { // not platform.Label: containers inherit it
		t.Errorf("changes %q", q.Get("changes"))
	}
}

func TestCreateConfig(t *testing.T) {
	s := platform.Spec{
		Name:    "x",
		CPUs:    1.5,
		Memory:  256 << 20,
		Network: platform.NetNone,
		Labels:  map[string]string{"k": "v", platform.Label: "overridden?"},
		Main:    []string{platform.AgentPlaceholder, "agent", "hello"},
	}
	cc, err := createConfig(s, "isobench/minimal:d", "runsc", "/state/volumes/isobench-x")
	if err != nil {
		t.Fatal(err)
	}
	hc := cc.HostConfig
	if hc.NanoCpus != 1_500_000_000 || hc.Memory != 256<<20 || hc.MemorySwap != 256<<20 || hc.NetworkMode != "none" || hc.Runtime != "runsc" {
		t.Errorf("host config %+v", hc)
	}
	if len(hc.Binds) != 1 || hc.Binds[0] != "/state/volumes/isobench-x:"+guestenv.ScratchDir {
		t.Errorf("binds %q", hc.Binds)
	}
	if strings.Join(cc.Cmd, " ") != "/usr/local/bin/isobench agent hello" {
		t.Errorf("cmd %q", cc.Cmd)
	}
	if cc.Labels[platform.Label] != "1" || cc.Labels["k"] != "v" {
		t.Errorf("labels %v", cc.Labels)
	}
	if len(cc.Env) != 1 || cc.Env[0] != "ISOBENCH_SCRATCH=/isobench-scratch" {
		t.Errorf("env %q", cc.Env)
	}

	cc, err = createConfig(platform.Spec{}, "img", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if cc.HostConfig.NetworkMode != "bridge" || cc.HostConfig.NanoCpus != 0 || cc.HostConfig.MemorySwap != 0 || cc.HostConfig.Binds != nil {
		t.Errorf("default host config %+v", cc.HostConfig)
	}
	if strings.Join(cc.Cmd, " ") != "/usr/local/bin/isobench agent idle" {
		t.Errorf("default cmd %q", cc.Cmd)
	}
	if _, err := createConfig(platform.Spec{Network: "weird"}, "img", "", ""); err == nil {
		t.Error("unknown network accepted")
	}
	if cc.ExposedPorts != nil || cc.HostConfig.PortBindings != nil {
		t.Errorf("bridge publishes ports: %v %v", cc.ExposedPorts, cc.HostConfig.PortBindings)
	}

	// nat: the bridge, with the spec's ports published on loopback only
	cc, err = createConfig(platform.Spec{Network: platform.NetNAT, Ports: []int{5201, 80}}, "img", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if cc.HostConfig.NetworkMode != "bridge" || len(cc.ExposedPorts) != 2 || len(cc.HostConfig.PortBindings) != 2 {
		t.Fatalf("nat config %+v %+v", cc.ExposedPorts, cc.HostConfig)
	}
	for _, k := range []string{"5201/tcp", "80/tcp"} {
		b := cc.HostConfig.PortBindings[k]
		if _, ok := cc.ExposedPorts[k]; !ok || len(b) != 1 || b[0].HostIP != "127.0.0.1" || b[0].HostPort != "" {
			t.Errorf("port %s: exposed %v, bindings %+v; want 127.0.0.1 and a port docker picks", k, cc.ExposedPorts, b)
		}
	}
	if _, err := createConfig(platform.Spec{Network: platform.NetNAT, Ports: []int{70000}}, "img", "", ""); err == nil {
		t.Error("port 70000 accepted")
	}
	// SamePorts: each port at its own number (FTP's passive ports)
	cc, err = createConfig(platform.Spec{Network: platform.NetNAT, Ports: []int{40021, 40022}, SamePorts: true}, "img", "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"40021", "40022"} {
		if b := cc.HostConfig.PortBindings[p+"/tcp"]; len(b) != 1 || b[0].HostIP != "127.0.0.1" || b[0].HostPort != p {
			t.Errorf("SamePorts, port %s: bindings %+v; want 127.0.0.1:%s", p, b, p)
		}
	}
}

func TestContainerName(t *testing.T) {
	n, err := containerName("run 1/cpu:a")
	if err != nil || n != "isobench-run-1-cpu-a" {
		t.Errorf("containerName = %q, %v", n, err)
	}
	a, _ := containerName("")
	b, _ := containerName("")
	if a == b || !strings.HasPrefix(a, "isobench-") {
		t.Errorf("generated names %q %q", a, b)
	}
}

func TestFactoryParse(t *testing.T) {
	reg := platform.NewRegistry(Factory)
	_, o, err := reg.Parse("docker:cpus=1,runtime=runsc,image=minimal")
	if err != nil {
		t.Fatal(err)
	}
	if o.Extra["runtime"] != "runsc" || o.Base.CPUs != 1 {
		t.Errorf("options %+v", o)
	}
	if _, _, err := reg.Parse("docker:bogus=1"); err == nil {
		t.Error("unknown option accepted")
	}
}

func TestAvailableWithoutDaemon(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "none.sock"))
	p, err := NewPlatform(platform.Options{}, platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Available(context.Background())
	if err == nil || !strings.Contains(err.Error(), "start dockerd") || !strings.Contains(err.Error(), "apt-get install docker.io") {
		t.Errorf("Available without a daemon: %v", err)
	}
}

func TestUnknownRuntime(t *testing.T) {
	probe, err := NewPlatform(platform.Options{}, platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.ping(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	_, o, err := platform.NewRegistry(Factory).Parse("docker:runtime=no-such-runtime")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlatform(o, platform.Env{AgentBinary: "/bin/busybox", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Available(t.Context())
	if err == nil || !strings.Contains(err.Error(), "no-such-runtime") || !strings.Contains(err.Error(), "runc") {
		t.Errorf("Available with an unknown runtime: %v (want the runtime named and the known ones listed)", err)
	}
}

// benchPlatform returns a docker platform with a built agent, or skips.
func benchPlatform(b *testing.B) *Platform {
	b.Helper()
	probe, err := NewPlatform(platform.Options{}, platform.Env{})
	if err != nil {
		b.Fatal(err)
	}
	if err := probe.ping(b.Context()); err != nil {
		b.Skip(err)
	}
	p, err := NewPlatform(platform.Options{}, platform.Env{AgentBinary: conformance.BuildAgent(b), StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	before, err := p.Images(b.Context(), "minimal")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.image(b.Context(), "minimal"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.RemoveImages(context.Background(), "minimal", keepOthers(p, before)) })
	return p
}

// BenchmarkCreateClose measures creating, starting and removing an idle
// container.
func BenchmarkCreateClose(b *testing.B) {
	p := benchPlatform(b)
	ctx := b.Context()
	for i := 0; b.Loop(); i++ {
		in, err := p.Create(ctx, platform.Spec{Name: "bench-create-" + strconv.Itoa(i)})
		if err != nil {
			b.Fatal(err)
		}
		if err := in.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecTrue measures one exec round trip of /bin/true.
func BenchmarkExecTrue(b *testing.B) {
	p := benchPlatform(b)
	ctx := b.Context()
	in, err := p.Create(ctx, platform.Spec{Name: "bench-exec"})
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close(context.Background())
	for b.Loop() {
		if err := in.Exec(ctx, []string{"true"}, platform.ExecIO{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestImageRemovedBehindOurBack checks that Create re-imports an image
// that was deleted after the platform cached its reference.
func TestImageRemovedBehindOurBack(t *testing.T) {
	probe, err := NewPlatform(platform.Options{}, platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.ping(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	// an agent of its own (a marker appended to the binary), so that the
	// image this test removes is one no other package's test is using:
	// the same agent build gives the same image tag everywhere, and
	// Docker refuses to remove an image a container runs on (make test
	// failed once on that, another package's container on the image)
	agent := filepath.Join(t.TempDir(), "isobench")
	b, err := os.ReadFile(conformance.BuildAgent(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(agent, append(b, "\nisobench test: "+t.Name()+"\n"...), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlatform(platform.Options{}, platform.Env{AgentBinary: agent, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	before, err := p.Images(ctx, "minimal")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.RemoveImages(context.Background(), "minimal", keepOthers(p, before))
	})
	in, err := p.Create(ctx, platform.Spec{Name: "reimport-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RemoveImages(ctx, "minimal", keepOthers(p, nil)); err != nil {
		t.Fatal(err)
	}
	in, err = p.Create(ctx, platform.Spec{Name: "reimport-2"})
	if err != nil {
		t.Fatalf("Create after the image was removed: %v", err)
	}
	defer in.Close(context.Background())
	var out strings.Builder
	if err := in.Exec(ctx, []string{platform.AgentPlaceholder, "agent", "hello"}, platform.ExecIO{Stdout: &out}); err != nil || !strings.Contains(out.String(), "hello") {
		t.Errorf("agent hello in the re-imported image: %q, %v", out.String(), err)
	}
}

// TestAgentSession drives a real in-guest workload (cpu) through the
// agent protocol in a container: barrier, release, result.
func TestAgentSession(t *testing.T) {
	probe, err := NewPlatform(platform.Options{}, platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.ping(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	p, err := NewPlatform(platform.Options{}, platform.Env{AgentBinary: conformance.BuildAgent(t), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	before, err := p.Images(ctx, "minimal")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.RemoveImages(context.Background(), "minimal", keepOthers(p, before)) })
	in, err := p.Create(ctx, platform.Spec{Name: "session", CPUs: 1, Memory: 128 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())
	s := agenthost.Start(ctx, in, "cpu", "duration=200ms,max-prime=2000")
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	ms, _, err := s.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("cpu workload returned no metrics")
	}
	for _, m := range ms {
		if m.Value < 0 {
			t.Errorf("metric %s = %v", m.Name, m.Value)
		}
		t.Logf("%s = %v %s", m.Name, m.Value, m.Unit)
	}
}

// TestCreateCutShortLeavesNothing cancels Create at every moment of its
// first 60 ms (image ready, so most of it is the create and start
// requests): whatever point the cancellation reaches, no container of the
// test's is left. dockerd goes on creating a container after the client
// that asked has gone, so a removal sent at once could find nothing and
// the container appear just after (an e2e Ctrl-C left two that way).
func TestCreateCutShortLeavesNothing(t *testing.T) {
	p, err := NewPlatform(platform.Options{}, platform.Env{AgentBinary: conformance.BuildAgent(t), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ping(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	prefix := fmt.Sprintf("cut-%d-", os.Getpid())
	warm, err := p.Create(t.Context(), platform.Spec{Name: prefix + "warm"})
	if err != nil {
		t.Fatal(err)
	}
	warm.Close(context.Background())
	for ms := 0; ms <= 60; ms += 3 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(ms)*time.Millisecond)
		in, err := p.Create(ctx, platform.Spec{Name: prefix + strconv.Itoa(ms)})
		cancel()
		if err == nil {
			in.Close(context.Background())
		}
	}
	var left []string
	for try := 0; try < 3; try++ { // a creation cut short may land late
		time.Sleep(time.Second)
		out, err := exec.Command("docker", "ps", "-a", "--filter", "name=isobench-"+prefix, "--format", "{{.Names}}").Output()
		if err != nil {
			t.Fatalf("docker ps: %v", err)
		}
		left = strings.Fields(string(out))
	}
	if len(left) > 0 {
		t.Errorf("containers left after Creates cut short: %v", left)
		for _, n := range left {
			exec.Command("docker", "rm", "-f", n).Run()
		}
	}
}
