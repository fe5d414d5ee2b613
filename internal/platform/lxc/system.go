package lxc

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
)

// SystemInit is the init a system container boots (systemd in the debian
// image).
const SystemInit = "/sbin/init"

// parseInit reads option init=: "" or "app" (an application container:
// the main process at PID 1 under LXC's init), "system" (the image's own
// init at PID 1).
func parseInit(v string) (bool, error) { return local.ParseInit("lxc", v) }

// checkSystem refuses init=system with an image that has no init system.
func (p *Platform) checkSystem(s platform.Spec) error {
	return local.CheckBootable("lxc", "init=system", p.system, s)
}

// startSystem boots the container's systemd with lxc-start -F, waits for
// the boot to finish ("started" is then: the system is up), and runs the
// main process (the idling agent when the spec has none) with lxc-attach
// as one process among the system's (its exit status is the instance's;
// the container is stopped when it ends).
func (in *Instance) startSystem(ctx context.Context, s platform.Spec) error {
	if err := image.PrepareBoot(in.Overlay.Merged); err != nil {
		return fmt.Errorf("lxc: %w", err)
	}
	args := []string{"-n", in.ID(), "-P", in.p.lxcpath, "-o", filepath.Join(in.Dir, "lxc.log"), "-l", "ERROR", "-F"}
	cmd := exec.Command("lxc-start", args...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = io.Discard, &in.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("lxc-start: %w", err)
	}
	in.Main = cmd
	startDone := make(chan struct{})
	var startErr error
	mainExit := make(chan error, 1)
	go func() {
		startErr = cmd.Wait()
		close(startDone)
	}()
	go func() {
		<-startDone
		select {
		case err := <-mainExit:
			in.MainErr = err
		default:
			in.MainErr = startErr
		}
		close(in.Done)
	}()
	created, err := in.WaitPhase(ctx, "created")
	if err != nil {
		return err
	}
	if !created {
		return in.EndedAtOnce(in.log())
	}
	if err := in.waitBooted(ctx, startDone); err != nil {
		return err
	}
	in.running = true
	if s.Phase != nil {
		s.Phase("started", time.Now())
	}
	// the main process (the idling agent when there is none) runs as a
	// process among the system's, in the container's cgroup and
	// namespaces
	stdout := s.MainStdout
	if stdout == nil {
		stdout = io.Discard
	}
	main := exec.Command("lxc-attach", in.attachArgs(local.ConfinedArgv(local.MainArgv(s)))...)
	main.Dir = "/"
	main.Stdout, main.Stderr = stdout, &in.Stderr
	if err := main.Start(); err != nil {
		return fmt.Errorf("lxc-attach: %w", err)
	}
	go func() {
		err := main.Wait()
		mainExit <- err
		exec.Command("lxc-stop", "-n", in.ID(), "-P", in.p.lxcpath, "-k").Run()
	}()
	return nil
}

// attachArgs are lxc-attach's arguments to run argv with a clean
// environment.
func (in *Instance) attachArgs(argv []string) []string {
	args := []string{"-n", in.ID(), "-P", in.p.lxcpath, "--clear-env"}
	for _, e := range local.Env() {
		args = append(args, "-v", e)
	}
	return append(append(args, "--"), argv...)
}

// waitBooted waits until systemd says the boot finished (running, or
// degraded: a unit failed, which the facts report).
func (in *Instance) waitBooted(ctx context.Context, ended <-chan struct{}) error {
	run := func(ctx context.Context, argv []string, out io.Writer) {
		c := exec.CommandContext(ctx, "lxc-attach", in.attachArgs(argv)...)
		c.Stdout, c.Stderr = out, out
		c.Run()
	}
	st, err := local.WaitBooted(ctx, run, ended, "lxc: system container "+in.ID(), func() string { return in.Stderr.String() + in.log() })
	if err == nil {
		in.bootState = st
	}
	return err
}
