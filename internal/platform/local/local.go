// Package local holds what the platforms that run a root file system
// directory on this host share: runc, crun, systemd-nspawn and LXC. It
// builds each image profile's root file system once per content digest,
// gives every instance an overlay on top of it, makes network namespaces
// with a veth on the isobench bridge, runs and cancels host commands, and
// lists what such instances may leave behind.
package local

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
)

// Prefix starts the name of everything these platforms create on the host
// (containers, network namespaces, cgroups, instance directories), followed
// by a one-letter platform code and a random hex id.
const Prefix = "isob-"

// VethPrefix starts the host side of every veth these platforms create
// (followed by the platform code and the id; 12 characters in all).
const VethPrefix = "isv"

// Rootfs builds and caches image profiles' root file systems under
// StateDir/rootfs/<profile>-<digest>. It is safe for concurrent use, also
// by several processes (trees are built aside and renamed into place).
type Rootfs struct {
	Env platform.Env

	mu   sync.Mutex
	dirs map[string]string
}

// Dir returns the profile's root file system directory, building it when
// no tree exists for the current content digest.
func (r *Rootfs) Dir(ctx context.Context, profile string) (string, error) {
	if profile == "" {
		profile = image.Minimal
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.dirs[profile]; ok {
		if _, err := os.Stat(d); err == nil {
			return d, nil
		}
	}
	if r.Env.StateDir == "" {
		return "", errors.New("no state directory to keep root file systems in")
	}
	b := image.Builder{AgentBinary: r.Env.AgentBinary, StateDir: r.Env.StateDir, Log: r.Env.Log}
	digest, err := b.Digest(profile)
	if err != nil {
		return "", err
	}
	base := filepath.Join(r.Env.StateDir, "rootfs")
	dir := filepath.Join(base, profile+"-"+digest)
	// the trees are 0755 (an overlay's root takes its lower tree's mode);
	// the directory holding them is private
	if err := PrivateDir(base); err != nil {
		return "", fmt.Errorf("rootfs: %w", err)
	}
	if _, err := os.Stat(dir); err != nil {
		tmp, err := os.MkdirTemp(base, ".build-"+profile+"-")
		if err != nil {
			return "", fmt.Errorf("rootfs: %w", err)
		}
		start := time.Now()
		if err := b.BuildRootfs(ctx, profile, tmp); err != nil {
			os.RemoveAll(tmp)
			return "", err
		}
		if r.Env.Log != nil {
			fmt.Fprintf(r.Env.Log, "built the %s root file system in %s (%v)\n", profile, dir, time.Since(start).Round(time.Millisecond))
		}
		os.Chmod(tmp, 0o755)
		if err := os.Rename(tmp, dir); err != nil {
			os.RemoveAll(tmp)
			if _, serr := os.Stat(dir); serr != nil { // not a concurrent build
				return "", fmt.Errorf("rootfs: %w", err)
			}
		}
	}
	if r.dirs == nil {
		r.dirs = map[string]string{}
	}
	r.dirs[profile] = dir
	return dir, nil
}

// NewID returns a fresh instance id: Prefix, the platform code and 8 hex
// digits, e.g. "isob-r0a1b2c3d".
func NewID(code string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return Prefix + code + hex.EncodeToString(b)
}

// ShortID is the part of an id after Prefix (the code and the hex digits).
func ShortID(id string) string { return strings.TrimPrefix(id, Prefix) }

// InstanceDir is where an instance's files (overlay layers, bundle, volume)
// live: StateDir/instances/<id>.
func InstanceDir(stateDir, id string) string {
	return filepath.Join(stateDir, "instances", id)
}

// Overlay is an overlayfs mount: the shared read-only rootfs below, an
// instance's upper and work directories on top.
type Overlay struct {
	Merged string // the mount point, the instance's root
	dir    string
}

// MountOverlay mounts lower under dir/upper+work at dir/rootfs.
func MountOverlay(lower, dir string) (*Overlay, error) {
	o := &Overlay{Merged: filepath.Join(dir, "rootfs"), dir: dir}
	for _, d := range []string{"upper", "work", "rootfs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("overlay: %w", err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, filepath.Join(dir, "upper"), filepath.Join(dir, "work"))
	if err := syscall.Mount("overlay", o.Merged, "overlay", 0, opts); err != nil {
		return nil, fmt.Errorf("overlay: mount %s: %w", o.Merged, err)
	}
	return o, nil
}

// Unmount unmounts the overlay (lazily if it is still busy); a second call
// does nothing.
func (o *Overlay) Unmount() error {
	if o == nil {
		return nil
	}
	return Unmount(o.Merged)
}

// Unmount unmounts path if it is a mount point, detaching it when busy.
func Unmount(path string) error {
	for attempt := 0; attempt < 20; attempt++ {
		err := syscall.Unmount(path, 0)
		if err == nil {
			continue // maybe stacked: go again until EINVAL
		}
		if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
			return nil // not (any more) a mount point
		}
		if errors.Is(err, syscall.EBUSY) {
			time.Sleep(20 * time.Millisecond)
			if attempt > 10 {
				if err := syscall.Unmount(path, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
					return fmt.Errorf("unmount %s: %w", path, err)
				}
				return nil
			}
			continue
		}
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	return nil
}

// Env is the environment every command in an instance gets.
func Env() []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root",
		guestenv.ScratchEnv + "=" + guestenv.ScratchDir,
	}
}

// GuestArgv replaces "{agent}" as argv[0] with image.AgentPath.
func GuestArgv(argv []string) []string { return platform.AgentArgv(argv, image.AgentPath) }

// ConfinedArgv runs argv (GuestArgv) under "isobench agent confine": with
// Docker's default seccomp filter and capabilities, for engines that
// cannot give a workload Docker's confinement themselves (LXC, LXD,
// nspawn; see internal/confine).
func ConfinedArgv(argv []string) []string {
	return append([]string{image.AgentPath, "agent", "confine", "--"}, GuestArgv(argv)...)
}

// MainArgv is the instance's main process: Spec.Main or the idling agent.
func MainArgv(s platform.Spec) []string {
	if len(s.Main) > 0 {
		return GuestArgv(s.Main)
	}
	return []string{image.AgentPath, "agent", "idle"}
}

// Descendants lists the pids of pid's descendants, deepest last.
func Descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := hostos.ParentPID(p); pp > 0 {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// KillTree kills pid's descendants and then pid.
func KillTree(pid int) {
	for _, d := range Descendants(pid) {
		syscall.Kill(d, syscall.SIGKILL)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// Run runs cmd, mapping a non-zero exit to *platform.ExitError for argv and
// a cancelled ctx to an error wrapping ctx.Err(). cmd must have been made
// with exec.CommandContext(ctx, ...); Run makes cancellation kill its
// whole process tree, since the engines' helpers (nsenter, lxc-attach)
// fork the command rather than exec it.
func Run(ctx context.Context, cmd *exec.Cmd, argv []string, what string) error {
	var stderr bytes.Buffer
	if cmd.Stderr == nil {
		cmd.Stderr = &limitWriter{w: &stderr, n: 4096}
	}
	hostos.OwnProcessGroup(cmd) // Ctrl-C reaches isobench, not the engine's helper
	cmd.Cancel = func() error {
		KillTree(cmd.Process.Pid)
		return nil
	}
	cmd.WaitDelay = 2 * time.Second
	// os/exec waits for its stdin copier, which blocks in Read while the
	// caller keeps stdin open after the command ended (the agent barrier
	// does): feed stdin through a pipe of our own and stop at exit
	var stdinW *os.File
	if src := cmd.Stdin; src != nil {
		if _, isFile := src.(*os.File); !isFile {
			r, w, err := os.Pipe()
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			cmd.Stdin, stdinW = r, w
			defer r.Close()
			go func() {
				io.Copy(w, src)
				w.Close()
			}()
		}
	}
	err := cmd.Run()
	if stdinW != nil {
		stdinW.Close() // the copier's next write fails and it returns
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return &platform.ExitError{Code: 128 + int(st.Signal()), Argv: argv}
		}
		return &platform.ExitError{Code: ee.ExitCode(), Argv: argv}
	}
	if err != nil {
		return fmt.Errorf("%s: %w %s", what, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// limitWriter keeps the first n bytes written to it.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		q := p
		if len(q) > l.n {
			q = q[:l.n]
		}
		l.w.Write(q)
		l.n -= len(q)
	}
	return len(p), nil
}

// Output runs a host command and returns its combined output, with the
// output in the error.
func Output(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// ExitStatus turns cmd.Wait's error into an exit status: the exit code, or
// 128+signal when killed by a signal.
func ExitStatus(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return -1, err
}

// TestStateDir is the state directory the tests of the packages using this
// one share, so that their bridge leases (kept per state directory by
// hostnet) do not collide when the packages are tested in parallel. It
// also keeps the built root file system between test runs.
//
// The name is fixed, so what is found there is checked (PrivateDir: a
// directory of this user's, made private) before it is used; when it
// fails the check a fresh private directory is used instead.
func TestStateDir() string {
	dir := filepath.Join(os.TempDir(), "isobench-local-platforms-test")
	if err := PrivateDir(dir); err != nil {
		if fresh, err := os.MkdirTemp("", "isobench-local-platforms-test-"); err == nil {
			return fresh
		}
	}
	return dir
}

// TailBuffer is platform.TailBuffer (kept here for this package's users).
type TailBuffer = platform.TailBuffer

// CopyIn is platform.CopyIn.
func CopyIn(ctx context.Context, exec ExecFunc, what, hostPath, guestPath string, mode uint32) error {
	return platform.CopyIn(ctx, exec, what, hostPath, guestPath, mode)
}
