package podman

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
)

// TestDebianAgentLayer: the debian images of two different agents share
// one base layer (the Debian tree, imported once) and each has its own
// agent layer on top, holding exactly that agent, root-owned and
// executable.
func TestDebianAgentLayer(t *testing.T) {
	if testing.Short() {
		t.Skip("imports the Debian image")
	}
	probe, err := New(t.Context(), platform.Options{}, platform.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "podman", err)
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		conformance.SkipUnlessRequired(t, "podman", err)
	}
	agentA := conformance.BuildAgent(t)
	data, err := os.ReadFile(agentA)
	if err != nil {
		t.Fatal(err)
	}
	// another agent: the same static binary with bytes appended
	agentB := filepath.Join(t.TempDir(), "isobench")
	if err := os.WriteFile(agentB, append(data, "podman-layer-test"...), 0o700); err != nil {
		t.Fatal(err)
	}
	// the Debian tree is cached per state dir: share the other tests' one
	state := local.TestStateDir()
	ctx := t.Context()
	agents := []string{agentA, agentB}
	var refs []string
	var platforms []*Platform
	for _, agent := range agents {
		p, err := New(ctx, platform.Options{}, platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := p.image(ctx, image.Debian)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
		platforms = append(platforms, p)
	}
	t.Cleanup(func() {
		for _, r := range refs {
			podman(context.Background(), nil, "rmi", r) // not --force: an image in use stays
		}
	})
	if refs[0] == refs[1] {
		t.Fatalf("two agents gave one image %s", refs[0])
	}
	var layers [2][]string
	for i, r := range refs {
		out, err := podman(ctx, nil, "image", "inspect", "--format", "{{json .RootFS.Layers}}", r)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &layers[i]); err != nil {
			t.Fatalf("layers of %s: %v (%q)", r, err, out)
		}
	}
	if len(layers[0]) != 2 || len(layers[1]) != 2 || layers[0][0] != layers[1][0] || layers[0][1] == layers[1][1] {
		t.Fatalf("want one shared base layer and one agent layer each, got %q and %q", layers[0], layers[1])
	}
	for i, agent := range agents {
		want, err := os.ReadFile(agent)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(want)
		// the instance's main process is the agent: it runs from the layer
		inst, err := platforms[i].Create(ctx, platform.Spec{Name: "layer", Image: image.Debian, Network: platform.NetNone})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err = inst.Exec(ctx, []string{"sh", "-c", "sha256sum " + image.AgentPath + " && stat -c '%u:%g %a' " + image.AgentPath},
			platform.ExecIO{Stdout: &out, Stderr: &out})
		inst.Close(context.Background())
		if err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		got := strings.Fields(out.String())
		if len(got) < 4 || got[0] != hex.EncodeToString(sum[:]) || got[2] != "0:0" || got[3] != "755" {
			t.Errorf("image %s: agent %q, want sha256 %s, owner 0:0, mode 755", refs[i], out.String(), hex.EncodeToString(sum[:]))
		}
	}
}

func TestOneFileTar(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("agent"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := oneFileTar(&buf, "usr/local/bin/isobench", 0o755, st, f); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(tr)
	if h.Name != "usr/local/bin/isobench" || h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 || string(body) != "agent" {
		t.Errorf("entry %s mode %o uid %d gid %d body %q", h.Name, h.Mode, h.Uid, h.Gid, body)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("more than one entry: %v", err)
	}
	// a file that is shorter than its stat said is an error, not a short tar
	f.Seek(2, io.SeekStart)
	if err := oneFileTar(io.Discard, "x", 0o755, st, f); err == nil {
		t.Error("short read accepted")
	}
}

// Only images older than staleAge are stale, and never the current one.
func TestStaleImages(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	imgs := []podmanImage{
		{Names: []string{"localhost/isobench/debian:old"}, Created: now.Add(-2 * time.Hour).Unix()},
		{Names: []string{"localhost/isobench/debian:young"}, Created: now.Add(-10 * time.Minute).Unix()},
		{Names: []string{"localhost/isobench/debian:current"}, Created: now.Add(-3 * time.Hour).Unix()},
	}
	got := staleImages(imgs, "localhost/isobench/debian:current", now)
	if len(got) != 1 || got[0] != "localhost/isobench/debian:old" {
		t.Fatalf("stale %v, want only the old one", got)
	}
}
