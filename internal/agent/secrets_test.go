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

// hiddenRegistry holds an internal workload with a secret parameter that
// reports whether it received the password it expects.
func hiddenRegistry(t *testing.T) workload.Registry {
	t.Helper()
	r, err := workload.NewRegistry(workload.Def{
		Name: "_half", Internal: true,
		Params: []workload.Param{
			{Name: "bind", Kind: workload.ListenIP, Default: "127.0.0.1"},
			{Name: "password", Kind: workload.String, Secret: true},
		},
		Agent: func(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
			if err := ready(); err != nil {
				return nil, err
			}
			if p.Str("password") != "s3cret-pw" {
				return nil, errors.New("wrong password")
			}
			return []sample.Metric{{Name: "ok", Value: 1, Unit: "u", Better: sample.Higher}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAgentRunsInternalWorkloads: the agent's entry point is the one place
// that runs the hidden halves; their secrets come on stdin.
func TestAgentRunsInternalWorkloads(t *testing.T) {
	var out, errb bytes.Buffer
	code := agent.Main(context.Background(), hiddenRegistry(t), []string{"run", "--secrets-stdin", "_half", "bind=127.0.0.1"},
		strings.NewReader(`{"password":"s3cret-pw"}`+"\ngo\n"), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), `"result"`) {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
}

// TestAgentRefusesSecretsInArgv: a secret given in the agent's arguments
// is refused (and not echoed); so is a secrets line that is not JSON.
func TestAgentRefusesSecretsInArgv(t *testing.T) {
	reg := hiddenRegistry(t)
	var out, errb bytes.Buffer
	code := agent.Main(context.Background(), reg, []string{"run", "_half", "password=s3cret-pw"}, strings.NewReader("go\n"), &out, &errb)
	if code == 0 || !strings.Contains(out.String(), "secret") || strings.Contains(out.String(), "s3cret-pw") {
		t.Errorf("a secret in argv: exit %d, output %s", code, out.String())
	}
	out.Reset()
	code = agent.Main(context.Background(), reg, []string{"run", "--secrets-stdin", "_half", ""}, strings.NewReader("password=s3cret-pw\ngo\n"), &out, &errb)
	if code == 0 || strings.Contains(out.String(), "s3cret-pw") {
		t.Errorf("a malformed secrets line: exit %d, output %s", code, out.String())
	}
}

// TestAgentRefusesBadBind: the hidden halves' listen address is validated
// by the agent: anything but one IP literal (config injection through
// ';', spaces, quotes, newlines; 0.0.0.0) is refused before the workload
// runs.
func TestAgentRefusesBadBind(t *testing.T) {
	reg := hiddenRegistry(t)
	for _, bad := range []string{"0.0.0.0", "127.0.0.1;", "127.0.0.1 8080", `127.0.0.1"`, "127.0.0.1\nListen 22", "example.com"} {
		var out, errb bytes.Buffer
		code := agent.Main(context.Background(), reg, []string{"run", "--secrets-stdin", "_half", "bind=" + bad},
			strings.NewReader(`{"password":"s3cret-pw"}`+"\ngo\n"), &out, &errb)
		if code == 0 || !strings.Contains(out.String(), "parameter bind") || strings.Contains(out.String(), `"ready"`) {
			t.Errorf("bind=%q: exit %d, output %s", bad, code, out.String())
		}
	}
}
