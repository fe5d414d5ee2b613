package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// AgentEnv names an environment variable that, when set, is the path of a
// prebuilt static isobench binary to use instead of building one.
const AgentEnv = "ISOBENCH_TEST_AGENT"

// BuildAgent returns a static isobench binary for platform tests, built
// into a temporary directory of t (see BuildAgentTo). It fails t when no
// binary can be had.
func BuildAgent(t testing.TB) string {
	t.Helper()
	bin, err := BuildAgentTo(t.Context(), t.TempDir(), testLog{t})
	if err != nil {
		t.Fatalf("building the agent binary: %v", err)
	}
	return bin
}

type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// BuildAgentTo builds a static (CGO_ENABLED=0) isobench binary from
// ./cmd/isobench into dir and returns its path, for use from TestMain.
// $ISOBENCH_TEST_AGENT, when set, is used as is. A build that fails is an
// error: tests never fall back to a stand-in agent, so a broken build fails
// them instead of testing something else.
func BuildAgentTo(ctx context.Context, dir string, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	if p := os.Getenv(AgentEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s: %w", AgentEnv, err)
		}
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(dir, "isobench")
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, "./cmd/isobench")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/isobench: %w\n%s", err, strings.TrimSpace(string(msg)))
	}
	fmt.Fprintf(log, "agent: built ./cmd/isobench\n")
	return out, nil
}

// AgentTestMain is a TestMain for packages whose tests need the agent: it
// builds it once into a temporary directory, stores its path in *bin, checks
// that `isobench workloads` lists every name in want, runs the tests and
// removes the directory. It returns the exit code for os.Exit.
func AgentTestMain(m *testing.M, bin *string, want ...string) int {
	dir, err := os.MkdirTemp("", "isobench-test-agent-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin, err = BuildAgentTo(context.Background(), dir, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the agent: %v\n", err)
		return 1
	}
	if len(want) > 0 {
		out, err := exec.Command(*bin, "workloads").CombinedOutput()
		for _, w := range want {
			if err != nil || !strings.Contains(string(out), w) {
				fmt.Fprintf(os.Stderr, "the agent %s does not list workload %q: %v\n%s", *bin, w, err, out)
				return 1
			}
		}
	}
	return m.Run()
}

// moduleRoot finds the module's directory from this source file.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("conformance: cannot locate its own source to find the module")
	}
	for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("conformance: no go.mod above %s", file)
		}
	}
}
