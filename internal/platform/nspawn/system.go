package nspawn

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
)

func parseBoot(v string) (bool, error) {
	switch v {
	case "", "false", "no":
		return false, nil
	case "true", "yes":
		return true, nil
	}
	return false, fmt.Errorf("nspawn: boot=%q must be true or false", v)
}

// checkBoot refuses boot=true with an image that has no init system.
func (p *Platform) checkBoot(s platform.Spec) error {
	return local.CheckBootable("nspawn", "boot=true", p.boot, s)
}

// prepareSystem masks the server units in the container's root.
func prepareSystem(root string) error {
	if err := image.PrepareBoot(root); err != nil {
		return fmt.Errorf("nspawn: %w", err)
	}
	return nil
}

// awaitSystem closes Done when nspawn ended, with the main process's
// status when one ran (else nspawn's).
func (in *Instance) awaitSystem(nspawnDone <-chan struct{}) {
	<-nspawnDone
	in.MainErr = in.nspawnErr
	if in.mainExit != nil {
		select {
		case err := <-in.mainExit:
			in.MainErr = err
		default:
		}
	}
	close(in.Done)
}

// bootSystem waits for systemd to finish booting ("started" is then), and
// runs the main process (the idling agent when the spec has none) among
// the system's processes; when it ends the system is stopped.
func (in *Instance) bootSystem(ctx context.Context, s platform.Spec) error {
	if in.leader == 0 {
		return in.EndedAtOnce("")
	}
	run := func(ctx context.Context, argv []string, out io.Writer) {
		in.exec(ctx, argv, platform.ExecIO{Stdout: out, Stderr: out})
	}
	st, err := local.WaitBooted(ctx, run, in.Done, "nspawn: booted container "+in.ID(), in.Stderr.String)
	if err != nil {
		return err
	}
	in.bootState = st
	if s.Phase != nil {
		s.Phase("started", time.Now())
	}
	// the main process (the idling agent when the spec has none) runs
	// among the system's processes
	in.mainExit = make(chan error, 1)
	stdout := s.MainStdout
	if stdout == nil {
		stdout = io.Discard
	}
	// as Exec runs commands, but kept as an exec.Cmd: its exit status is
	// the instance's
	full := in.hostArgv(append(in.nsenterArgv(), local.ConfinedArgv(local.MainArgv(s))...))
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = local.Env()
	cmd.Stdout, cmd.Stderr = stdout, &in.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("nspawn: main process: %w", err)
	}
	go func() {
		in.mainExit <- cmd.Wait()
		syscall.Kill(in.leader, syscall.SIGKILL)
	}()
	return nil
}

// nsenterArgv enters the container's namespaces, root and working
// directory. "--wd=/" would be opened on the host before entering and
// leave the command's working directory outside the container's root
// ("getcwd() failed"); -r -w take the container's PID 1's root and
// working directory (/) instead.
func (in *Instance) nsenterArgv() []string {
	return []string{"nsenter", "-t", strconv.Itoa(in.leader), "-a", "-r", "-w"}
}
