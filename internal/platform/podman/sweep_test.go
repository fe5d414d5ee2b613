package podman

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
)

// TestSweepListsContainers: the Factory's Sweep lists a container
// labelled isobench with the token of its isobench.run label and its
// volume directory in a state dir as a part; Leftovers holds what Sweep
// lists; Remove removes the container.
func TestSweepListsContainers(t *testing.T) {
	if Factory.Sweep == nil {
		t.Fatal("the podman Factory declares no Sweep")
	}
	name := conformance.EngineContainer(t, "podman", "podman", platform.Label+".run=abc123")
	state := t.TempDir()
	vol := filepath.Join(state, "podman-volumes", name)
	os.MkdirAll(vol, 0o755)

	found, err := Factory.Sweep(context.Background(), platform.SweepEnv{StateDirs: []string{state}})
	if err != nil {
		t.Fatal(err)
	}
	var ct *platform.Leftover
	part := false
	for i, l := range found {
		switch {
		case l.Name == name:
			ct = &found[i]
		case l.Name == vol && l.Owner == name:
			part = true
		}
	}
	if ct == nil || ct.Kind != "podman-container" || ct.Token != "abc123" || !part {
		t.Fatalf("found %+v, want the container (token abc123) and its volume", found)
	}
	left, err := Leftovers(context.Background(), state)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(left, "podman-container "+name) || !slices.Contains(left, "dir "+vol) {
		t.Errorf("Leftovers %q lack what Sweep lists", left)
	}
	if err := ct.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command("podman", "ps", "-a", "--filter", "name="+name, "--format", "{{.Names}}").Output(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("left: %s", out)
	}
}
