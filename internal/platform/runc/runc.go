// Package runc runs instances with an OCI runtime binary called directly,
// without a daemon: runc, or crun (two factories, one implementation
// parameterised by the binary).
//
// Each instance is an OCI bundle under StateDir/instances/<id>: a
// config.json generated here and an overlayfs root (the profile's shared
// root file system below, the instance's upper directory on top). The
// runtime's state lives under /run/isobench/<runtime>, so it is gone after
// a reboot like the containers themselves.
//
// The main process runs under `<runtime> run` in the foreground rather than
// `create` + `start`: a detached container's init is reparented away from
// isobench, and only its parent can learn its exit status (containerd and
// conmon are subreapers for that reason). The two phases are still
// observed: OCI hooks on the host (createRuntime, after the namespaces and
// cgroup exist and before the process is started; poststart, after it
// started) write to a FIFO isobench reads.
//
// crun 1.8 refuses a hybrid cgroup host (v1 controllers plus a cgroup2
// "unified" mount at /sys/fs/cgroup/unified). Every crun call therefore
// runs in a private mount namespace where that mount is unmounted
// (`unshare -m sh -c 'umount /sys/fs/cgroup/unified; exec crun ...'`);
// crun then sees and uses plain cgroup v1. The host's mounts are untouched.
package runc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
)

// RuncFactory registers the runc platform.
var RuncFactory = platform.Factory{
	Name: "runc",
	Help: "OCI bundles run by runc directly (no daemon); overlay rootfs; network=bridge (default, so network workloads run), none or host; " +
		"Docker's default seccomp profile and capabilities (seccomp=unconfined turns the profile off)",
	Extra: []string{"seccomp"},
	New: func(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
		return New(ctx, "runc", o, env)
	},
	Cost:  platform.Cost{Instance: 300 * time.Millisecond},
	Sweep: local.Sweep(Traits("runc")),
}

// CrunFactory registers the crun platform.
var CrunFactory = platform.Factory{
	Name: "crun",
	Help: "OCI bundles run by crun directly (no daemon); overlay rootfs; network=bridge (default, so network workloads run), none or host; " +
		"Docker's default seccomp profile and capabilities (seccomp=unconfined turns the profile off)",
	Extra: []string{"seccomp"},
	New: func(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
		return New(ctx, "crun", o, env)
	},
	Cost:  platform.Cost{Instance: 250 * time.Millisecond},
	Sweep: local.Sweep(Traits("crun")),
}

// Traits are what runtime's ("runc" or "crun") instances leave besides
// what every local instance does: its foreground process (`<runtime>
// run`) and its state under its --root, hostnet.RunDir/<runtime>.
func Traits(runtime string) local.Traits {
	return local.Traits{Code: codes[runtime], Engines: []string{runtime}, Runtime: runtime}
}

// codes are the runtimes' letters after local.Prefix.
var codes = map[string]string{"runc": "r", "crun": "c"}

// Platform runs OCI bundles with one runtime binary.
type Platform struct {
	*local.Host
	runtime string // "runc" or "crun"
	root    string // the runtime's --root state directory
	seccomp bool   // Docker's default seccomp profile in every bundle
}

// Seccomp option values.
const (
	SeccompDefault    = "default"    // Docker's default profile (the default)
	SeccompUnconfined = "unconfined" // no seccomp filter, like docker --security-opt seccomp=unconfined
)

// ParseSeccomp reads the seccomp option: whether to apply Docker's default
// profile.
func ParseSeccomp(name, v string) (bool, error) {
	switch v {
	case "", SeccompDefault:
		return true, nil
	case SeccompUnconfined:
		return false, nil
	}
	return false, fmt.Errorf("%s: seccomp=%q must be default or unconfined", name, v)
}

// New makes a platform for runtime ("runc" or "crun").
func New(ctx context.Context, runtime string, o platform.Options, env platform.Env) (*Platform, error) {
	code := codes[runtime]
	if code == "" {
		return nil, fmt.Errorf("runc: unknown OCI runtime %q (known: runc, crun)", runtime)
	}
	h, err := local.NewNetHost(runtime, code, o, env)
	if err != nil {
		return nil, err
	}
	sc, err := ParseSeccomp(runtime, o.Extra["seccomp"])
	if err != nil {
		return nil, err
	}
	return &Platform{Host: h, runtime: runtime, root: filepath.Join(hostnet.RunDir, runtime), seccomp: sc}, nil
}

// hybridCgroups reports a cgroup v1 host with a cgroup2 "unified" mount.
func hybridCgroups() bool {
	var st syscall.Statfs_t
	return cgroup.Version() == 1 && syscall.Statfs("/sys/fs/cgroup/unified", &st) == nil && st.Type == 0x63677270
}

// command returns the argv that runs the runtime with args.
func (p *Platform) command(args ...string) []string {
	argv := append([]string{p.runtime, "--root", p.root}, args...)
	if p.runtime == "crun" && hybridCgroups() {
		return append([]string{"unshare", "-m", "sh", "-c", `umount /sys/fs/cgroup/unified 2>/dev/null; exec "$0" "$@"`}, argv...)
	}
	return argv
}

// Available checks the runtime binary (and, for crun, that it runs here).
func (p *Platform) Available(ctx context.Context) error {
	if _, err := exec.LookPath(p.runtime); err != nil {
		return fmt.Errorf("%s is not installed: apt-get install -y %s", p.runtime, p.runtime)
	}
	if err := p.CheckOverlay(); err != nil {
		return err
	}
	if p.runtime == "crun" {
		if hybridCgroups() {
			if _, err := exec.LookPath("unshare"); err != nil {
				return errors.New("crun: the cgroup hierarchy is hybrid and unshare(1) is missing to hide cgroup2 from crun: apt-get install -y util-linux")
			}
		}
		if err := os.MkdirAll(p.root, 0o700); err != nil {
			return fmt.Errorf("crun: %w", err)
		}
		argv := p.command("list")
		if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("crun does not work here (%s: %v: %s); reinstall it with apt-get install -y crun", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := p.HostFacts(ctx, p.runtime+"_version", p.runtime+" version", p.runtime, "--version")
	f["runtime"] = p.runtime
	if hybridCgroups() {
		f["cgroup_hybrid"] = "true"
	}
	return f
}

// Create writes the bundle and starts `<runtime> run`, returning once the
// main process has started (or already ended).
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	in := &Instance{p: p}
	in.Instance, err = p.Begin(ctx, s, local.Setup{DefaultNetwork: platform.NetBridge, Netns: true, PhaseFIFO: true}, in)
	if err != nil {
		return nil, err
	}
	defer in.Undo(ctx, &err)
	b := Bundle{ID: in.ID(), Rootfs: in.Overlay.Merged, Volume: in.Volume, HostNet: in.Network == platform.NetHost, PhaseFIFO: in.PhaseFIFO, Seccomp: p.seccomp}
	if in.Netns != nil {
		b.NetnsPath = in.Netns.Path()
	}
	if err := b.Write(in.Dir, s); err != nil {
		return nil, fmt.Errorf("%s: %w", p.runtime, err)
	}
	if err := os.MkdirAll(p.root, 0o700); err != nil {
		return nil, fmt.Errorf("%s: %w", p.runtime, err)
	}
	// the main process's stdout and stderr are the runtime's own (no
	// terminal: stdio is passed through); pipes we own end when it ends
	argv := p.command("run", "--bundle", in.Dir, in.ID())
	if err := in.Start(exec.Command(argv[0], argv[1:]...)); err != nil {
		return nil, err
	}
	started, err := in.WaitPhase(ctx, "started")
	switch {
	case err != nil:
		return nil, err
	case started:
		// both runtimes write their state before the poststart hooks;
		// checking that it reads back (normally one call) makes an Exec
		// right after Create safe regardless
		if err := in.waitState(ctx); err != nil {
			return nil, err
		}
	case len(s.Main) == 0:
		return nil, in.EndedAtOnce("")
	}
	return in, nil // a short main process's status is Wait's
}

// waitState polls "<runtime> state" until the container's state can be
// read (or the main process ended), so an Exec right after Create works.
func (in *Instance) waitState(ctx context.Context) error {
	var last []byte
	for i := 0; ; i++ {
		full := in.p.command("state", in.ID())
		cmd := exec.CommandContext(ctx, full[0], full[1:]...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err == nil {
			var st struct {
				Pid int `json:"pid"`
			}
			if json.Unmarshal(out, &st) == nil {
				in.initPid = st.Pid
			}
			return nil
		}
		last = append(out, errb.Bytes()...)
		select {
		case <-in.Done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%s state %s: %w: %s", in.p.runtime, in.ID(), ctx.Err(), last)
		case <-time.After(time.Duration(min(i+1, 20)) * time.Millisecond):
		}
	}
}

// Instance is one OCI container; its id is "isob-r..." or "isob-c...".
type Instance struct {
	*local.Instance
	p       *Platform
	initPid int // the container's init (the main process), from the runtime's state
}

// Exec runs argv in the container with `<runtime> exec`, stdio passed
// through; cancelling ctx kills it.
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if err := in.CheckExec(argv); err != nil {
		return err
	}
	// no --no-new-privs: Docker's exec, like its containers, leaves
	// no_new_privs unset
	full := in.p.command(ExecArgs(in.ID(), argv)...)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	return local.Run(ctx, cmd, argv, in.p.runtime+" exec")
}

// SeccompFact is the seccomp_profile fact: "docker-default" or
// "unconfined".
func SeccompFact(on bool) string {
	if on {
		return "docker-default"
	}
	return SeccompUnconfined
}

// ExecArgs are the arguments of an OCI runtime's exec (runc, crun, runsc)
// running argv in container id at / with local.Env.
func ExecArgs(id string, argv []string) []string {
	args := []string{"exec", "--cwd", "/"}
	for _, e := range local.Env() {
		args = append(args, "--env", e)
	}
	return append(append(args, id), local.GuestArgv(argv)...)
}

// Facts implements platform.Instance.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := in.Instance.Facts(ctx)
	f["runtime"] = in.p.runtime
	f["cgroup"] = "/isobench/" + in.ID()
	f["capabilities"] = "docker-default"
	f["seccomp_profile"] = SeccompFact(in.p.seccomp)
	in.ConfinementFacts(f, in.initPid)
	return f
}

// Stop implements local.Engine: `<runtime> kill`.
func (in *Instance) Stop(ctx context.Context) {
	kill := in.p.command("kill", in.ID(), "KILL")
	exec.CommandContext(ctx, kill[0], kill[1:]...).Run()
}

// Remove implements local.Engine: `<runtime> delete --force`.
func (in *Instance) Remove(ctx context.Context) error {
	return local.RemoveCommand(ctx, in.p.command("delete", "--force", in.ID()), in.p.runtime+" delete "+in.ID())
}
