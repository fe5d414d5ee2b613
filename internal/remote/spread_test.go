package remote

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/store"
)

// spreadEnv gives isobench the test's key and both hosts' known_hosts.
func (tb *testbed) spreadEnv() []string {
	var known []string
	for _, h := range tb.hosts {
		known = append(known, h.known)
	}
	return []string{KeyEnv + "=" + tb.key, KnownHostsEnv + "=" + strings.Join(known, string(os.PathListSeparator))}
}

// cellHosts maps each cell's instance count to host -> measured
// repetitions, from the aggregate events_per_sec samples.
func cellHosts(t *testing.T, db string) map[int]map[string][]int {
	t.Helper()
	out := map[int]map[string][]int{}
	for host, ss := range samplesByHost(t, db) {
		for _, s := range ss {
			if s.Instance != sample.AggregateInstance || s.Metric != "events_per_sec" || s.Warmup {
				continue
			}
			if s.Platform != "native" || s.Options != "" {
				t.Errorf("%s: platform %q options %q: a spread run's samples carry the plain platform", host, s.Platform, s.Options)
			}
			if out[s.Instances] == nil {
				out[s.Instances] = map[string][]int{}
			}
			out[s.Instances][host] = append(out[s.Instances][host], s.Rep)
		}
	}
	return out
}

// TestSpreadSSH spreads one matrix (cpu at 1, 2 and 3 instances) over two
// SSH hosts with the real binary: every cell runs on exactly one host,
// every repetition once, each sample tagged with its host; both hosts
// take cells; the output says which host ran each cell; the fingerprint
// has each host's; nothing is left on the hosts.
func TestSpreadSSH(t *testing.T) {
	tb := newTestbed(t, 2)
	a, b := tb.hosts[0], tb.hosts[1]
	bin := testAgent(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	ctx := withCtx(t, 5*time.Minute)
	out, errs, code := isobench(t, ctx, bin, tb.spreadEnv(),
		"run", "--quiet", "--db", db, "--state-dir", filepath.Join(dir, "state"),
		"--spread", "--host", a.url(), "--host", b.url(), "--platform", "native",
		"--workload", "cpu:threads=1,duration=0.2s", "--instances", "1,2,3", "--reps", "2")
	if code != 0 {
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	t.Logf("run output:\n%s", out)
	cells := cellHosts(t, db)
	used := map[string]bool{}
	for _, n := range []int{1, 2, 3} {
		if len(cells[n]) != 1 {
			t.Errorf("cell ×%d ran on %d hosts, want 1: %v", n, len(cells[n]), cells[n])
		}
		for h, reps := range cells[n] {
			slices.Sort(reps)
			if !slices.Equal(reps, []int{0, 1}) {
				t.Errorf("cell ×%d on %s: reps %v, want 0 and 1 once each", n, h, reps)
			}
			used[h] = true
			if want := fmt.Sprintf(",threads=1 ×%d  %s\n", n, h); !strings.Contains(out, want) {
				t.Errorf("the output does not say %s ran cell ×%d (%q)", h, n, want)
			}
		}
	}
	if !used[a.url()] || !used[b.url()] || len(used) != 2 {
		t.Errorf("hosts that ran cells: %v, want %s and %s", keys(used), a.url(), b.url())
	}
	if strings.Contains(errs, "spread hosts differ") {
		t.Errorf("hosts on one machine called different: %s", errs)
	}
	s, err := store.OpenReadOnly(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(t.Context())
	s.Close()
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v, %v", runs, err)
	}
	for _, h := range tb.hosts {
		if v := runs[0].Fingerprint["native:host="+h.url()+".host.kernel"]; v == "" {
			t.Errorf("the run's fingerprint has no kernel for %s", h.url())
		}
	}
	for _, h := range tb.hosts {
		h.assertClean(t)
	}
}

// TestSpreadSSHHostDies kills one of two hosts of a spread run while it
// runs its cell: the run fails naming the host and why; its finished
// repetitions are kept; the cell it was running is recorded as failed
// there and not moved; the other host runs every other cell in full; and
// neither host keeps an isobench process or a temp file.
func TestSpreadSSHHostDies(t *testing.T) {
	tb := newTestbed(t, 2)
	a, b := tb.hosts[0], tb.hosts[1]
	bin := testAgent(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	ctx := withCtx(t, 8*time.Minute)
	const reps = 8
	cmd := exec.CommandContext(ctx, bin, "run", "--quiet", "--db", db, "--state-dir", filepath.Join(dir, "state"),
		"--spread", "--host", a.url(), "--host", b.url(), "--platform", "native",
		"--workload", "cpu:threads=1,duration=0.3s", "--instances", "1,2,3", "--reps", fmt.Sprint(reps))
	cmd.Env = append(os.Environ(), tb.spreadEnv()...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
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
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatalf("run did not end after host b died\n%s", errs.String())
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errs.String())
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit status %d, want 1 (a failed cell)", code)
	}
	msg := errs.String()
	if !strings.Contains(msg, "host "+b.url()+" lost during cpu:duration=0.3s ×") || !strings.Contains(msg, "connection lost") {
		t.Errorf("stderr does not name the lost host %s, its cell and why", b.url())
	}
	cells := cellHosts(t, db)
	var bCell int
	for n, hs := range cells {
		if len(hs[b.url()]) > 0 {
			if bCell != 0 {
				t.Errorf("host b ran cells ×%d and ×%d: it died in its first", bCell, n)
			}
			bCell = n
		}
	}
	if bCell == 0 {
		t.Fatalf("host b's finished repetitions are gone: %v", cells)
	}
	if kept := len(cells[bCell][b.url()]); kept < before || kept >= reps {
		t.Errorf("host b had finished %d repetitions of ×%d when it was killed; %d are in the store (of %d)", before, bCell, kept, reps)
	}
	if len(cells[bCell]) != 1 {
		t.Errorf("host b's cell ×%d was moved: %v", bCell, cells[bCell])
	}
	for _, n := range []int{1, 2, 3} {
		if n != bCell && (len(cells[n]) != 1 || len(cells[n][a.url()]) != reps) {
			t.Errorf("cell ×%d: %v, want all %d repetitions on %s", n, cells[n], reps, a.url())
		}
	}
	s, err := store.OpenReadOnly(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, _ := s.Runs(t.Context())
	if len(runs) != 1 || runs[0].Status != "failed" || !strings.Contains(runs[0].Error, b.url()) {
		t.Fatalf("stored run: %+v", runs)
	}
	fails, err := s.Failures(t.Context(), runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	// the failed cell, and the instances that could not be removed through
	// the lost connection (platformd removes them there)
	var cellFails []store.Failure
	for _, f := range fails {
		if f.Kind == store.FailedCell {
			cellFails = append(cellFails, f)
		}
		if f.Instances != bCell || !strings.Contains(f.Error, b.url()) {
			t.Errorf("stored failure %+v: want only cell ×%d on %s", f, bCell, b.url())
		}
	}
	if len(cellFails) != 1 {
		t.Errorf("stored cell failures %+v, want cell ×%d on %s", cellFails, bCell, b.url())
	}
	for _, h := range tb.hosts {
		h.assertClean(t)
	}
}

// TestPruneBinaryCache: copying a new isobench to a host keeps the
// KeepBinaries most recently used binaries in its cache, never one a
// process there runs, removes half-done copies older than a day, and
// leaves the cache alone when the binary is there already.
func TestPruneBinaryCache(t *testing.T) {
	tb := newTestbed(t, 1)
	a := tb.hosts[0]
	bin := testAgent(t)
	ctx := withCtx(t, 3*time.Minute)
	cache := a.cacheDir()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	// five older binaries, used 1 to 5 hours ago; the oldest is a copy of
	// sleep that runs (as another run's platformd would)
	old := make([]string, 5)
	now := time.Now()
	for i := range old {
		var d [16]byte
		rand.Read(d[:])
		old[i] = "isobench-" + hex.EncodeToString(d[:])
		src := "/bin/true"
		if i == 4 {
			src = "/bin/sleep"
		}
		copyFile(t, src, filepath.Join(cache, old[i]))
		at := now.Add(-time.Duration(i+1) * time.Hour)
		if err := os.Chtimes(filepath.Join(cache, old[i]), at, at); err != nil {
			t.Fatal(err)
		}
	}
	busy := exec.Command(filepath.Join(cache, old[4]), "600")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Process.Kill(); busy.Wait() })
	stale, fresh := old[0]+".part-aaaaaaaaaaaa", old[1]+".part-bbbbbbbbbbbb"
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(filepath.Join(cache, p), []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := now.Add(-72 * time.Hour)
	os.Chtimes(filepath.Join(cache, stale), at, at)

	opts := map[string]string{"host": a.url(), "key": tb.key, "known-hosts": a.known}
	install := func(binary string) string {
		t.Helper()
		c, path, err := connect(ctx, opts, binary)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		return filepath.Base(path)
	}
	ls := func() []string {
		t.Helper()
		ents, err := os.ReadDir(cache)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s ...string) []string { slices.Sort(s); return s }

	cur := install(bin)
	// the newest three (this one and those used 1 and 2 hours ago), the
	// one in use, and the copy under way
	if got, want := ls(), sorted(cur, old[0], old[1], old[4], fresh); !slices.Equal(got, want) {
		t.Errorf("after a copy the cache holds\n %q\nwant\n %q", got, want)
	}
	// already there: touched, nothing copied, nothing removed
	if again := install(bin); again != cur {
		t.Errorf("the same binary was installed as %s, then %s", cur, again)
	}
	if got, want := ls(), sorted(cur, old[0], old[1], old[4], fresh); !slices.Equal(got, want) {
		t.Errorf("without a copy the cache changed to %q", got)
	}
	// a newer build, once the process is gone: the oldest two go
	busy.Process.Kill()
	busy.Wait()
	other := filepath.Join(t.TempDir(), "isobench")
	copyFile(t, bin, other)
	fh, err := os.OpenFile(other, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write([]byte("another build"))
	fh.Close()
	next := install(other)
	if next == cur {
		t.Fatal("a different binary got the same digest")
	}
	if got, want := ls(), sorted(next, cur, old[0], fresh); !slices.Equal(got, want) {
		t.Errorf("after a second copy the cache holds\n %q\nwant\n %q", got, want)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
