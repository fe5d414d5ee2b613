// Package agenthost is the host side of the agent protocol: a Session runs
// "isobench agent run" inside one instance and reads its events; a Group
// releases several sessions through one barrier. Nothing relies on a shared
// clock: every time the host records is taken on the host.
package agenthost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/isobench/isobench/internal/agentproto"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
)

// Session is one agent workload running inside one instance.
type Session struct {
	stdin   *io.PipeWriter
	sent    chan struct{} // closed once the secrets line (if any) is written
	events  chan agentproto.Event
	done    chan error
	exited  chan struct{} // closed when the exec returned
	stderr  *limitedBuffer
	goOnce  sync.Once
	Started time.Time // host time the agent acknowledged "go"
	// StartClock is the agent's CLOCK_MONOTONIC (ns) when its workload
	// was released, as it reported it; 0 if it did not.
	StartClock int64
	// Wake is how the agent woke at a deadline release: agentproto.WakeRT
	// or WakeNormal ("" for a stdin release or an older agent).
	Wake string
	// ClockOffset is the agent's clock minus the host's (ns), as the
	// group's barrier estimated it (0 where the clock is shared).
	ClockOffset int64
	// Timelines are the workload's tracked counts, from its result (on
	// the agent's clock).
	Timelines []agentproto.Timeline

	id      string       // the instance's ID, for errors
	opts    Options      // the bounds
	begun   time.Time    // host time the exec was started
	last    atomic.Int64 // host time (UnixNano) of the agent's last line; 0: none yet
	phase   atomic.Value // string: what the agent is doing, as far as the host knows
	stalled chan struct{}
	stall   error // why stalled was closed
}

// Options bound how long an agent may stay silent.
type Options struct {
	// Silence is how long an agent may go without a heartbeat (or any
	// other event) once it has started before the session gives up on it
	// as hung or stopped. 0 means DefaultSilence.
	Silence time.Duration
	// FirstEvent is how long the agent may take to write its first line,
	// a heartbeat it writes as it starts: the time of the exec's own start
	// (an engine's exec call, a VM's exec server). 0 means
	// DefaultFirstEvent.
	FirstEvent time.Duration
	// Barrier is how a Group releases its sessions: BarrierDeadline
	// ("" means it) or BarrierStdin.
	Barrier string
	// Secrets are the workload's secret parameters (workload.Param.Secret:
	// passwords, private keys). They go to the agent as the first line of
	// its standard input (agentproto.SecretsArg), never in its argv, which
	// /proc/PID/cmdline shows to every local user and exec errors quote.
	Secrets map[string]string
	// CPUs, when set, is a CPU list ("0", "2-3") the agent binds all its
	// threads to before the workload starts (agentproto.CPUsArg).
	CPUs string
}

// Defaults for Options.
const (
	DefaultSilence    = 10 * time.Second
	DefaultFirstEvent = time.Minute
)

// Phases of a session, named in errors.
const (
	PhaseStarting = "starting the agent"
	PhaseSetup    = "in setup"
	PhaseBarrier  = "waiting at the barrier"
	PhaseRunning  = "running"
	PhaseReport   = "reporting"
)

// StallError reports an agent that stopped making progress: which
// instance, what it was doing, and for how long it was silent.
type StallError struct {
	Instance string
	Phase    string
	Silent   time.Duration
}

func (e *StallError) Error() string {
	if e.Phase == PhaseStarting {
		return fmt.Sprintf("instance %s hung while %s: no word from the agent %v after the exec began", e.Instance, e.Phase, e.Silent.Round(time.Second))
	}
	return fmt.Sprintf("instance %s hung while %s: no heartbeat for %v (the agent is stuck, stopped or unreachable)", e.Instance, e.Phase, e.Silent.Round(time.Second))
}

// Argv is the command a session runs in its instance: "{agent} agent run
// [--secrets-stdin] WORKLOAD PARAMS". Secrets are never part of it.
func Argv(workloadName, params string, o Options) []string {
	argv := []string{platform.AgentPlaceholder, "agent", "run"}
	if len(o.Secrets) > 0 {
		argv = append(argv, agentproto.SecretsArg)
	}
	if o.CPUs != "" {
		argv = append(argv, agentproto.CPUsArg+o.CPUs)
	}
	return append(argv, workloadName, params)
}

// Start runs "{agent} agent run WORKLOAD PARAMS" in inst with the default
// Options. The session's context bounds the whole exec.
func Start(ctx context.Context, inst platform.Instance, workloadName, params string) *Session {
	return StartWith(ctx, inst, workloadName, params, Options{})
}

// StartWith is Start with explicit bounds.
func StartWith(ctx context.Context, inst platform.Instance, workloadName, params string, o Options) *Session {
	if o.Silence <= 0 {
		o.Silence = DefaultSilence
	}
	if o.FirstEvent <= 0 {
		o.FirstEvent = DefaultFirstEvent
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &Session{stdin: inW, sent: make(chan struct{}), events: make(chan agentproto.Event, 16), done: make(chan error, 1), exited: make(chan struct{}),
		stderr: &limitedBuffer{max: 8 << 10}, id: inst.ID(), opts: o, begun: time.Now(), stalled: make(chan struct{})}
	s.opts.Secrets = nil // not kept beyond the line written below
	s.phase.Store(PhaseStarting)
	argv := Argv(workloadName, params, o)
	if len(o.Secrets) > 0 {
		line, err := json.Marshal(o.Secrets)
		if err != nil {
			// a map of strings always marshals; be safe all the same
			line = []byte("{}")
		}
		go func() {
			defer close(s.sent)
			// ends with an error when the session is aborted first
			inW.Write(append(line, '\n'))
		}()
	} else {
		close(s.sent)
	}
	go func() {
		err := inst.Exec(ctx, argv, platform.ExecIO{Stdin: inR, Stdout: outW, Stderr: s.stderr})
		outW.CloseWithError(io.EOF)
		inR.Close()
		s.done <- err
		close(s.exited)
	}()
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if !strings.HasPrefix(line, "{") {
				continue // tolerate noise a platform may add (e.g. a shell banner)
			}
			s.last.Store(time.Now().UnixNano())
			var ev agentproto.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				s.events <- agentproto.Event{Event: agentproto.EvError, Error: fmt.Sprintf("agent printed malformed JSON: %v", err)}
				continue
			}
			switch ev.Event {
			case agentproto.EvHeartbeat:
				if s.phase.Load() == PhaseStarting {
					s.phase.CompareAndSwap(PhaseStarting, PhaseSetup)
				}
				continue // proof of life only; never queued
			case agentproto.EvReady:
				s.phase.Store(PhaseBarrier)
			case agentproto.EvStarted:
				s.phase.Store(PhaseRunning)
			case agentproto.EvResult:
				s.phase.Store(PhaseReport)
			}
			s.events <- ev
		}
		io.Copy(io.Discard, outR)
	}()
	go s.watch(ctx)
	return s
}

// watch closes stalled when the agent stays silent too long, until the
// exec ends or ctx is done.
func (s *Session) watch(ctx context.Context) {
	tick := min(s.opts.Silence, s.opts.FirstEvent) / 10
	t := time.NewTicker(max(tick, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.exited:
			return
		case <-ctx.Done():
			return
		case now := <-t.C:
			if s.Phase() == PhaseReport {
				// the agent stops beating once it reported; the exec's
				// end is bounded by the caller's context
				continue
			}
			last := s.last.Load()
			var silent time.Duration
			if last == 0 {
				if silent = now.Sub(s.begun); silent < s.opts.FirstEvent {
					continue
				}
			} else if silent = now.Sub(time.Unix(0, last)); silent < s.opts.Silence {
				continue
			}
			s.stall = &StallError{Instance: s.id, Phase: s.Phase(), Silent: silent}
			close(s.stalled)
			return
		}
	}
}

// Phase says what the agent is doing, as far as the host knows.
func (s *Session) Phase() string { return s.phase.Load().(string) }

// next waits for the next event, or reports why none will come. Errors
// caused by ctx wrap its cause (context.Canceled when interrupted) and
// name the instance and its phase.
func (s *Session) next(ctx context.Context) (agentproto.Event, error) {
	if err := s.ctxErr(ctx); err != nil {
		return agentproto.Event{}, err
	}
	select {
	case ev, ok := <-s.events:
		if err := s.ctxErr(ctx); err != nil {
			// the agent's end may be a consequence of ctx (its exec killed)
			return agentproto.Event{}, err
		}
		if !ok {
			err := <-s.done
			s.done <- err
			if err == nil {
				err = errors.New("agent exited without a result")
			}
			return agentproto.Event{}, s.wrap(err)
		}
		if ev.Event == agentproto.EvError {
			return agentproto.Event{}, s.wrap(errors.New(ev.Error))
		}
		return ev, nil
	case <-s.stalled:
		return agentproto.Event{}, s.stall
	case <-ctx.Done():
		return agentproto.Event{}, s.ctxErr(ctx)
	}
}

// ctxErr is nil while ctx is live, else ctx's cause with the instance and
// what it was doing.
func (s *Session) ctxErr(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("instance %s while %s: %w", s.id, s.Phase(), context.Cause(ctx))
}

func (s *Session) wrap(err error) error {
	if msg := strings.TrimSpace(s.stderr.String()); msg != "" {
		return fmt.Errorf("%w: %s", err, failureLine(msg))
	}
	return err
}

// failureLine is what stderr says of a failure: the Go runtime's own line
// when the agent crashed ("fatal error: runtime: out of memory", "panic:
// ..."), not the last frame of its stack trace; else the last line.
func failureLine(s string) string {
	lines := strings.Split(s, "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "fatal error: ") || strings.HasPrefix(l, "panic: ") {
			return l
		}
	}
	return lines[len(lines)-1]
}

// expect waits for an event named want.
func (s *Session) expect(ctx context.Context, want string) (agentproto.Event, error) {
	ev, err := s.next(ctx)
	if err != nil {
		return ev, err
	}
	if ev.Event != want {
		return ev, fmt.Errorf("agent protocol: expected %q, got %q", want, ev.Event)
	}
	return ev, nil
}

// WaitReady returns when the agent finished its untimed setup.
func (s *Session) WaitReady(ctx context.Context) error {
	_, err := s.expect(ctx, agentproto.EvReady)
	return err
}

// Release sends "go".
func (s *Session) Release() error {
	var err error
	s.goOnce.Do(func() { _, err = s.write(agentproto.GoLine + "\n") })
	return err
}

// ReleaseAt sends "go at DEADLINE": the agent starts its workload when its
// CLOCK_MONOTONIC reaches deadline (ns).
func (s *Session) ReleaseAt(deadline int64) error {
	var err error
	s.goOnce.Do(func() {
		_, err = s.write(agentproto.GoAtPrefix + strconv.FormatInt(deadline, 10) + "\n")
	})
	return err
}

// write writes a line to the agent's stdin, after the secrets line.
func (s *Session) write(line string) (int, error) {
	<-s.sent
	return io.WriteString(s.stdin, line)
}

// Ping asks a session waiting at its barrier for its clock: it returns the
// host's CLOCK_MONOTONIC when the ping was sent and when the answer was
// read, and the agent's clock in between (all ns).
func (s *Session) Ping(ctx context.Context) (sent, agent, recv int64, err error) {
	sent = agentproto.Monotonic()
	if _, err := s.write(agentproto.PingLine + "\n"); err != nil {
		return 0, 0, 0, err
	}
	ev, err := s.expect(ctx, agentproto.EvPong)
	if err != nil {
		return 0, 0, 0, err
	}
	return sent, ev.Clock, agentproto.Monotonic(), nil
}

// WaitStarted returns when the agent acknowledged "go" and records the host
// time and the agent's own start clock.
func (s *Session) WaitStarted(ctx context.Context) error {
	ev, err := s.expect(ctx, agentproto.EvStarted)
	if err != nil {
		return err
	}
	s.Started = time.Now()
	s.StartClock = ev.Clock
	s.Wake = ev.Tags[agentproto.WakeTag]
	return nil
}

// Result waits for the workload's metrics and the exec's end.
func (s *Session) Result(ctx context.Context) ([]sample.Metric, map[string]string, error) {
	ev, err := s.expect(ctx, agentproto.EvResult)
	if err != nil {
		return nil, nil, err
	}
	s.stdin.Close()
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			return nil, nil, s.wrap(err)
		}
	case <-s.stalled:
		return nil, nil, s.stall
	case <-ctx.Done():
		return nil, nil, s.ctxErr(ctx)
	}
	for _, m := range ev.Metrics {
		if err := m.Validate(); err != nil {
			return nil, nil, fmt.Errorf("agent result: %w", err)
		}
	}
	s.Timelines = ev.Timelines
	return ev.Metrics, ev.Tags, nil
}

// Abort closes stdin so a waiting agent exits; the exec's context should be
// cancelled too.
func (s *Session) Abort() { s.stdin.CloseWithError(errors.New("aborted")) }

type limitedBuffer struct {
	mu   sync.Mutex
	head []byte // the first headMax bytes: where a Go runtime's fatal error is
	buf  []byte // the last max bytes
	max  int
	n    int // bytes written
}

// headMax is how much of the start a limitedBuffer keeps beside its tail.
const headMax = 1 << 10

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.head) < headMax {
		b.head = append(b.head, p[:min(len(p), headMax-len(b.head))]...)
	}
	b.n += len(p)
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = b.buf[len(b.buf)-b.max:]
	}
	return len(p), nil
}

// String is everything written, or, when that was more than the buffer
// keeps, its start and its end.
func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n <= len(b.buf) {
		return string(b.buf)
	}
	return string(b.head) + "\n…\n" + string(b.buf)
}
