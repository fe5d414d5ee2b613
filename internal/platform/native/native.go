// Package native runs workloads as plain host processes: the baseline every
// other platform is compared with. With cpus or memory set, the processes
// run inside a cgroup with those limits, entered before their first
// instruction (via "isobench agent cgexec").
package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/blockdev"
	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/instguard"
	"github.com/isobench/isobench/internal/privdir"
	"github.com/isobench/isobench/internal/spec"
)

// Factory registers the native platform.
var Factory = platform.Factory{
	Name: "native",
	// the instance is the host itself
	IsHost: true,
	Help:   "processes on the host (the baseline); cpus/memory via a cgroup; read-iops=N, read-bps=SIZE throttle reads from the scratch directory's disk (a blkio/io cgroup limit); network=host only",
	Extra:  blockdev.ThrottleKeys,
	New:    New,
	Cost:   platform.Cost{Instance: 50 * time.Millisecond},
	// scratch directories, their cgroups and agents (sweep.go)
	Sweep: Sweep,
}

// Platform is the native platform.
type Platform struct {
	env      platform.Env
	base     platform.Spec
	throttle blockdev.Throttle

	appletsOnce sync.Once
	appletDir   string
}

// New checks the options: native has only the host's network and file system.
func New(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
	if n := o.Base.Network; n != "" && n != platform.NetHost {
		return nil, fmt.Errorf("native: network=%s is %w (native processes use the host's network; use network=host or leave it out)", n, platform.ErrUnsupported)
	}
	if env.AgentBinary == "" {
		return nil, errors.New("native: no agent binary")
	}
	t, err := blockdev.ParseThrottle(o.Extra, spec.ParseSize)
	if err != nil {
		return nil, fmt.Errorf("native: %w", err)
	}
	return &Platform{env: env, base: o.Base, throttle: t}, nil
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "native" }

// Available is always nil: the host is always there.
func (p *Platform) Available(ctx context.Context) error { return nil }

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	return map[string]string{"cgroup_version": strconv.Itoa(cgroup.Version()), "goarch": runtime.GOARCH}
}

// Close implements platform.Platform.
func (p *Platform) Close(ctx context.Context) error { return nil }

// Create makes a scratch directory and, with limits, accounting or
// Spec.CPUGroup, a cgroup.
func (p *Platform) Create(ctx context.Context, s platform.Spec) (platform.Instance, error) {
	if s.Network != "" && s.Network != platform.NetHost {
		return nil, fmt.Errorf("native: network=%s is %w", s.Network, platform.ErrUnsupported)
	}
	// the name is fixed, in a directory anyone can write to: what is
	// found there is used only when it is ours (privdir: a real directory
	// of this user's no one else can write to), else refused rather than
	// let root's workloads write where its owner, or a link, points.
	// Others may search it (services drop to www-data), not list it.
	base := filepath.Join(os.TempDir(), "isobench-native")
	if err := privdir.Make(base, 0o711); err != nil {
		return nil, fmt.Errorf("native: scratch directories: %w", err)
	}
	dir, err := os.MkdirTemp(base, sanitize(s.Name)+"-")
	if err != nil {
		return nil, fmt.Errorf("native: %w", err)
	}
	in := &Instance{p: p, spec: s, dir: dir, done: make(chan struct{}), created: map[string]bool{}}
	if s.CPUs > 0 || s.Memory > 0 || s.Accounting || s.CPUGroup || p.throttle.Set() {
		l := cgroup.Limits{CPUs: s.CPUs, Memory: s.Memory, ReadIOPS: p.throttle.ReadIOPS, ReadBPS: p.throttle.ReadBPS}
		if p.throttle.Set() {
			d, err := blockdev.Of(dir)
			if err != nil {
				os.RemoveAll(dir)
				return nil, fmt.Errorf("native: read-iops/read-bps: the scratch directory %s: %w", dir, err)
			}
			l.IODisk, in.disk = d.MajMin, d.Node
		}
		g, err := cgroup.New(filepath.Base(dir), l)
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("native: %w", err)
		}
		in.cg = g
	}
	if s.Phase != nil {
		s.Phase("created", time.Now())
	}
	if len(s.Main) > 0 {
		cmd := in.command(context.Background(), s.Main, platform.ExecIO{Stdout: s.MainStdout})
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			in.Close(ctx)
			return nil, fmt.Errorf("native: start main process: %w", err)
		}
		in.main = cmd
		go func() {
			err := cmd.Wait()
			in.mainErr = err
			close(in.done)
		}()
	}
	if s.Phase != nil {
		s.Phase("started", time.Now())
	}
	return in, nil
}

func sanitize(s string) string {
	if s == "" {
		return "inst"
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '.' || r == ' ' {
			return '-'
		}
		return r
	}, s)
}

// Instance is a scratch dir, an optional cgroup and the processes in it.
type Instance struct {
	p       *Platform
	spec    platform.Spec
	dir     string
	disk    string // the throttled disk's node (read-iops/read-bps)
	cg      *cgroup.Group
	main    *exec.Cmd
	mainErr error
	done    chan struct{}

	mu          sync.Mutex
	closed      bool
	created     map[string]bool // files CopyIn created on the host
	createdDirs []string        // directories CopyIn created, parents first
}

// ID is the scratch directory's name.
func (in *Instance) ID() string { return filepath.Base(in.dir) }

func (in *Instance) command(ctx context.Context, argv []string, stdio platform.ExecIO) *exec.Cmd {
	argv = platform.AgentArgv(argv, in.p.env.AgentBinary)
	if in.cg != nil {
		wrapped := []string{in.p.env.AgentBinary, "agent", "cgexec"}
		wrapped = append(wrapped, in.cg.ProcsFiles()...)
		argv = append(append(wrapped, "--"), argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = in.dir
	cmd.Env = in.p.environ(in.dir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// environ is the host's environment with the scratch dir, and the host's
// static busybox applets at the end of PATH, so the tools every image has
// (httpd, nc...) exist on native too while host binaries take precedence.
func (p *Platform) environ(scratch string) []string {
	env := []string{guestenv.ScratchEnv + "=" + scratch}
	path := os.Getenv("PATH")
	if dir := p.applets(); dir != "" {
		path += ":" + dir
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, guestenv.ScratchEnv+"=") {
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+path)
}

// applets makes (once) a directory of links to the host's static busybox.
func (p *Platform) applets() string {
	p.appletsOnce.Do(func() {
		bb := ""
		for _, c := range image.BusyboxCandidates {
			if _, err := os.Stat(c); err == nil {
				bb = c
				break
			}
		}
		if bb == "" || p.env.StateDir == "" {
			return
		}
		dir := filepath.Join(p.env.StateDir, "native-applets")
		out, err := exec.Command(bb, "--list").Output()
		if err != nil || os.MkdirAll(dir, 0o755) != nil {
			return
		}
		for _, a := range strings.Fields(string(out)) {
			link := filepath.Join(dir, a)
			if _, err := os.Lstat(link); err != nil {
				os.Symlink(bb, link)
			}
		}
		p.appletDir = dir
	})
	return p.appletDir
}

// Exec runs argv on the host, in the instance's cgroup and scratch dir.
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if len(argv) == 0 {
		return errors.New("native: empty command")
	}
	// A stdin that is not a file gets a pipe of our own: os/exec would
	// otherwise wait for its copying goroutine, which blocks in Read for as
	// long as the caller keeps stdin open, even after the command exited.
	var stdinW *os.File
	if stdio.Stdin != nil {
		if _, isFile := stdio.Stdin.(*os.File); !isFile {
			r, w, err := os.Pipe()
			if err != nil {
				return fmt.Errorf("native: %w", err)
			}
			go func(src io.Reader) {
				io.Copy(w, src)
				w.Close()
			}(stdio.Stdin)
			stdio.Stdin, stdinW = r, w
			defer r.Close()
		}
	}
	cmd := hostos.OwnProcessGroup(in.command(ctx, argv, stdio))
	cmd.Cancel = hostos.KillGroup(cmd)
	err := cmd.Run()
	if stdinW != nil {
		stdinW.Close() // the copier ends at its next write
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return &platform.ExitError{Code: ee.ExitCode(), Argv: argv}
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("native: %w", ctx.Err())
		}
		return fmt.Errorf("native: %w", err)
	}
	return nil
}

// CopyIn copies a host file to guestPath, which on native is a host path.
// Missing parent directories are created; it refuses to overwrite a host
// file it did not create itself, and removes what it created on Close.
func (in *Instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	guestPath = filepath.Clean(guestPath)
	in.mu.Lock()
	own := in.created[guestPath]
	in.mu.Unlock()
	if _, err := os.Lstat(guestPath); err == nil && !own {
		return fmt.Errorf("native: copy in: %s already exists on the host; native refuses to overwrite host files", guestPath)
	}
	if err := in.mkdirs(filepath.Dir(guestPath)); err != nil {
		return fmt.Errorf("native: copy in: %w", err)
	}
	src, err := os.Open(hostPath)
	if err != nil {
		return fmt.Errorf("native: copy in: %w", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(guestPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, os.FileMode(mode))
	if err != nil {
		return fmt.Errorf("native: copy in: %w", err)
	}
	in.mu.Lock()
	in.created[guestPath] = true
	in.mu.Unlock()
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return fmt.Errorf("native: copy in: %w", err)
	}
	if err := dst.Close(); err != nil {
		return fmt.Errorf("native: copy in: %w", err)
	}
	return os.Chmod(guestPath, os.FileMode(mode))
}

// mkdirs creates dir and its missing parents, remembering each one it made.
func (in *Instance) mkdirs(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		in.mu.Lock()
		in.createdDirs = append(in.createdDirs, missing[i])
		in.mu.Unlock()
	}
	return nil
}

// Address is the host's loopback.
func (in *Instance) Address(ctx context.Context) (string, error) { return "127.0.0.1", nil }

// Facts implements platform.Instance.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"network": platform.NetHost, "storage": "host-dir", "scratch": in.dir, "cpu_group": "host"}
	if in.cg != nil {
		f["cpu_group"] = "own" // a cgroup of its own (limits, accounting or Spec.CPUGroup)
	}
	if in.spec.CPUs > 0 {
		f["cpus"] = strconv.FormatFloat(in.spec.CPUs, 'f', -1, 64)
	}
	if in.spec.Memory > 0 {
		f["memory"] = strconv.FormatInt(in.spec.Memory, 10)
		cgroup.SwapFacts(f, in.spec.Memory) // the cgroup allows no swap beyond it
	}
	if t := in.p.throttle; t.Set() {
		f["io_disk"] = in.disk
		if t.ReadIOPS > 0 {
			f["read_iops_limit"] = strconv.FormatInt(t.ReadIOPS, 10)
		}
		if t.ReadBPS > 0 {
			f["read_bps_limit"] = strconv.FormatInt(t.ReadBPS, 10)
		}
	}
	return f
}

// Wait waits for the main process, or for Close when there is none.
func (in *Instance) Wait(ctx context.Context) (int, error) {
	select {
	case <-in.done:
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	if in.main == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if errors.As(in.mainErr, &ee) {
		return ee.ExitCode(), nil
	}
	if in.mainErr != nil {
		return -1, in.mainErr
	}
	return 0, nil
}

// Close kills what runs in the instance and removes its files and cgroup.
func (in *Instance) Close(ctx context.Context) error {
	if !instguard.First(&in.mu, &in.closed) {
		return nil
	}
	var errs []error
	if in.main != nil && in.main.Process != nil {
		syscall.Kill(-in.main.Process.Pid, syscall.SIGKILL)
		<-in.done
	} else {
		close(in.done)
	}
	if err := in.cg.Remove(); err != nil {
		errs = append(errs, err)
	}
	for f := range in.created {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for i := len(in.createdDirs) - 1; i >= 0; i-- {
		os.Remove(in.createdDirs[i]) // only if empty: the instance may have shared it
	}
	if err := os.RemoveAll(in.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
