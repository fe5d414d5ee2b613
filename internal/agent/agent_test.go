package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/isobench/isobench/internal/agent"
	"github.com/isobench/isobench/internal/agentproto"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

func registry(t *testing.T) workload.Registry {
	t.Helper()
	r, err := workload.NewRegistry(
		workload.Def{Name: "ok", Params: []workload.Param{{Name: "v", Kind: workload.Float, Default: "1"}},
			Agent: func(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
				if err := ready(); err != nil {
					return nil, err
				}
				return []sample.Metric{{Name: "x", Value: p.Float("v"), Unit: "u", Better: sample.Higher}}, nil
			}},
		workload.Def{Name: "fails", Agent: func(context.Context, workload.Params, workload.Barrier) ([]sample.Metric, error) {
			return nil, errors.New("disk full")
		}},
		workload.Def{Name: "nobarrier", Agent: func(context.Context, workload.Params, workload.Barrier) ([]sample.Metric, error) {
			return nil, nil
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAgentMainProtocol(t *testing.T) {
	reg := registry(t)
	var out, errb bytes.Buffer
	code := agent.Main(context.Background(), reg, []string{"run", "ok", "v=3"}, strings.NewReader("go\n"), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// heartbeats come first (the agent beats as soon as it starts) and
	// may come between the others
	var lines []string
	beats := 0
	for i, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.Contains(l, `"heartbeat"`) {
			if i == 0 {
				beats++
			}
			continue
		}
		lines = append(lines, l)
	}
	if beats != 1 {
		t.Fatalf("the first event is not a heartbeat: %q", out.String())
	}
	if len(lines) != 3 || !strings.Contains(lines[0], `"ready"`) || !strings.Contains(lines[1], `"started"`) || !strings.Contains(lines[2], `"result"`) {
		t.Fatalf("events: %q", out.String())
	}
	out.Reset()
	// stdin closed before "go": the agent must not run the timed part
	if code := agent.Main(context.Background(), reg, []string{"run", "ok", ""}, strings.NewReader(""), &out, &errb); code == 0 || !strings.Contains(out.String(), "did not release") {
		t.Fatalf("no release: exit %d, %q", code, out.String())
	}
	out.Reset()
	if code := agent.Main(context.Background(), reg, []string{"run", "nope", ""}, strings.NewReader(""), &out, &errb); code == 0 || !strings.Contains(out.String(), "unknown workload") {
		t.Fatalf("unknown workload: exit %d, %q", code, out.String())
	}
	out.Reset()
	if code := agent.Main(context.Background(), reg, []string{"hello"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), `"hello"`) {
		t.Fatalf("hello: exit %d, %q", code, out.String())
	}
}

func monotonicNow(t *testing.T) int64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano()
}

func TestAgentDeadlineBarrier(t *testing.T) {
	// The workload reads CLOCK_MONOTONIC as soon as the barrier returns:
	// it must not be before the deadline the host sent.
	var released int64
	reg, err := workload.NewRegistry(workload.Def{Name: "clock",
		Agent: func(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
			if err := ready(); err != nil {
				return nil, err
			}
			released = monotonicNow(t)
			return []sample.Metric{{Name: "x", Value: 1, Unit: "u", Better: sample.Higher}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := monotonicNow(t) + int64(30*time.Millisecond)
	in := fmt.Sprintf("ping\nping\ngo at %d\n", deadline)
	var out, errb bytes.Buffer
	if code := agent.Main(context.Background(), reg, []string{"run", "clock", ""}, strings.NewReader(in), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	if released < deadline {
		t.Fatalf("workload released %v before the deadline", time.Duration(deadline-released))
	}
	pongs := 0
	var started int64
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev agentproto.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		switch ev.Event {
		case agentproto.EvPong:
			if ev.Clock <= 0 || ev.Clock >= deadline {
				t.Fatalf("pong clock %d (deadline %d)", ev.Clock, deadline)
			}
			pongs++
		case agentproto.EvStarted:
			started = ev.Clock
		}
	}
	if pongs != 2 || started < deadline || started > released {
		t.Fatalf("pongs %d, started %d, deadline %d, released %d", pongs, started, deadline, released)
	}
	// a deadline already past releases at once; a malformed one is an error
	out.Reset()
	if code := agent.Main(context.Background(), reg, []string{"run", "clock", ""}, strings.NewReader("go at 1\n"), &out, &errb); code != 0 {
		t.Fatalf("past deadline: exit %d: %s", code, out.String())
	}
	out.Reset()
	if code := agent.Main(context.Background(), reg, []string{"run", "clock", ""}, strings.NewReader("go at soon\n"), &out, &errb); code == 0 || !strings.Contains(out.String(), "bad deadline") {
		t.Fatalf("bad deadline: exit %d, %q", code, out.String())
	}
}
