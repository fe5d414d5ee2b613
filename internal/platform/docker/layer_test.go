package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
)

// TestDebianAgentLayer checks that two agents on one Debian base make two
// images sharing one imported base layer, each with its own agent on top.
func TestDebianAgentLayer(t *testing.T) {
	if testing.Short() {
		t.Skip("imports the Debian image")
	}
	if probe, err := NewPlatform(platform.Options{}, platform.Env{}); err != nil {
		t.Fatal(err)
	} else if err := probe.ping(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		conformance.SkipUnlessRequired(t, "docker", err)
	}
	agentA := conformance.BuildAgent(t)
	// a second, different static agent: the same binary with trailing bytes
	agentB := filepath.Join(t.TempDir(), "isobench")
	data, err := os.ReadFile(agentA)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(agentB, append(data, []byte("layer-test")...), 0o755); err != nil {
		t.Fatal(err)
	}
	// the Debian tree is cached per state dir: share the other tests' one
	state := local.TestStateDir()
	ctx := t.Context()
	var refs []string
	var platforms []*Platform
	for _, agent := range []string{agentA, agentB} {
		p, err := NewPlatform(platform.Options{}, platform.Env{AgentBinary: agent, StateDir: state, Log: testLogger{t}})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := p.EnsureImage(ctx, image.Debian)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
		platforms = append(platforms, p)
	}
	t.Cleanup(func() {
		for _, r := range refs {
			platforms[0].c.do(context.Background(), http.MethodDelete, "/images/"+r, nil, nil, nil)
		}
	})
	if refs[0] == refs[1] {
		t.Fatalf("two agents gave one image %s", refs[0])
	}
	var layers [2][]string
	for i, r := range refs {
		var info struct{ RootFS struct{ Layers []string } }
		if err := platforms[0].c.do(ctx, http.MethodGet, "/images/"+r+"/json", nil, nil, &info); err != nil {
			t.Fatal(err)
		}
		layers[i] = info.RootFS.Layers
	}
	if len(layers[0]) != 2 || len(layers[1]) != 2 || layers[0][0] != layers[1][0] || layers[0][1] == layers[1][1] {
		t.Fatalf("want one shared base layer and one agent layer each, got %q and %q", layers[0], layers[1])
	}
	// the agent inside each image is the one it was made with
	for i, agent := range []string{agentA, agentB} {
		want, err := os.ReadFile(agent)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(want)
		inst, err := platforms[i].Create(ctx, platform.Spec{Name: "layer" + string(rune('a'+i)), Image: image.Debian, Network: platform.NetNone})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err = inst.Exec(ctx, []string{"sha256sum", image.AgentPath}, platform.ExecIO{Stdout: &out})
		inst.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(out.String()); len(got) == 0 || got[0] != hex.EncodeToString(sum[:]) {
			t.Errorf("image %s: agent sha256 %q, want %s", refs[i], out.String(), hex.EncodeToString(sum[:]))
		}
	}
}

type testLogger struct{ t *testing.T }

func (l testLogger) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var _ io.Writer = testLogger{}
