package runc

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
)

// TestPhaseHooksReadState runs each phase hook the way an OCI runtime
// does, with the container state on stdin, and checks that the hook reads
// all of it before it exits. crun 1.8 writes the state only after it
// started the hook and treats the EPIPE of a hook that already exited as a
// hook failure (it then aborts `crun run`, or kills a started container).
// The test keeps a read end of the pipe itself, so a hook that ignores
// stdin leaves the state unread here instead of racing.
func TestPhaseHooksReadState(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "phases")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	phases, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer phases.Close()
	lines := bufio.NewScanner(phases)
	h := phaseHooks(fifo)
	for _, c := range []struct {
		want  string
		hooks []specs.Hook
	}{{"created", h.CreateRuntime}, {"started", h.Poststart}} {
		if len(c.hooks) != 1 {
			t.Fatalf("%s: %d hooks", c.want, len(c.hooks))
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		state := `{"ociVersion":"1.0.2","id":"isob-ctest","status":"created","pid":1,"bundle":"/x"}`
		if _, err := w.WriteString(state); err != nil {
			t.Fatal(err)
		}
		w.Close()
		cmd := &exec.Cmd{Path: c.hooks[0].Path, Args: c.hooks[0].Args, Stdin: r, Env: []string{}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s hook: %v: %s", c.want, err, out)
		}
		n, err := r.Read(make([]byte, len(state)))
		r.Close()
		if n != 0 || !errors.Is(err, io.EOF) {
			t.Errorf("%s hook exited leaving %d bytes of its state unread (%v): a runtime writing it then gets EPIPE", c.want, n, err)
		}
		if !lines.Scan() || lines.Text() != c.want {
			t.Errorf("%s hook wrote %q (%v)", c.want, lines.Text(), lines.Err())
		}
	}
}

// TestConcurrentCreateExec creates four instances at once, several times,
// and execs in each right after Create: every instance must report both
// phases, stay up (its idle main process running) and run every exec.
func TestConcurrentCreateExec(t *testing.T) {
	agent := conformance.BuildAgent(t)
	for _, rt := range []string{"runc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			p, err := New(t.Context(), rt, platform.Options{}, platform.Env{AgentBinary: agent, StateDir: local.TestStateDir()})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Available(t.Context()); err != nil {
				conformance.SkipUnlessRequired(t, rt, err)
			}
			if err := p.Prepare(t.Context(), "minimal"); err != nil {
				t.Fatal(err)
			}
			const rounds, instances, execs = 3, 4, 3
			for round := range rounds {
				var wg sync.WaitGroup
				errs := make([]error, instances)
				for i := range instances {
					wg.Go(func() { errs[i] = createAndExec(t.Context(), p, execs) })
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Errorf("round %d instance %d: %v", round, i, err)
					}
				}
				if t.Failed() {
					return
				}
			}
		})
	}
}

func createAndExec(ctx context.Context, p *Platform, execs int) (err error) {
	var mu sync.Mutex
	var phases []string
	inst, err := p.Create(ctx, platform.Spec{Image: "minimal", Phase: func(name string, _ time.Time) {
		mu.Lock()
		defer mu.Unlock()
		phases = append(phases, name)
	}})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, inst.Close(context.WithoutCancel(ctx))) }()
	mu.Lock()
	got := strings.Join(phases, ",")
	mu.Unlock()
	if got != "created,started" {
		return errors.New("phases " + got + ", want created,started")
	}
	for range execs {
		var out, errb strings.Builder
		if err := inst.Exec(ctx, []string{platform.AgentPlaceholder, "agent", "hello"}, platform.ExecIO{Stdout: &out, Stderr: &errb}); err != nil {
			return errors.Join(err, errors.New(errb.String()))
		}
		if !strings.Contains(out.String(), "hello") {
			return errors.New("exec stdout " + out.String())
		}
	}
	select {
	case <-inst.(*Instance).Done:
		return errors.New("the idle main process ended: " + inst.(*Instance).Stderr.String())
	default:
	}
	return nil
}
