package docker

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
)

// TestSweepListsContainers: the Factory's Sweep lists a container
// labelled isobench with the tokens of its labels (isobench.run, or
// isobench.name holding it), and Remove removes it.
func TestSweepListsContainers(t *testing.T) {
	if Factory.Sweep == nil {
		t.Fatal("the docker Factory declares no Sweep")
	}
	name := conformance.EngineContainer(t, "docker", "docker", platform.Label+".name=r7abc123-1")

	found, err := Factory.Sweep(context.Background(), platform.SweepEnv{})
	if err != nil {
		t.Fatal(err)
	}
	var ct *platform.Leftover
	for i, l := range found {
		if l.Name == name {
			ct = &found[i]
		}
	}
	if ct == nil || ct.Kind != "docker-container" || ct.Token != "" || ct.SpecName != "r7abc123-1" {
		t.Fatalf("found %+v, want the container with its spec name", found)
	}
	if err := ct.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ct.Remove(context.Background()); err != nil {
		t.Errorf("removing it again: %v", err)
	}
	if out, _ := exec.Command("docker", "ps", "-a", "--filter", "name="+name, "--format", "{{.Names}}").Output(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("left: %s", out)
	}
}
