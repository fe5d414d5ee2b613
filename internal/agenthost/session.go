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
	"strings"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/agentproto"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
)

// Session is one agent workload running inside one instance.
type Session struct {
	stdin   *io.PipeWriter
	events  chan agentproto.Event
	done    chan error
	stderr  *limitedBuffer
	goOnce  sync.Once
	Started time.Time // host time the agent acknowledged "go"
}

// Start runs "{agent} agent run WORKLOAD PARAMS" in inst. The session's
// context bounds the whole exec.
func Start(ctx context.Context, inst platform.Instance, workloadName, params string) *Session {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &Session{stdin: inW, events: make(chan agentproto.Event, 16), done: make(chan error, 1), stderr: &limitedBuffer{max: 8 << 10}}
	argv := []string{platform.AgentPlaceholder, "agent", "run", workloadName, params}
	go func() {
		err := inst.Exec(ctx, argv, platform.ExecIO{Stdin: inR, Stdout: outW, Stderr: s.stderr})
		outW.CloseWithError(io.EOF)
		inR.Close()
		s.done <- err
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
			var ev agentproto.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				s.events <- agentproto.Event{Event: agentproto.EvError, Error: fmt.Sprintf("agent printed malformed JSON: %v", err)}
				continue
			}
			s.events <- ev
		}
		io.Copy(io.Discard, outR)
	}()
	return s
}

// next waits for the next event, or reports why none will come.
func (s *Session) next(ctx context.Context) (agentproto.Event, error) {
	select {
	case ev, ok := <-s.events:
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
	case <-ctx.Done():
		return agentproto.Event{}, ctx.Err()
	}
}

func (s *Session) wrap(err error) error {
	if msg := strings.TrimSpace(s.stderr.String()); msg != "" {
		return fmt.Errorf("%w: %s", err, lastLine(msg))
	}
	return err
}

func lastLine(s string) string {
	lines := strings.Split(s, "\n")
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
	s.goOnce.Do(func() { _, err = io.WriteString(s.stdin, agentproto.GoLine+"\n") })
	return err
}

// WaitStarted returns when the agent acknowledged "go" and records the host time.
func (s *Session) WaitStarted(ctx context.Context) error {
	if _, err := s.expect(ctx, agentproto.EvStarted); err != nil {
		return err
	}
	s.Started = time.Now()
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
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	for _, m := range ev.Metrics {
		if err := m.Validate(); err != nil {
			return nil, nil, fmt.Errorf("agent result: %w", err)
		}
	}
	return ev.Metrics, ev.Tags, nil
}

// Abort closes stdin so a waiting agent exits; the exec's context should be
// cancelled too.
func (s *Session) Abort() { s.stdin.CloseWithError(errors.New("aborted")) }

type limitedBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = b.buf[len(b.buf)-b.max:]
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
