package agent_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/agent"
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
