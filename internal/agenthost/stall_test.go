package agenthost_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/platform"
)

// mute is an instance whose exec writes lines, then nothing, until its
// context ends: an agent that never starts, or stops.
type mute struct {
	platform.Instance
	lines []string
}

func (m mute) ID() string { return "mute-1" }

func (m mute) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	go io.Copy(io.Discard, stdio.Stdin)
	for _, l := range m.lines {
		io.WriteString(stdio.Stdout, l+"\n")
	}
	<-ctx.Done()
	return ctx.Err()
}

func TestSilentAgentIsGivenUpOnWithItsPhase(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := agenthost.Options{Silence: 200 * time.Millisecond, FirstEvent: 300 * time.Millisecond}

	// never a word: given up after FirstEvent, "starting the agent"
	s := agenthost.StartWith(ctx, mute{}, "ok", "", o)
	err := s.WaitReady(ctx)
	var stall *agenthost.StallError
	if !errors.As(err, &stall) || stall.Phase != agenthost.PhaseStarting || stall.Instance != "mute-1" || stall.Silent < 300*time.Millisecond {
		t.Fatalf("silent from the start: %v", err)
	}

	// one heartbeat, then silence: "in setup", after Silence
	s = agenthost.StartWith(ctx, mute{lines: []string{`{"event":"heartbeat"}`}}, "ok", "", o)
	err = s.WaitReady(ctx)
	if !errors.As(err, &stall) || stall.Phase != agenthost.PhaseSetup || !strings.Contains(err.Error(), "mute-1 hung while in setup: no heartbeat") {
		t.Fatalf("silent in setup: %v", err)
	}

	// ready, then silence: waiting at the barrier
	s = agenthost.StartWith(ctx, mute{lines: []string{`{"event":"heartbeat"}`, `{"event":"ready"}`}}, "ok", "", o)
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	s.Release()
	if err := s.WaitStarted(ctx); !errors.As(err, &stall) || stall.Phase != agenthost.PhaseBarrier {
		t.Fatalf("silent at the barrier: %v", err)
	}
}

// An agent that keeps beating is never given up on for silence; a context
// ended with a cause names the instance and what it was doing and wraps
// the cause (context.Canceled when interrupted).
func TestBeatingAgentWaitsForItsContext(t *testing.T) {
	reg := registry(t)
	insts := instances(t, reg, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// "ok" waits at its barrier until released: longer than Silence, with
	// heartbeats every second
	s := agenthost.StartWith(ctx, insts[0], "ok", "", agenthost.Options{Silence: 1500 * time.Millisecond})
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	bctx, bcancel := context.WithTimeoutCause(ctx, 3*time.Second, errors.New("bound reached"))
	defer bcancel()
	// not released: the agent waits at the barrier, beating, until the bound
	_, _, err := s.Result(bctx)
	var stall *agenthost.StallError
	if errors.As(err, &stall) {
		t.Fatalf("a beating agent was given up on as silent: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "while waiting at the barrier: bound reached") {
		t.Fatalf("want the bound named with the phase, got %v", err)
	}
	cancel()
	if _, _, err := s.Result(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, want context.Canceled", err)
	}
}
