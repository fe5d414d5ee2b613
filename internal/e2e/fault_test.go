package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/runrec"
)

// faultNeedLXC skips (or fails, when LXC is required) without LXC and root.
func faultNeedLXC(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		conformance.SkipUnlessRequired(t, "lxc", fmt.Errorf("needs root"))
	}
	if _, err := exec.LookPath("lxc-execute"); err != nil {
		conformance.SkipUnlessRequired(t, "lxc", err)
	}
}

var faultRunLine = regexp.MustCompile(`(?m)^run \d+ \((\w+)\): (\d+) samples`)

// TestConcurrentRunsShareTheBridge runs two `isobench run`s at once, each
// with tcp-rr between two LXC instances on the isobench bridge at 1 and 2
// instances, several repetitions (so each run's veths come and go while the
// other's instances talk), each run with a state directory of its own:
// both must finish with every sample.
func TestConcurrentRunsShareTheBridge(t *testing.T) {
	needBinary(t)
	faultNeedLXC(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const reps = 3
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	for i := range 2 {
		dir := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, binary, "run", "--platform", "lxc",
				"--workload", "tcp-rr:server=instance,client=instance,duration=2s",
				"--instances", "1,2", "--reps", strconv.Itoa(reps), "--quiet", "--db", filepath.Join(dir, "r.db"))
			cmd.Env = append(os.Environ(), "ISOBENCH_STATE="+filepath.Join(dir, "state"), "TMPDIR="+dir)
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Errorf("run %d: %v\n%s", i, errs[i], outs[i])
			continue
		}
		m := faultRunLine.FindSubmatch(outs[i])
		if m == nil || string(m[1]) != "done" {
			t.Errorf("run %d did not finish as done:\n%s", i, outs[i])
			continue
		}
		// every repetition of both cells stored at least one metric
		if n, _ := strconv.Atoi(string(m[2])); n < 2*reps {
			t.Errorf("run %d stored %d samples, want at least %d", i, n, 2*reps)
		}
	}
}

// TestSignalsThenClean is the fault suite: a native+Docker+LXC run of the
// binary gets SIGINT (to its process group, as a terminal's Ctrl-C) or
// SIGKILL (the process alone, a crash: its agents and engine processes live
// on) at a random point, several trials each within a time bound. Then:
// with SIGINT the run ends interrupted (exit 130) leaving nothing; with
// SIGKILL `isobench clean` removes what it left and marks it crashed; in
// both cases nothing of the run is left on the host (containers,
// instances, processes, mounts, cgroups, netns, veths, leases, scratch
// directories; the bridge and its rule only while others use them), and
// the store keeps every repetition that was stored before the signal,
// before and after clean.
func TestSignalsThenClean(t *testing.T) {
	needBinary(t)
	faultNeedLXC(t)
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		conformance.SkipUnlessRequired(t, "docker", fmt.Errorf("%v: %s", err, out))
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	bound := time.Now().Add(3 * time.Minute)
	var sigs []syscall.Signal
	for range 4 {
		sigs = append(sigs, syscall.SIGKILL, syscall.SIGINT)
	}
	for i, sig := range sigs {
		if i >= 2 && time.Now().After(bound) {
			t.Logf("time bound reached after %d trials", i)
			break
		}
		// the first repetitions take the longest (images, rootfs); points
		// from before the first instance to well into the run
		delay := time.Duration(rng.Int63n(int64(14*time.Second))) + 500*time.Millisecond
		t.Run(fmt.Sprintf("%d-%s-after-%v", i, strings.ToUpper(unix(sig)), delay.Round(time.Millisecond)), func(t *testing.T) {
			faultTrial(t, sig, delay)
		})
	}
}

func unix(sig syscall.Signal) string {
	if sig == syscall.SIGKILL {
		return "sigkill"
	}
	return "sigint"
}

func faultTrial(t *testing.T, sig syscall.Signal, delay time.Duration) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	db := filepath.Join(dir, "f.db")
	env := append(os.Environ(), "ISOBENCH_STATE="+state, "TMPDIR="+dir)
	cmd := exec.Command(binary, "run", "--platform", "native", "--platform", "docker", "--platform", "lxc",
		"--workload", "cpu:duration=1s,max-prime=2000", "--instances", "2", "--reps", "30", "--quiet", "--db", db)
	cmd.Env = env
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	// a group of its own, as in a shell: SIGINT goes to the group, and
	// the native agents (in it) outlive a SIGKILL of isobench alone
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := cmd.Process.Pid
	recPath := filepath.Join(runrec.Dir, strconv.Itoa(pid)+".json")
	// its run record says its token (on its containers)
	var rec runrec.Record
	for rec.Token == "" {
		select {
		case err := <-exited:
			t.Fatalf("run ended before it was recorded: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if b, err := os.ReadFile(recPath); err == nil {
			json.Unmarshal(b, &rec)
		}
	}
	ids := map[string]bool{}
	select {
	case err := <-exited:
		t.Fatalf("run ended before the signal: %v\n%s", err, out.String())
	case <-time.After(delay):
	}
	faultNoteIDs(state, ids)
	before := faultSamples(t, db)
	if sig == syscall.SIGINT {
		syscall.Kill(-pid, sig)
	} else {
		syscall.Kill(pid, sig)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(3 * time.Minute):
		syscall.Kill(-pid, syscall.SIGKILL)
		t.Fatalf("run did not end within 3 minutes of %v\n%s", sig, out.String())
	}
	faultNoteIDs(state, ids)
	after := faultSamples(t, db)
	t.Logf("%v after %v: %d samples stored before the signal, %d after; instances %v", sig, delay, before, after, keys(ids))
	if after < before {
		t.Errorf("samples went from %d to %d", before, after)
	}
	if sig == syscall.SIGINT {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("Ctrl-C: exit %v, want 130\n%s", err, out.String())
		}
		if st := faultStatus(t, db); st != "interrupted" && st != "" {
			t.Errorf("Ctrl-C: run status %q, want interrupted", st)
		}
		// Ctrl-C leaves nothing even before clean
		faultLeftovers(t, "after Ctrl-C", dir, state, rec.Token, ids)
	}
	cl := exec.Command(binary, "clean")
	cl.Env = env
	clOut, clErr := cl.CombinedOutput()
	if clErr != nil {
		t.Errorf("clean: %v\n%s", clErr, clOut)
	}
	t.Logf("clean:\n%s", faultBrief(string(clOut)))
	if n := faultSamples(t, db); n != after {
		t.Errorf("clean changed the store: %d samples, had %d", n, after)
	}
	if sig == syscall.SIGKILL {
		if st := faultStatus(t, db); st != "crashed" && st != "" {
			t.Errorf("run killed with -9: status %q after clean, want crashed", st)
		}
	}
	faultLeftovers(t, "after clean", dir, state, rec.Token, ids)
	if _, err := os.Stat(recPath); err == nil {
		t.Errorf("run record %s left", recPath)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// faultBrief shortens clean's output (cgroups are many) for the log.
func faultBrief(s string) string {
	var out []string
	cg := 0
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.Contains(l, " cgroup ") {
			cg++
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n") + fmt.Sprintf("\n(and %d cgroup lines)", cg)
}

// faultNoteIDs adds the LXC instance ids in the state directory to ids.
func faultNoteIDs(state string, ids map[string]bool) {
	for _, sub := range []string{"instances", "lxc"} {
		es, _ := os.ReadDir(filepath.Join(state, sub))
		for _, e := range es {
			if strings.HasPrefix(e.Name(), "isob-") {
				ids[e.Name()] = true
			}
		}
	}
}

// faultSamples counts the stored samples (0 before the store exists).
func faultSamples(t *testing.T, db string) int {
	t.Helper()
	if _, err := os.Stat(db); err != nil {
		return 0
	}
	s, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.QueryRow("SELECT count(*) FROM samples").Scan(&n); err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return 0
		}
		t.Fatalf("counting samples: %v", err)
	}
	return n
}

// faultStatus is the run's status ("" when no run was begun).
func faultStatus(t *testing.T, db string) string {
	t.Helper()
	if _, err := os.Stat(db); err != nil {
		return ""
	}
	s, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var st string
	if err := s.QueryRow("SELECT status FROM runs ORDER BY id DESC LIMIT 1").Scan(&st); err != nil {
		return ""
	}
	return st
}

// faultLeftovers fails t for anything of the run left on the host.
func faultLeftovers(t *testing.T, when, dir, state, token string, ids map[string]bool) {
	t.Helper()
	var left []string
	if b, err := exec.Command("docker", "ps", "-a", "--filter", "label=isobench.run="+token, "--format", "{{.Names}}").Output(); err == nil && strings.TrimSpace(string(b)) != "" {
		left = append(left, "docker containers: "+strings.TrimSpace(string(b)))
	}
	for _, sub := range []string{"instances", "lxc"} {
		es, _ := os.ReadDir(filepath.Join(state, sub))
		for _, e := range es {
			left = append(left, "dir "+filepath.Join(state, sub, e.Name()))
		}
	}
	es, _ := os.ReadDir(filepath.Join(dir, "isobench-native"))
	for _, e := range es {
		left = append(left, "native dir "+e.Name())
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
				left = append(left, "mount "+f[4])
			}
		}
	}
	for id := range ids {
		if _, err := os.Stat("/run/netns/" + id); err == nil {
			left = append(left, "netns "+id)
		}
		if _, err := os.Stat("/sys/class/net/isv" + strings.TrimPrefix(id, "isob-")); err == nil {
			left = append(left, "veth of "+id)
		}
		for _, pat := range []string{"/sys/fs/cgroup/*/lxc.*." + id, "/sys/fs/cgroup/lxc.*." + id, "/sys/fs/cgroup/*/isobench/" + id + "*"} {
			m, _ := filepath.Glob(pat)
			for _, c := range m {
				left = append(left, "cgroup "+c)
			}
		}
	}
	for _, pat := range []string{"/sys/fs/cgroup/*/isobench/*" + token + "*", "/sys/fs/cgroup/isobench/*" + token + "*"} {
		m, _ := filepath.Glob(pat)
		for _, c := range m {
			left = append(left, "cgroup "+c)
		}
	}
	// processes: engine processes name the state dir, agents have their
	// scratch in dir
	ps, _ := os.ReadDir("/proc")
	for _, e := range ps {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cl, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		envb, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if strings.Contains(string(cl), dir+"/") || strings.Contains(string(envb), "ISOBENCH_SCRATCH="+dir+"/") {
			left = append(left, fmt.Sprintf("process %d %s", pid, strings.ReplaceAll(string(cl), "\x00", " ")))
		}
	}
	br := hostnet.Default("")
	snap, err := br.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range snap.Leases {
		if ids[l.Owner] {
			left = append(left, fmt.Sprintf("lease %s %s", l.Addr, l.Owner))
		}
	}
	if snap.Exists != snap.Rule && snap.Exists {
		left = append(left, "bridge without its FORWARD rule")
	}
	if !snap.Exists && snap.Rule {
		left = append(left, "FORWARD rule of a bridge that is gone")
	}
	if snap.Exists {
		live := false
		for _, l := range snap.Leases {
			live = live || l.Live
		}
		if len(snap.Ports) == 0 && !live {
			left = append(left, "bridge with no port and no live lease")
		}
	}
	if len(left) > 0 {
		t.Errorf("%s, left on the host:\n  %s", when, strings.Join(left, "\n  "))
	}
}
