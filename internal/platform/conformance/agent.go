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

// BuildAgentTo builds a static (CGO_ENABLED=0) isobench binary into dir and
// returns its path, for use from TestMain. It builds
// github.com/isobench/isobench/cmd/isobench when that builds; otherwise it
// says why on log and builds a stand-in from testdata/agent that serves
// "isobench agent ..." with only the cpu workload. $ISOBENCH_TEST_AGENT,
// when set, is used as is.
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
	build := func(pkg string) error {
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		msg, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("go build %s: %w\n%s", pkg, err, strings.TrimSpace(string(msg)))
		}
		return nil
	}
	var realErr error
	if _, err := os.Stat(filepath.Join(root, "cmd", "isobench")); err == nil {
		if realErr = build("./cmd/isobench"); realErr == nil {
			fmt.Fprintf(log, "agent: built ./cmd/isobench\n")
			return out, nil
		}
	} else {
		realErr = errors.New("cmd/isobench does not exist")
	}
	fmt.Fprintf(log, "agent: using the cpu-only stand-in agent: %v\n", realErr)
	if err := build("./internal/platform/conformance/testdata/agent"); err != nil {
		return "", err
	}
	return out, nil
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
