// Package conformance is the test suite every isobench platform passes
// against its real engine. A platform's own test calls Run:
//
//	func TestConformance(t *testing.T) {
//		agent := conformance.BuildAgent(t)
//		conformance.Run(t, func(t *testing.T) platform.Platform { ... }, conformance.Opts{...})
//	}
//
// Run skips when the engine is not available here, unless
// $ISOBENCH_REQUIRE_PLATFORMS names the platform (or is "all"): then it
// fails, so CI cannot pass by skipping.
package conformance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
)

// RequireEnv names the environment variable listing platforms whose tests
// must fail rather than skip when their engine is absent (comma or space
// separated; "all" for every platform).
const RequireEnv = "ISOBENCH_REQUIRE_PLATFORMS"

// Opts tells the suite what a platform legitimately lacks and how to look
// at the host.
type Opts struct {
	// NoNetworks lists network modes (platform.NetBridge, NetHost, NetNone)
	// the platform does not offer; their checks are skipped.
	NoNetworks []string
	// NAT says the platform offers network=nat (ports published on the
	// host). Without it, creating a nat instance must fail with
	// platform.ErrUnsupported.
	NAT bool
	// NoStorage lists storage modes (platform.StorageVolume...) not offered.
	NoStorage []string
	// Limits checks inside inst that the CPU quota (cores) and memory limit
	// (bytes) it was created with are in force. Nil uses CgroupLimits.
	Limits func(ctx context.Context, inst platform.Instance, cpus float64, memory int64) error
	// Leftovers lists what the platform leaves on the host (containers,
	// cgroups, mounts, veths, temp dirs), one string per thing; the lists
	// taken before the suite and after everything is closed must match.
	// Nil lists what Sweep lists, or, without one, skips that check (say
	// why in the platform's test).
	Leftovers func(ctx context.Context) ([]string, error)
	// Sweep is the platform's Factory.Sweep (what it may leave, as
	// 'isobench clean' finds it): when Leftovers is nil, the suite's
	// leftover check compares what it lists (Leftover.String), with
	// StateDir the state directory searched.
	Sweep    func(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error)
	StateDir string
	// SharedHost says other sessions create and remove the same kind of
	// host state meanwhile (Docker's netns mounts and veths cannot all be
	// told apart): what vanished across the suite is then logged, not an
	// error; what was left behind still is.
	SharedHost bool
	// Image is the image profile instances use (default "minimal").
	Image string
	// Timeout bounds each check (default 3 minutes). It is a hang guard,
	// not a performance threshold.
	Timeout time.Duration
	// FootprintNoDisk says why the platform's footprint cannot see what an
	// instance writes to its scratch directory (e.g. a VM whose scratch is
	// guest memory); empty when it must.
	FootprintNoDisk string
	// Dial, when set, is how the test reaches the addresses instances
	// report (a remote platform's addresses are its machine's, reached
	// through its connection); nil dials from this host.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Required reports whether $ISOBENCH_REQUIRE_PLATFORMS names the platform.
func Required(name string) bool {
	for _, f := range strings.FieldsFunc(os.Getenv(RequireEnv), func(r rune) bool { return r == ',' || r == ' ' }) {
		if f == name || f == "all" {
			return true
		}
	}
	return false
}

// SkipUnlessRequired skips t with the reason a platform is unavailable, or
// fails it when the platform is required.
func SkipUnlessRequired(t testing.TB, name string, why error) {
	t.Helper()
	if Required(name) {
		t.Fatalf("platform %s is required ($%s) but not available: %v", name, RequireEnv, why)
	}
	t.Skipf("platform %s not available: %v", name, why)
}

// sweepLeftovers lists what sweep finds with stateDir searched, one
// "KIND NAME" a thing.
func sweepLeftovers(sweep func(context.Context, platform.SweepEnv) ([]platform.Leftover, error), stateDir string) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		env := platform.SweepEnv{}
		if stateDir != "" {
			env.StateDirs = []string{stateDir}
		}
		found, err := sweep(ctx, env)
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, len(found))
		for _, l := range found {
			out = append(out, l.String())
		}
		return out, nil
	}
}

type suite struct {
	p    platform.Platform
	opts Opts
	seq  int
	mu   sync.Mutex
	tag  string
}

// Run checks p against the platform contract. newPlatform is called once;
// Run closes the platform at the end.
func Run(t *testing.T, newPlatform func(t *testing.T) platform.Platform, opts Opts) {
	if opts.Image == "" {
		opts.Image = "minimal"
	}
	if opts.Timeout == 0 {
		opts.Timeout = 3 * time.Minute
	}
	p := newPlatform(t)
	ctx, cancel := context.WithTimeout(t.Context(), opts.Timeout)
	err := p.Available(ctx)
	cancel()
	if err != nil {
		SkipUnlessRequired(t, p.Name(), err)
	}
	if opts.Leftovers == nil && opts.Sweep != nil {
		opts.Leftovers = sweepLeftovers(opts.Sweep, opts.StateDir)
	}
	s := &suite{p: p, opts: opts, tag: randomHex(4)}

	var before []string
	if opts.Leftovers != nil {
		ctx, cancel := context.WithTimeout(t.Context(), opts.Timeout)
		before, err = opts.Leftovers(ctx)
		cancel()
		if err != nil {
			t.Fatalf("listing leftovers before: %v", err)
		}
	}

	t.Run("prepare", s.testPrepare)
	t.Run("facts", s.testFacts)
	t.Run("limits", s.testLimits)
	t.Run("exec", s.testExec)
	t.Run("storage", s.testStorage)
	t.Run("network", s.testNetwork)
	t.Run("two_instances", s.testTwo)
	t.Run("main", s.testMain)
	t.Run("wait_idle", s.testWaitIdle)
	t.Run("close_twice", s.testCloseTwice)
	t.Run("create_error", s.testCreateError)
	t.Run("confinement", s.testConfinement)
	t.Run("footprint", s.testFootprint)

	ctx, cancel = context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Errorf("closing the platform: %v", err)
	}
	if opts.Leftovers != nil {
		// Other work on the host (other sessions' instances) can make the
		// lists differ for a moment; a real leftover stays, so look a few
		// times before calling it one.
		var added, gone []string
		for attempt := 0; attempt < 5; attempt++ {
			if attempt > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(2 * time.Second):
				}
			}
			after, err := opts.Leftovers(ctx)
			if err != nil {
				t.Fatalf("listing leftovers after: %v", err)
			}
			if added, gone = diff(before, after); len(added) == 0 && (len(gone) == 0 || opts.SharedHost) {
				break
			}
		}
		switch {
		case len(added) > 0 || len(gone) > 0 && !opts.SharedHost:
			t.Errorf("host state changed across the suite:\n  left behind: %q\n  vanished: %q", added, gone)
		case len(gone) > 0:
			t.Logf("vanished across the suite (other sessions' state on a shared host): %q", gone)
		}
	}
}

// diff returns what is in b but not a, and in a but not b.
func diff(a, b []string) (added, gone []string) {
	in := func(s []string, x string) bool { return slices.Contains(s, x) }
	for _, x := range b {
		if !in(a, x) {
			added = append(added, x)
		}
	}
	for _, x := range a {
		if !in(b, x) {
			gone = append(gone, x)
		}
	}
	sort.Strings(added)
	sort.Strings(gone)
	return added, gone
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), s.opts.Timeout)
	t.Cleanup(cancel)
	return ctx
}

func (s *suite) offersNetwork(n string) bool { return !slices.Contains(s.opts.NoNetworks, n) }
func (s *suite) offersStorage(m string) bool { return !slices.Contains(s.opts.NoStorage, m) }

// spec returns a spec with a unique name.
func (s *suite) spec() platform.Spec {
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	return platform.Spec{
		Name:   fmt.Sprintf("conf-%s-%d", s.tag, n),
		Image:  s.opts.Image,
		Labels: map[string]string{"isobench.test": "conformance"},
	}
}

// create makes an instance that is closed when the test ends.
func (s *suite) create(t *testing.T, sp platform.Spec) platform.Instance {
	t.Helper()
	inst, err := s.p.Create(s.ctx(t), sp)
	if err != nil {
		t.Fatalf("Create(%s): %v", sp.Name, err)
	}
	if inst == nil {
		t.Fatalf("Create(%s) returned no instance and no error", sp.Name)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
		defer cancel()
		if err := inst.Close(ctx); err != nil {
			t.Errorf("Close(%s): %v", inst.ID(), err)
		}
	})
	return inst
}

// run execs argv and returns stdout and stderr.
func run(ctx context.Context, inst platform.Instance, stdin io.Reader, argv ...string) (string, string, error) {
	var out, errb syncBuffer
	err := inst.Exec(ctx, argv, platform.ExecIO{Stdin: stdin, Stdout: &out, Stderr: &errb})
	return out.String(), errb.String(), err
}

// mustRun execs argv and fails t unless it succeeds; it returns stdout.
func mustRun(t *testing.T, ctx context.Context, inst platform.Instance, argv ...string) string {
	t.Helper()
	out, errs, err := run(ctx, inst, nil, argv...)
	if err != nil {
		t.Fatalf("Exec %q: %v (stderr %q)", argv, err, errs)
	}
	return out
}

// testPrepare calls Prepare (for platforms that have it) twice: the second
// call must reuse what the first made.
func (s *suite) testPrepare(t *testing.T) {
	pr, ok := s.p.(platform.Preparer)
	if !ok {
		t.Skip("platform has no Prepare step")
	}
	ctx := s.ctx(t)
	for i := 0; i < 2; i++ {
		if err := pr.Prepare(ctx, s.opts.Image); err != nil {
			t.Fatalf("Prepare(%s) #%d: %v", s.opts.Image, i+1, err)
		}
	}
	if err := pr.Prepare(ctx, "no-such-profile"); err == nil {
		t.Error("Prepare of an unknown image profile succeeded")
	}
}

func (s *suite) testFacts(t *testing.T) {
	ctx := s.ctx(t)
	if s.p.Name() == "" {
		t.Error("Name() is empty")
	}
	f := s.p.Facts(ctx)
	if len(f) == 0 {
		t.Error("platform Facts are empty")
	}
	if e, ok := f["error"]; ok {
		t.Errorf("platform Facts report an error: %s", e)
	}
	t.Logf("platform facts: %v", f)
}

func (s *suite) testLimits(t *testing.T) {
	ctx := s.ctx(t)
	sp := s.spec()
	sp.CPUs = 1
	sp.Memory = 256 << 20
	inst := s.create(t, sp)
	check := s.opts.Limits
	if check == nil {
		check = CgroupLimits
	}
	if err := check(ctx, inst, sp.CPUs, sp.Memory); err != nil {
		t.Error(err)
	}
	f := inst.Facts(ctx)
	if len(f) == 0 {
		t.Error("instance Facts are empty")
	}
	if e, ok := f["error"]; ok {
		t.Errorf("instance Facts report an error: %s", e)
	}
	t.Logf("instance facts: %v", f)
	s.checkSwap(t, ctx, inst, sp.Memory, f)
}

// cgroupScript prints "v2", cpu.max and memory.max, or "v1", quota, period
// and memory limit, for the cgroup the instance sees as its own.
const cgroupScript = `if [ -f /sys/fs/cgroup/cpu.max ]; then echo v2; cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max; ` +
	`else echo v1; cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us /sys/fs/cgroup/memory/memory.limit_in_bytes; fi`

// CgroupLimits checks the limits a container sees in its own cgroup (v1 or
// v2 mounted at /sys/fs/cgroup) with busybox sh and cat.
func CgroupLimits(ctx context.Context, inst platform.Instance, cpus float64, memory int64) error {
	out, errs, err := run(ctx, inst, nil, "sh", "-c", cgroupScript)
	if err != nil {
		return fmt.Errorf("reading cgroup limits: %w (stderr %q)", err, errs)
	}
	gotCPU, gotMem, err := parseCgroupLimits(out)
	if err != nil {
		return err
	}
	if cpus > 0 && (gotCPU < cpus*0.99 || gotCPU > cpus*1.01) {
		return fmt.Errorf("cpu quota inside is %.3f cores, want %.3f (cgroup files: %q)", gotCPU, cpus, out)
	}
	// the kernel rounds the memory limit down to whole pages
	if memory > 0 && (gotMem > memory || gotMem < memory-64<<10) {
		return fmt.Errorf("memory limit inside is %d bytes, want %d (cgroup files: %q)", gotMem, memory, out)
	}
	return nil
}

// parseCgroupLimits reads cgroupScript's output; no limit is -1.
func parseCgroupLimits(out string) (cpus float64, memory int64, err error) {
	f := strings.Fields(out)
	bad := func(why string) (float64, int64, error) {
		return 0, 0, fmt.Errorf("cgroup limits: %s in %q", why, out)
	}
	num := func(s string) (int64, error) {
		if s == "max" {
			return -1, nil
		}
		return strconv.ParseInt(s, 10, 64)
	}
	if len(f) != 4 || (f[0] != "v1" && f[0] != "v2") {
		return bad("unexpected output")
	}
	q, e1 := num(f[1])
	per, e2 := num(f[2])
	mem, e3 := num(f[3])
	if e1 != nil || e2 != nil || e3 != nil || per <= 0 {
		return bad("unparsable numbers")
	}
	cpus = -1
	if q > 0 {
		cpus = float64(q) / float64(per)
	}
	if f[0] == "v1" && mem >= 1<<62 {
		mem = -1 // v1 says "unlimited" with a huge number
	}
	return cpus, mem, nil
}

// testExec runs commands in one instance: stdio, exit codes, CopyIn, the
// agent, the scratch dir and cancellation.
func (s *suite) testExec(t *testing.T) {
	inst := s.create(t, s.spec())
	if inst.ID() == "" {
		t.Error("ID() is empty")
	}
	t.Run("stdout_stderr", func(t *testing.T) {
		out, errs, err := run(s.ctx(t), inst, nil, "sh", "-c", "echo out; echo err >&2; echo out2")
		if err != nil {
			t.Fatal(err)
		}
		if out != "out\nout2\n" || errs != "err\n" {
			t.Errorf("stdout %q stderr %q, want %q and %q", out, errs, "out\nout2\n", "err\n")
		}
	})
	t.Run("no_stdio", func(t *testing.T) {
		if err := inst.Exec(s.ctx(t), []string{"true"}, platform.ExecIO{}); err != nil {
			t.Errorf("Exec(true) without stdio: %v", err)
		}
	})
	t.Run("stdin", func(t *testing.T) { s.execStdin(t, inst) })
	t.Run("interactive", func(t *testing.T) { s.execInteractive(t, inst) })
	t.Run("exit_code", func(t *testing.T) {
		_, _, err := run(s.ctx(t), inst, nil, "sh", "-c", "exit 3")
		var ee *platform.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("exit 3 gave %v (%T), want *platform.ExitError", err, err)
		}
		if ee.Code != 3 {
			t.Errorf("exit code %d, want 3", ee.Code)
		}
		_, _, err = run(s.ctx(t), inst, nil, "/no/such/command")
		if err == nil {
			t.Error("a command that does not exist succeeded")
		}
	})
	t.Run("copy_in", func(t *testing.T) { s.execCopyIn(t, inst) })
	t.Run("agent", func(t *testing.T) {
		out := mustRun(t, s.ctx(t), inst, platform.AgentPlaceholder, "agent", "hello")
		if !hasHello(out) {
			t.Errorf("{agent} agent hello printed %q, want a JSON line with event hello", out)
		}
	})
	t.Run("scratch", func(t *testing.T) {
		out := mustRun(t, s.ctx(t), inst, "sh", "-c", `test -n "$ISOBENCH_SCRATCH" && echo ok > "$ISOBENCH_SCRATCH/probe" && cat "$ISOBENCH_SCRATCH/probe" && rm "$ISOBENCH_SCRATCH/probe"`)
		if out != "ok\n" {
			t.Errorf("scratch dir probe printed %q", out)
		}
	})
	t.Run("cancel", func(t *testing.T) { s.execCancel(t, inst) })
}

// execStdin: a command reads its stdin to the end, 1 MiB of it intact.
func (s *suite) execStdin(t *testing.T, inst platform.Instance) {
	in := "line one\nline two\n"
	out, _, err := run(s.ctx(t), inst, strings.NewReader(in), "cat")
	if err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Errorf("cat echoed %q, want %q", out, in)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	out, _, err = run(s.ctx(t), inst, bytes.NewReader(big), "wc", "-c")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != strconv.Itoa(len(big)) {
		t.Errorf("wc -c of 1 MiB stdin says %q", out)
	}
	out, _, err = run(s.ctx(t), inst, bytes.NewReader(big), "sha256sum")
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256hex(big); !strings.HasPrefix(out, want) {
		t.Errorf("sha256sum of stdin inside %q, host %s", out, want)
	}
}

// execInteractive: the agent's barrier: the host answers a line it read, and
// keeps stdin open; the exec must end when the command does.
func (s *suite) execInteractive(t *testing.T, inst platform.Instance) {
	ctx := s.ctx(t)
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	var errb syncBuffer
	go func() {
		err := inst.Exec(ctx, []string{"sh", "-c", "echo ready; read x; echo got $x"}, platform.ExecIO{Stdin: inR, Stdout: outW, Stderr: &errb})
		outW.CloseWithError(io.EOF)
		done <- err
	}()
	br := bufio.NewReader(outR)
	line, err := br.ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("first line %q, %v (stderr %q)", line, err, errb.String())
	}
	if _, err := io.WriteString(inW, "go\n"); err != nil {
		t.Fatal(err)
	}
	line, err = br.ReadString('\n')
	if err != nil || line != "got go\n" {
		t.Fatalf("second line %q, %v", line, err)
	}
	go io.Copy(io.Discard, br)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Exec with stdin left open: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Exec did not return after the command ended while stdin stayed open")
	}
}

// execCopyIn: CopyIn creates the guest path's directories, sets the mode
// and overwrites an existing file.
func (s *suite) execCopyIn(t *testing.T, inst platform.Instance) {
	ctx := s.ctx(t)
	host := filepath.Join(t.TempDir(), "src")
	content := "conformance " + randomHex(8) + "\n"
	if err := os.WriteFile(host, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	guest := "/tmp/conformance-" + s.tag + "/sub/file.txt"
	if err := inst.CopyIn(ctx, host, guest, 0o750); err != nil {
		t.Fatalf("CopyIn: %v", err)
	}
	if got := mustRun(t, ctx, inst, "cat", guest); got != content {
		t.Errorf("copied file reads %q, want %q", got, content)
	}
	if got := strings.TrimSpace(mustRun(t, ctx, inst, "stat", "-c", "%a", guest)); got != "750" {
		t.Errorf("copied file mode %s, want 750", got)
	}
	// overwrite
	content2 := strings.Repeat("x", 100000)
	if err := os.WriteFile(host, []byte(content2), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := inst.CopyIn(ctx, host, guest, 0o644); err != nil {
		t.Fatalf("CopyIn over an existing file: %v", err)
	}
	if got := mustRun(t, ctx, inst, "cat", guest); got != content2 {
		t.Errorf("overwritten file has %d bytes, want %d", len(got), len(content2))
	}
}

// execCancel: cancelling Exec's context ends it with context.Canceled and
// leaves the instance usable.
func (s *suite) execCancel(t *testing.T, inst platform.Instance) {
	ctx, cancel := context.WithCancel(s.ctx(t))
	defer cancel()
	started := make(chan struct{})
	w := &signalWriter{ch: started}
	done := make(chan error, 1)
	go func() {
		done <- inst.Exec(ctx, []string{"sh", "-c", "echo started; exec sleep 100000"}, platform.ExecIO{Stdout: w})
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("sleep ended before it was cancelled: %v", err)
	case <-s.ctx(t).Done():
		t.Fatal("the command never started")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Exec returned %v, want an error wrapping context.Canceled", err)
		}
	case <-s.ctx(t).Done():
		t.Fatal("Exec did not return after its context was cancelled")
	}
	// Whether the command was killed is reported, not required: some
	// engines (docker with runtimes other than runc) cannot kill an
	// exec'd process.
	if ps, _, err := run(s.ctx(t), inst, nil, "ps", "-o", "args"); err == nil && strings.Contains(ps, "sleep 100000") {
		t.Logf("note: the cancelled command is still running inside the instance")
	}
	// the instance is still usable
	if out := mustRun(t, s.ctx(t), inst, "echo", "alive"); out != "alive\n" {
		t.Errorf("after a cancelled exec, echo printed %q", out)
	}
}

func (s *suite) testStorage(t *testing.T) {
	for _, mode := range []string{platform.StorageRootfs, platform.StorageVolume} {
		t.Run(mode, func(t *testing.T) {
			if !s.offersStorage(mode) {
				t.Skipf("platform does not offer storage=%s", mode)
			}
			sp := s.spec()
			sp.Storage = mode
			inst := s.create(t, sp)
			ctx := s.ctx(t)
			out := mustRun(t, ctx, inst, "sh", "-c", `cd "$ISOBENCH_SCRATCH" && dd if=/dev/zero of=f bs=64k count=16 2>/dev/null && wc -c < f && rm f`)
			if strings.TrimSpace(out) != strconv.Itoa(16*64<<10) {
				t.Errorf("writing 1 MiB into the scratch dir: wc says %q", out)
			}
			m, _, _ := run(ctx, inst, nil, "sh", "-c", `grep " $ISOBENCH_SCRATCH " /proc/mounts`)
			t.Logf("storage=%s: scratch mount: %q", mode, strings.TrimSpace(m))
		})
	}
}

func (s *suite) testNetwork(t *testing.T) {
	t.Run("bridge", func(t *testing.T) {
		if !s.offersNetwork(platform.NetBridge) {
			t.Skip("platform does not offer network=bridge")
		}
		sp := s.spec()
		sp.Network = platform.NetBridge
		inst := s.create(t, sp)
		ctx := s.ctx(t)
		addr, err := inst.Address(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ip := net.ParseIP(addr)
		if ip == nil || ip.IsLoopback() {
			t.Fatalf("bridge Address %q is not a non-loopback IP", addr)
		}
		s.serveAndFetch(t, ctx, inst, addr, 8080)
	})
	t.Run("host", func(t *testing.T) {
		if !s.offersNetwork(platform.NetHost) {
			t.Skip("platform does not offer network=host")
		}
		sp := s.spec()
		sp.Network = platform.NetHost
		inst := s.create(t, sp)
		ctx := s.ctx(t)
		addr, err := inst.Address(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ip := net.ParseIP(addr); ip == nil || !ip.IsLoopback() {
			t.Fatalf("host-network Address %q is not a loopback IP", addr)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		s.serveAndFetch(t, ctx, inst, addr, port)
	})
	t.Run("nat", func(t *testing.T) {
		sp := s.spec()
		sp.Network = platform.NetNAT
		port := 8080
		sp.Ports = []int{port}
		if !s.opts.NAT {
			ctx := s.ctx(t)
			inst, err := s.p.Create(ctx, sp)
			if err == nil {
				inst.Close(ctx)
				t.Fatal("network=nat was accepted by a platform that says it does not offer it")
			}
			if !errors.Is(err, platform.ErrUnsupported) {
				t.Errorf("network=nat refused with %v, want an error wrapping platform.ErrUnsupported", err)
			}
			return
		}
		inst := s.create(t, sp)
		ctx := s.ctx(t)
		if got := inst.Facts(ctx)["network"]; got != platform.NetNAT {
			t.Errorf("Facts network = %q, want nat", got)
		}
		ep, err := platform.Endpoint(ctx, inst, port)
		if err != nil {
			t.Fatal(err)
		}
		host, _, err := net.SplitHostPort(ep)
		if err != nil {
			t.Fatal(err)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			t.Fatalf("published endpoint %q is not on loopback", ep)
		}
		if ep == net.JoinHostPort(host, strconv.Itoa(port)) {
			t.Logf("published port %s is the instance's own port number", ep)
		}
		s.serveAndFetchAt(t, ctx, inst, ep, port)
	})
	t.Run("none", func(t *testing.T) {
		if !s.offersNetwork(platform.NetNone) {
			t.Skip("platform does not offer network=none")
		}
		sp := s.spec()
		sp.Network = platform.NetNone
		inst := s.create(t, sp)
		ctx := s.ctx(t)
		addr, err := inst.Address(ctx)
		if err != nil || addr != "" {
			t.Errorf("network=none Address = %q, %v; want \"\", nil", addr, err)
		}
		if out := strings.Fields(mustRun(t, ctx, inst, "ls", "/sys/class/net")); !slices.Equal(out, []string{"lo"}) {
			t.Errorf("network=none has interfaces %q, want only lo", out)
		}
	})
}

// serveAndFetch starts busybox httpd in inst on port and fetches a token
// from the host through addr.
func (s *suite) serveAndFetch(t *testing.T, ctx context.Context, inst platform.Instance, addr string, port int) {
	t.Helper()
	s.serveAndFetchAt(t, ctx, inst, net.JoinHostPort(addr, strconv.Itoa(port)), port)
}

// serveAndFetchAt starts busybox httpd in inst on port and fetches a token
// from the host at target (host:port).
func (s *suite) serveAndFetchAt(t *testing.T, ctx context.Context, inst platform.Instance, target string, port int) {
	t.Helper()
	token := "conformance-" + randomHex(8)
	dir := "/tmp/www-" + s.tag
	// The server runs in the background (busybox httpd in the foreground,
	// -f, or python3's on images without busybox) with its pid written down,
	// and is stopped when the test ends: on a platform whose instance is the
	// host (native, without a cgroup) nothing else would stop a server that
	// left the exec's process group. The fetch below waits for it to listen.
	mustRun(t, ctx, inst, "sh", "-c", fmt.Sprintf("mkdir -p %[3]s && echo %[1]s > %[3]s/index.html && cd %[3]s && if command -v httpd >/dev/null; then (httpd -f -p %[2]d -h %[3]s </dev/null >/dev/null 2>&1 & echo $! > %[3]s.pid); else (python3 -m http.server %[2]d </dev/null >/dev/null 2>&1 & echo $! > %[3]s.pid); fi", token, port, dir))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
		defer cancel()
		// runs before the instance's own cleanup (registered earlier)
		if err := inst.Exec(ctx, []string{"sh", "-c", fmt.Sprintf("kill $(cat %[1]s.pid) && rm -rf %[1]s %[1]s.pid", dir)}, platform.ExecIO{}); err != nil {
			t.Errorf("stopping the test's http server in the instance: %v", err)
		}
	})
	var lastErr error
	for ctx.Err() == nil {
		body, err := httpGet(ctx, s.opts.Dial, target)
		if err == nil {
			if !strings.Contains(body, token) {
				t.Fatalf("GET http://%s/ answered %q, want the token %s", target, body, token)
			}
			return
		}
		lastErr = err
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("could not fetch from the instance at %s: %v", target, lastErr)
}

// httpGet fetches / with a minimal HTTP/1.0 request.
func httpGet(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), target string) (string, error) {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	c, err := dial(ctx, "tcp", target)
	if err != nil {
		return "", err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if _, err := io.WriteString(c, "GET / HTTP/1.0\r\nHost: conformance\r\n\r\n"); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(c, 1<<20))
	if err != nil {
		return "", err
	}
	if !bytes.HasPrefix(b, []byte("HTTP/1.")) {
		return "", fmt.Errorf("not an HTTP answer: %q", b)
	}
	return string(b), nil
}

func (s *suite) testTwo(t *testing.T) {
	var insts [2]platform.Instance
	var errs [2]error
	var wg sync.WaitGroup
	specs := [2]platform.Spec{s.spec(), s.spec()}
	ctx := s.ctx(t)
	for i := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			insts[i], errs[i] = s.p.Create(ctx, specs[i])
		}()
	}
	wg.Wait()
	for i, inst := range insts {
		if inst != nil {
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
				defer cancel()
				if err := inst.Close(ctx); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
		}
		if errs[i] != nil {
			t.Fatalf("concurrent Create %d: %v", i, errs[i])
		}
	}
	a, b := insts[0], insts[1]
	if a.ID() == "" || a.ID() == b.ID() {
		t.Fatalf("instance IDs %q and %q are not distinct", a.ID(), b.ID())
	}
	mark := "marker-" + s.tag
	mustRun(t, ctx, a, "sh", "-c", `touch "$ISOBENCH_SCRATCH/`+mark+`"`)
	_, _, err := run(ctx, b, nil, "sh", "-c", `test -e "$ISOBENCH_SCRATCH/`+mark+`"`)
	var ee *platform.ExitError
	if !errors.As(err, &ee) || ee.Code != 1 {
		t.Errorf("a file written in one instance's scratch dir is visible in the other's (test -e gave %v)", err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if out := mustRun(t, ctx, b, "echo", "b"); out != "b\n" {
		t.Errorf("second instance after closing the first printed %q", out)
	}
}

func (s *suite) testMain(t *testing.T) {
	t.Run("agent_hello", func(t *testing.T) {
		ctx := s.ctx(t)
		var out syncBuffer
		var phases []string
		var times []time.Time
		var mu sync.Mutex
		sp := s.spec()
		sp.Main = []string{platform.AgentPlaceholder, "agent", "hello"}
		sp.MainStdout = &out
		sp.Phase = func(name string, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			phases = append(phases, name)
			times = append(times, at)
		}
		inst := s.create(t, sp)
		code, err := inst.Wait(ctx)
		if err != nil || code != 0 {
			t.Fatalf("Wait = %d, %v; want 0, nil", code, err)
		}
		if !hasHello(out.String()) {
			t.Errorf("main stdout %q has no hello event", out.String())
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(phases, []string{"created", "started"}) {
			t.Errorf("phases %q, want created then started", phases)
		} else if times[1].Before(times[0]) {
			t.Errorf("started (%v) before created (%v)", times[1], times[0])
		}
	})
	t.Run("exit_status", func(t *testing.T) {
		ctx := s.ctx(t)
		var out syncBuffer
		sp := s.spec()
		sp.Main = []string{"sh", "-c", "echo bye; echo noise >&2; exit 7"}
		sp.MainStdout = &out
		inst := s.create(t, sp)
		code, err := inst.Wait(ctx)
		if err != nil || code != 7 {
			t.Errorf("Wait = %d, %v; want 7, nil", code, err)
		}
		if out.String() != "bye\n" {
			t.Errorf("main stdout %q, want %q", out.String(), "bye\n")
		}
	})
	t.Run("no_stdout", func(t *testing.T) {
		ctx := s.ctx(t)
		sp := s.spec()
		sp.Main = []string{"sh", "-c", "echo ignored"}
		inst := s.create(t, sp)
		if code, err := inst.Wait(ctx); err != nil || code != 0 {
			t.Errorf("Wait = %d, %v; want 0, nil", code, err)
		}
	})
}

func (s *suite) testWaitIdle(t *testing.T) {
	ctx := s.ctx(t)
	inst := s.create(t, s.spec())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inst.Wait(ctx)
	}()
	select {
	case <-done:
		t.Fatal("Wait on an idle instance returned before it was closed")
	default:
	}
	if err := inst.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Wait on an idle instance did not return after Close")
	}
}

func (s *suite) testCloseTwice(t *testing.T) {
	ctx := s.ctx(t)
	inst, err := s.p.Create(ctx, s.spec())
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.Close(ctx); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := inst.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := inst.Exec(ctx, []string{"true"}, platform.ExecIO{}); err == nil {
		t.Error("Exec on a closed instance succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	inst2, err := s.p.Create(ctx, s.spec())
	if err != nil {
		t.Fatal(err)
	}
	if err := inst2.Close(cctx); err != nil {
		t.Errorf("Close with a cancelled context: %v (it must still clean up)", err)
	}
}

func (s *suite) testCreateError(t *testing.T) {
	ctx := s.ctx(t)
	sp := s.spec()
	sp.Network = "no-such-network-mode"
	if inst, err := s.p.Create(ctx, sp); err == nil {
		inst.Close(ctx)
		t.Error("Create with network=no-such-network-mode succeeded")
	}
	sp = s.spec()
	sp.Main = []string{"/no/such/binary"}
	sp.MainStdout = io.Discard
	if inst, err := s.p.Create(ctx, sp); err == nil {
		// a platform may only notice when the process runs
		code, werr := inst.Wait(ctx)
		inst.Close(ctx)
		if werr == nil && code == 0 {
			t.Error("a main process that does not exist exited 0")
		}
	}
}

// Confinement reads what /proc/self/status says about a process's
// confinement, as facts: cap_eff and cap_bnd (hex masks), seccomp (0 none,
// 1 strict, 2 filter) and no_new_privs (0 or 1).
func Confinement(status string) (map[string]string, error) {
	keys := map[string]string{"CapEff": "cap_eff", "CapBnd": "cap_bnd", "Seccomp": "seccomp", "NoNewPrivs": "no_new_privs"}
	f := map[string]string{}
	for _, l := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if fact, want := keys[k]; ok && want {
			f[fact] = strings.TrimSpace(v)
		}
	}
	for _, fact := range []string{"cap_eff", "cap_bnd", "seccomp"} {
		if f[fact] == "" {
			return f, fmt.Errorf("/proc/self/status has no %s line", fact)
		}
	}
	if f["no_new_privs"] == "" {
		f["no_new_privs"] = "0" // kernels before 4.10 do not say
	}
	return f, nil
}

func sha256hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func hasHello(out string) bool {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev struct{ Event string }
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Event == "hello" {
			return true
		}
	}
	return false
}

// syncBuffer is a bytes.Buffer safe for concurrent writers and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// signalWriter closes ch at its first write.
type signalWriter struct {
	once sync.Once
	ch   chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.ch) })
	return len(p), nil
}

// testFootprint checks an instance that reports its footprint (the
// platform.Footprinter interface): memory charged to it while a process
// runs in it, CPU that grows while it spins, disk that grows when it
// writes, engine processes that exist. A platform without Footprint skips
// (say why in the README).
func (s *suite) testFootprint(t *testing.T) {
	ctx := s.ctx(t)
	sp := s.spec()
	sp.Memory = 256 << 20 // native attributes footprint only to an instance with a cgroup
	inst := s.create(t, sp)
	fper, ok := inst.(platform.Footprinter)
	if !ok {
		t.Skipf("%s instances do not report a footprint", s.p.Name())
	}
	fp0, err := fper.Footprint(ctx)
	if err != nil {
		t.Fatalf("Footprint: %v", err)
	}
	t.Logf("footprint at start: memory %d KiB, cpu %.3f s, disk %d KiB, engine pids %v", fp0.MemoryBytes>>10, fp0.CPUSeconds, fp0.DiskBytes>>10, fp0.EnginePIDs)
	if fp0.MemoryBytes < 0 || fp0.CPUSeconds < 0 || fp0.DiskBytes < 0 {
		t.Errorf("footprint %+v: negative", fp0)
	}
	if s.opts.Dial == nil { // engine pids are this host's
		s.checkEnginePIDs(t, fper, fp0.EnginePIDs)
	}

	// 16 MiB written and synced to the scratch directory
	mustRun(t, ctx, inst, "sh", "-c", `dd if=/dev/zero of="$`+guestenv.ScratchEnv+`/footprint" bs=1048576 count=16 2>/dev/null && sync && echo ok`)
	fp1, err := fper.Footprint(ctx)
	if err != nil {
		t.Fatalf("Footprint after writing: %v", err)
	}
	if grew := fp1.DiskBytes - fp0.DiskBytes; s.opts.FootprintNoDisk != "" {
		t.Logf("disk grew %d KiB after writing 16 MiB (not checked: %s)", grew>>10, s.opts.FootprintNoDisk)
	} else if grew < 8<<20 {
		t.Errorf("disk grew %d KiB after writing and syncing 16 MiB in the instance's scratch directory (from %d to %d bytes)", grew>>10, fp0.DiskBytes, fp1.DiskBytes)
	}

	// a shell spinning, measured 2 s after it says it started (an exec
	// can take seconds to start on a loaded host), then cancelled; it
	// gets far more than the 0.1 s of CPU asked for
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan struct{})
	spun := make(chan error, 1)
	go func() {
		spun <- inst.Exec(sctx, []string{"sh", "-c", "echo spinning; while :; do :; done"}, platform.ExecIO{Stdout: &firstWrite{c: started}})
	}()
	select {
	case <-started:
	case err := <-spun:
		t.Fatalf("the spinning shell ended before it started: %v", err)
	case <-ctx.Done():
		t.Fatal("the spinning shell never started")
	}
	time.Sleep(2 * time.Second) // the window measured, not a synchronisation
	fp2, err := fper.Footprint(ctx)
	cancel()
	<-spun
	if err != nil {
		t.Fatalf("Footprint while spinning: %v", err)
	}
	if fp2.MemoryBytes <= 0 {
		t.Errorf("memory %d while a shell runs in the instance", fp2.MemoryBytes)
	}
	if used := fp2.CPUSeconds - fp1.CPUSeconds; used < 0.1 {
		t.Errorf("cpu grew %.3f s over 2 s of a spinning shell in the instance (from %.3f to %.3f)", used, fp1.CPUSeconds, fp2.CPUSeconds)
	}
	t.Logf("footprint while spinning: memory %d KiB, cpu %.3f s, disk %d KiB", fp2.MemoryBytes>>10, fp2.CPUSeconds, fp2.DiskBytes>>10)
}

// checkEnginePIDs checks that the engine processes a footprint named
// exist. A process can end between the footprint and the check (an
// engine's short-lived helper, seen once from gVisor's `runsc run` on a
// loaded CI host), so a pid found gone is an error only if a second
// footprint, taken after it was found gone, names it again: a pid that
// never existed is named every time.
func (s *suite) checkEnginePIDs(t *testing.T, fper platform.Footprinter, pids []int) {
	t.Helper()
	gone := missingPIDs(pids, hostos.ProcExists)
	if len(gone) == 0 {
		return
	}
	fp, err := fper.Footprint(s.ctx(t))
	if err != nil {
		t.Fatalf("Footprint: %v", err)
	}
	bogus, ended := splitGone(gone, fp.EnginePIDs)
	for _, pid := range bogus {
		t.Errorf("engine pid %d: no such process, and named again by a second footprint (%v)", pid, fp.EnginePIDs)
	}
	for _, pid := range ended {
		t.Logf("engine pid %d ended between the footprint and its check (a second footprint names %v)", pid, fp.EnginePIDs)
	}
}

// missingPIDs returns the pids for which exists is false.
func missingPIDs(pids []int, exists func(int) bool) []int {
	var out []int
	for _, pid := range pids {
		if !exists(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// splitGone splits pids found gone into those a later footprint names
// again (bogus: the platform reports a process that does not exist) and
// those it no longer names (ended: a process that existed and exited).
func splitGone(gone, later []int) (bogus, ended []int) {
	for _, pid := range gone {
		if slices.Contains(later, pid) {
			bogus = append(bogus, pid)
		} else {
			ended = append(ended, pid)
		}
	}
	return bogus, ended
}

// firstWrite closes c at its first write.
type firstWrite struct {
	c    chan struct{}
	once sync.Once
}

func (w *firstWrite) Write(b []byte) (int, error) {
	w.once.Do(func() { close(w.c) })
	return len(b), nil
}
