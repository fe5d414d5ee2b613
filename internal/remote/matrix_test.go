package remote

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/store"
)

// startAgent runs an ssh-agent holding key and returns its socket.
func startAgent(t *testing.T, key string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		t.Fatalf("ssh-agent: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		add := exec.Command("ssh-add", key)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		out, err := add.CombinedOutput()
		if err == nil {
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh-add: %v: %s", err, out)
		}
		time.Sleep(100 * time.Millisecond) // the agent's socket appears when it is ready
	}
}

// isobench runs the real binary; it returns stdout, stderr and the exit code.
func isobench(t *testing.T, ctx context.Context, bin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("isobench %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

func samplesByHost(t *testing.T, db string) map[string][]sample.Sample {
	t.Helper()
	m, err := trySamples(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// countSamples is for polling a store a run is writing: one that is not
// there yet, or not initialised yet, has none.
func countSamples(ctx context.Context, db, host string) int {
	m, err := trySamples(ctx, db)
	if err != nil {
		return 0
	}
	n := 0
	for _, s := range m[host] {
		if s.Instance == sample.AggregateInstance && s.Metric == "events_per_sec" {
			n++
		}
	}
	return n
}

func trySamples(ctx context.Context, db string) (map[string][]sample.Sample, error) {
	if _, err := os.Stat(db); err != nil {
		return nil, err
	}
	s, err := store.OpenReadOnly(ctx, db)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	all, err := s.Samples(ctx, store.Filter{})
	if err != nil {
		return nil, err
	}
	m := map[string][]sample.Sample{}
	for _, x := range all {
		host := "local"
		if x.Tags["host"] != "" {
			host = x.Tags["host"]
		}
		m[host] = append(m[host], x)
	}
	return m, nil
}

// TestSSHMatrix runs one matrix across two SSH hosts (one with key=, one
// through ssh-agent) and the local native platform with the real binary:
// samples come from every host, tagged with it, and nothing is left there.
func TestSSHMatrix(t *testing.T) {
	tb := newTestbed(t, 2)
	a, b := tb.hosts[0], tb.hosts[1]
	bin := testAgent(t)
	sock := startAgent(t, tb.key)
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	ctx := withCtx(t, 5*time.Minute)
	// host a named in its platform with key= and known-hosts=; host b by
	// --host, its key from the agent and its host key from
	// $ISOBENCH_KNOWN_HOSTS, so its label is just native:host=ssh://...
	out, errs, code := isobench(t, ctx, bin, []string{"SSH_AUTH_SOCK=" + sock, "TMPDIR=" + dir, KnownHostsEnv + "=" + b.known, KeyEnv + "="},
		"run", "--quiet", "--db", db, "--state-dir", filepath.Join(dir, "state"),
		"--platform", "native",
		"--platform", tb.spec("native", a, "key="+tb.key),
		"--host", "local", "--host", b.url(),
		"--workload", "cpu:threads=1,duration=0.2s", "--instances", "1,2", "--reps", "2")
	if code != 0 {
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	t.Logf("run output:\n%s", out)
	by := samplesByHost(t, db)
	for _, host := range []string{"local", a.url(), b.url()} {
		ss := by[host]
		reps := map[int]bool{}
		for _, s := range ss {
			if s.Instance == sample.AggregateInstance && s.Metric == "events_per_sec" {
				reps[s.Instances*10+s.Rep] = true
				if s.Value <= 0 {
					t.Errorf("%s: events_per_sec %v", host, s.Value)
				}
			}
			if host == b.url() && s.Options != "host="+b.url() {
				t.Errorf("%s: options %q, want only host=", host, s.Options)
			}
			if host != "local" && (s.Tags["host_kernel"] == "" || !strings.Contains(s.Options, "host="+host)) {
				t.Errorf("%s: sample without the host's fingerprint or option: options %q tags %v", host, s.Options, s.Tags)
			}
		}
		if len(reps) != 4 {
			t.Errorf("%s: %d aggregate cpu samples (instances x reps), want 4", host, len(reps))
		}
	}
	if len(by) != 3 {
		t.Errorf("samples from %d hosts, want 3: %v", len(by), keys(by))
	}
	// the run's fingerprint has each remote host's
	s, err := store.OpenReadOnly(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(t.Context())
	s.Close()
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v, %v", runs, err)
	}
	for _, h := range []*sshHost{a, b} {
		found := false
		for k, v := range runs[0].Fingerprint {
			if strings.Contains(k, h.addr) && strings.HasSuffix(k, ".host.kernel") && v != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("run fingerprint has no host.kernel for %s", h.addr)
		}
	}
	for _, h := range tb.hosts {
		h.assertClean(t)
	}

	// doctor asks a remote host (key from the agent, host key from
	// ~/.ssh/known_hosts of a HOME of this test's own)
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	known, _ := os.ReadFile(b.known)
	if err := os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), known, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code = isobench(t, ctx, bin, []string{"SSH_AUTH_SOCK=" + sock, "HOME=" + home, KeyEnv + "=", KnownHostsEnv + "="}, "doctor", "--host", b.url(), "--host", a.url())
	if code != 0 || !strings.Contains(out, "host "+b.url()+":\nplatform") || !strings.Contains(out, "host "+a.url()+":\nunreachable: ") || !strings.Contains(out, "is not in "+filepath.Join(home, ".ssh", "known_hosts")) {
		t.Errorf("doctor --host: exit %d\n%s\n%s", code, out, errs)
	}
	t.Logf("doctor --host:\n%s", out)
	b.assertClean(t)

	// host-side network clients are refused before anything starts
	_, errs, code = isobench(t, ctx, bin, []string{"SSH_AUTH_SOCK=" + sock},
		"run", "--quiet", "--db", filepath.Join(dir, "n.db"), "--platform", tb.spec("native", a, ""),
		"--workload", "tcp-rr:duration=1s")
	if code != 2 || !strings.Contains(errs, "client=host") || !strings.Contains(errs, a.url()) {
		t.Errorf("tcp-rr with client=host on a remote platform: exit %d, %s", code, errs)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSSHHostDies kills one host in the middle of a run: the run fails
// naming that host, the samples it finished are kept, the other host's
// too, and neither host keeps an isobench process or a temp file.
func TestSSHHostDies(t *testing.T) {
	tb := newTestbed(t, 2)
	a, b := tb.hosts[0], tb.hosts[1]
	bin := testAgent(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	ctx := withCtx(t, 5*time.Minute)
	cmd := exec.CommandContext(ctx, bin, "run", "--quiet", "--db", db, "--state-dir", filepath.Join(dir, "state"),
		"--platform", tb.spec("native", a, "key="+tb.key),
		"--platform", tb.spec("native", b, "key="+tb.key),
		"--workload", "cpu:threads=1,duration=0.3s", "--reps", "40")
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// wait until host b has finished two repetitions
	var before int
	for before < 2 {
		select {
		case err := <-exited:
			t.Fatalf("run ended before host b was killed: %v\n%s\n%s", err, out.String(), errs.String())
		case <-time.After(200 * time.Millisecond): // the store has no notification to wait on
		}
		before = countSamples(t.Context(), db, b.url())
	}
	b.kill(t)
	var err error
	select {
	case err = <-exited:
	case <-ctx.Done():
		t.Fatalf("run did not end after host b died\n%s", errs.String())
	}
	if err == nil {
		t.Fatalf("run succeeded although host b died\n%s", out.String())
	}
	msg := errs.String()
	t.Logf("stderr: %s", msg)
	if !strings.Contains(msg, b.url()) || !strings.Contains(msg, "connection lost") {
		t.Errorf("the error does not name the dead host %s and why: %s", b.url(), msg)
	}
	by := samplesByHost(t, db)
	kept := 0
	for _, s := range by[b.url()] {
		if s.Instance == sample.AggregateInstance && s.Metric == "events_per_sec" {
			kept++
		}
	}
	if kept < before {
		t.Errorf("host b had finished %d repetitions, %d are in the store", before, kept)
	}
	if len(by[a.url()]) == 0 {
		t.Error("host a's samples are gone")
	}
	s, serr := store.OpenReadOnly(t.Context(), db)
	if serr != nil {
		t.Fatal(serr)
	}
	runs, _ := s.Runs(t.Context())
	s.Close()
	if len(runs) != 1 || runs[0].Status != "failed" || !strings.Contains(runs[0].Error, b.url()) {
		t.Errorf("stored run: %+v", runs)
	}
	for _, h := range tb.hosts {
		h.assertClean(t)
	}
}

// TestSSHDocker runs Docker on a remote host: an agent workload (cpu) and a
// host-driven one whose main process's stdout and lifecycle phases cross
// the connection (startup).
func TestSSHDocker(t *testing.T) {
	requireTestbed(t)
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		conformance.SkipUnlessRequired(t, "docker", fmt.Errorf("docker info: %v: %s", err, out))
	}
	tb := newTestbed(t, 1)
	a := tb.hosts[0]
	bin := testAgent(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "docker.db")
	ctx := withCtx(t, 10*time.Minute)
	out, errs, code := isobench(t, ctx, bin, nil,
		"run", "--quiet", "--db", db,
		"--platform", tb.spec("docker", a, "key="+tb.key),
		"--workload", "cpu:threads=1,duration=0.2s", "--workload", "startup", "--reps", "2")
	if code != 0 {
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	metrics := map[string]int{}
	for _, s := range samplesByHost(t, db)["local"] {
		if s.Instance == sample.AggregateInstance && strings.Contains(s.Options, "host="+a.url()) {
			metrics[s.Metric]++
		}
	}
	for _, s := range samplesByHost(t, db)[a.url()] {
		if s.Instance == sample.AggregateInstance {
			metrics[s.Metric]++
		}
	}
	for _, m := range []string{"events_per_sec", "startup_ms", "create_ms", "start_ms"} {
		if metrics[m] != 2 {
			t.Errorf("%d aggregate %s samples from docker on %s, want 2 (all: %v)", metrics[m], m, a.url(), metrics)
		}
	}
	s, err := store.OpenReadOnly(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := s.Runs(t.Context())
	s.Close()
	found := false
	for k, v := range runs[0].Fingerprint {
		if strings.HasPrefix(k, "docker:") && strings.HasSuffix(k, ".docker_version") && v != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("run fingerprint has no remote docker_version: %v", runs[0].Fingerprint)
	}
	a.assertClean(t)
}

// TestSSHInterrupt: Ctrl-C during a run on a remote host ends the run as
// interrupted, keeps what finished, and leaves nothing on the host.
func TestSSHInterrupt(t *testing.T) {
	tb := newTestbed(t, 1)
	a := tb.hosts[0]
	bin := testAgent(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "i.db")
	ctx := withCtx(t, 5*time.Minute)
	cmd := exec.CommandContext(ctx, bin, "run", "--quiet", "--db", db,
		"--platform", tb.spec("native", a, "key="+tb.key),
		"--workload", "cpu:threads=1,duration=0.5s", "--instances", "2", "--reps", "40")
	var errs bytes.Buffer
	cmd.Stderr = &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for n := 0; n == 0; {
		select {
		case err := <-exited:
			t.Fatalf("run ended before it was interrupted: %v\n%s", err, errs.String())
		case <-time.After(200 * time.Millisecond): // the store has no notification to wait on
		}
		n = countSamples(t.Context(), db, a.url())
	}
	// interrupt while instances are running there
	for len(a.isobenchProcs(t)) < 3 { // platformd and two agents
		select {
		case err := <-exited:
			t.Fatalf("run ended before it was interrupted: %v\n%s", err, errs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("run did not end after SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("interrupted run exited %d, want 130\n%s", code, errs.String())
	}
	if len(samplesByHost(t, db)[a.url()]) == 0 {
		t.Error("finished samples are gone")
	}
	a.assertClean(t)
}

// TestSSHHostUnreachable cuts a host off the network in the middle of a
// run (its packets silently dropped, no FIN, no RST: a power cut or a
// partition): keep-alives notice (about 20 s here), the run names the
// host, and platformd there closes its instances and exits on its own when
// it stops hearing from us (about 35 s).
func TestSSHHostUnreachable(t *testing.T) {
	tb := newTestbed(t, 2)
	a, b := tb.hosts[0], tb.hosts[1]
	bin := testAgent(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "u.db")
	ctx := withCtx(t, 5*time.Minute)
	cmd := exec.CommandContext(ctx, bin, "run", "--quiet", "--db", db,
		"--platform", tb.spec("native", a, "key="+tb.key),
		"--platform", tb.spec("native", b, "key="+tb.key),
		"--workload", "cpu:threads=1,duration=0.3s", "--reps", "60")
	var errs bytes.Buffer
	cmd.Stderr = &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for n := 0; n == 0; {
		select {
		case err := <-exited:
			t.Fatalf("run ended before host b was cut off: %v\n%s", err, errs.String())
		case <-time.After(200 * time.Millisecond): // the store has no notification to wait on
		}
		n = countSamples(t.Context(), db, b.url())
	}
	// drop everything on b's interface, in b's own namespace (its own
	// firewall: nothing changes on this machine)
	for _, chain := range [][]string{{"INPUT", "-i"}, {"OUTPUT", "-o"}} {
		if out, err := exec.Command("nsenter", "--net=/run/netns/"+b.ns, "iptables", "-I", chain[0], chain[1], b.veth+"p", "-j", "DROP").CombinedOutput(); err != nil {
			t.Fatalf("iptables in %s: %v: %s", b.ns, err, out)
		}
	}
	cut := time.Now()
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("run did not end after host b was cut off")
	}
	t.Logf("the run ended %v after the cut: %s", time.Since(cut).Round(time.Second), errs.String())
	// the connection's keep-alive (9 s) or the agents' heartbeat (11 s)
	// notices first: either way the failure names the host and why
	if !strings.Contains(errs.String(), b.url()) || !strings.Contains(errs.String(), "connection lost") && !strings.Contains(errs.String(), "unreachable") {
		t.Errorf("the error does not name the unreachable host %s: %s", b.url(), errs.String())
	}
	if len(samplesByHost(t, db)[b.url()]) == 0 {
		t.Error("host b's finished samples are gone")
	}
	a.assertClean(t)
	// platformd's own keep-alive (30 s) ends it there
	b.assertCleanWithin(t, 2*time.Minute)
}
