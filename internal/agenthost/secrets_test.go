package agenthost_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	fake "github.com/isobench/isobench/internal/testkit/fakeplatform"
	"github.com/isobench/isobench/internal/workload"
)

// argvRecorder is an instance that records every argv it is asked to run.
type argvRecorder struct {
	platform.Instance
	mu    sync.Mutex
	argvs [][]string
}

func (r *argvRecorder) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	r.mu.Lock()
	r.argvs = append(r.argvs, append([]string(nil), argv...))
	r.mu.Unlock()
	return r.Instance.Exec(ctx, argv, stdio)
}

const pw = "0123456789abcdef-secret"

func secretRegistry(t *testing.T) workload.Registry {
	t.Helper()
	r, err := workload.NewRegistry(workload.Def{
		Name: "_server", Internal: true,
		Params: []workload.Param{
			{Name: "port", Kind: workload.Int, Default: "1"},
			{Name: "password", Kind: workload.String, Secret: true},
			{Name: "fail", Kind: workload.Bool, Default: "false"},
		},
		Agent: func(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
			if p.Bool("fail") {
				return nil, errors.New("the server failed, params " + p.String())
			}
			if err := ready(); err != nil {
				return nil, err
			}
			v := 0.0
			if p.Str("password") == pw {
				v = 1
			}
			return []sample.Metric{{Name: "got_password", Value: v, Unit: "bool", Better: sample.Higher}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func recorder(t *testing.T, reg workload.Registry) *argvRecorder {
	t.Helper()
	in, err := (&fake.Platform{Label: "a", Workloads: reg}).Create(t.Context(), platform.Spec{Name: "i"})
	if err != nil {
		t.Fatal(err)
	}
	return &argvRecorder{Instance: in}
}

// TestSecretsTravelOnStdin: a session's secrets reach the workload, and
// the argv run in the instance (what /proc/PID/cmdline shows, what exec
// errors quote) does not hold them; nor does a failure's error.
func TestSecretsTravelOnStdin(t *testing.T) {
	reg := secretRegistry(t)
	in := recorder(t, reg)
	o := agenthost.Options{Secrets: map[string]string{"password": pw}}
	s := agenthost.StartWith(t.Context(), in, "_server", "port=7", o)
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitStarted(t.Context()); err != nil {
		t.Fatal(err)
	}
	ms, _, err := s.Result(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Value != 1 {
		t.Errorf("the workload did not get its password: %v", ms)
	}
	if len(in.argvs) != 1 {
		t.Fatalf("argvs %q", in.argvs)
	}
	argv := strings.Join(in.argvs[0], " ")
	if strings.Contains(argv, pw) || strings.Contains(argv, "password") || !strings.Contains(argv, "--secrets-stdin") {
		t.Errorf("argv %q: want the secrets flag and no secret", argv)
	}
	if got := strings.Join(agenthost.Argv("_server", "port=7", o), " "); got != argv {
		t.Errorf("Argv() = %q, the session ran %q", got, argv)
	}

	// a failing agent: its error (what a failure record keeps) holds no secret
	in = recorder(t, reg)
	s = agenthost.StartWith(t.Context(), in, "_server", "port=7,fail=true", o)
	err = s.WaitReady(t.Context())
	if err == nil || !strings.Contains(err.Error(), "the server failed") || strings.Contains(err.Error(), pw) {
		t.Errorf("error %v: want the failure without the secret", err)
	}
}

// TestNoSecretsNoFlag: without secrets the argv is the plain one and the
// first stdin line is the barrier's.
func TestNoSecretsNoFlag(t *testing.T) {
	if got := strings.Join(agenthost.Argv("ok", "v=1", agenthost.Options{}), " "); got != platform.AgentPlaceholder+" agent run ok v=1" {
		t.Errorf("Argv = %q", got)
	}
	reg := registry(t)
	in := recorder(t, reg)
	s := agenthost.Start(t.Context(), in, "ok", "v=2")
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.Release()
	if err := s.WaitStarted(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ms, _, err := s.Result(t.Context()); err != nil || len(ms) != 1 || ms[0].Value != 2 {
		t.Errorf("result %v %v", ms, err)
	}
}
