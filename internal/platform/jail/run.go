package jail

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"time"

	"github.com/isobench/isobench/internal/platform"
)

var nowFunc = time.Now

// execRunner runs commands on this host.
type execRunner struct{}

func (execRunner) Run(ctx context.Context, argv, env []string, stdio platform.ExecIO) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if env != nil {
		cmd.Env = env
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	var tail tailBuffer
	if cmd.Stderr == nil {
		cmd.Stderr = &tail
	}
	err := cmd.Run()
	if err != nil && tail.String() != "" {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return &commandError{err: ee, stderr: tail.String()}
		}
	}
	return err
}

func (execRunner) Start(ctx context.Context, argv, env []string, stdout io.Writer) (func() (int, error), error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout = stdout
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() (int, error) {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), nil
		}
		if err != nil {
			return -1, err
		}
		return 0, nil
	}, nil
}

// commandError keeps the exit status (errors.As finds *exec.ExitError) and
// says what the command printed.
type commandError struct {
	err    *exec.ExitError
	stderr string
}

func (e *commandError) Error() string { return e.err.Error() + ": " + e.stderr }
func (e *commandError) Unwrap() error { return e.err }

// tailBuffer keeps the last line a command printed on stderr.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	s := string(t.b)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	if i := lastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func lastIndexByte(s string, c byte) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == c {
			return i
		}
	}
	return -1
}
