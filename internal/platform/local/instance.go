package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/platform"
)

// Teardown runs every cleanup step in order, also after one has failed,
// and returns their errors joined (nil when all succeeded).
func Teardown(steps ...func() error) error {
	var errs []error
	for _, step := range steps {
		if err := step(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemoveAll is a Teardown step that removes each directory tree in turn,
// joining the errors.
func RemoveAll(dirs ...string) func() error {
	return func() error {
		var errs []error
		for _, d := range dirs {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
}

// AwaitExit waits for done, the signal that an instance's main host
// process (pid) has been reaped, for up to grace after the engine was told
// to stop it; then it kills pid's whole process tree and waits for done.
func AwaitExit(done <-chan struct{}, pid int, grace time.Duration) {
	select {
	case <-done:
	case <-time.After(grace):
		KillTree(pid)
		<-done
	}
}

// WaitExit is an instance's Wait for a main process run in the foreground
// by a host command: it waits for done (closed once the command has been
// reaped, with its error in *mainErr) or ctx, and returns the exit status
// (see ExitStatus). An idle instance (no Spec.Main) that was closed
// returns 0. what prefixes an error that is not an exit status.
func WaitExit(ctx context.Context, done <-chan struct{}, mainErr *error, closedIdle func() bool, what string) (int, error) {
	select {
	case <-done:
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	if closedIdle() {
		return 0, nil
	}
	code, err := ExitStatus(*mainErr)
	if err != nil {
		return code, fmt.Errorf("%s: %w", what, err)
	}
	return code, nil
}

// ExecFunc is an instance's Exec.
type ExecFunc func(ctx context.Context, argv []string, stdio platform.ExecIO) error

// RemoveCommand runs argv, a host command that deletes something, as a
// Teardown step would: output saying the thing does not exist ("not
// exist", "not found") counts as success. what names the command in the
// error.
func RemoveCommand(ctx context.Context, argv []string, what string) error {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "not exist") && !strings.Contains(string(out), "not found") {
		return fmt.Errorf("%s: %v: %s", what, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// StartMain starts cmd, an engine's foreground command that runs an
// instance's main process with the engine's own stdio, in a process group
// of its own. Its stdout is copied to stdout (discarded when nil) and its
// stderr to stderr through pipes this process owns, so the copies end when
// the command does. Once cmd has been reaped and both copies have ended,
// cmd.Wait's error is stored in *waitErr and done is closed.
func StartMain(cmd *exec.Cmd, stdout, stderr io.Writer, waitErr *error, done chan<- struct{}) error {
	if stdout == nil {
		stdout = io.Discard
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return err
	}
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); io.Copy(stdout, outR); outR.Close() }()
	go func() { defer copies.Done(); io.Copy(stderr, errR); errR.Close() }()
	go func() {
		*waitErr = cmd.Wait()
		copies.Wait()
		close(done)
	}()
	return nil
}

// ReadPhases reads the phase names OCI hooks write to the phase FIFO, one
// a line: it reports each to phase (when not nil) with the time it was
// read and sends it on got, until "started" or the end of r.
func ReadPhases(r io.Reader, phase func(string, time.Time), got chan<- string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		now := time.Now()
		if phase != nil {
			phase(sc.Text(), now)
		}
		got <- sc.Text()
		if sc.Text() == "started" {
			return
		}
	}
}
