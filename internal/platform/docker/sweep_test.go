package docker

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
)

// TestSweepListsContainers: the Factory's Sweep lists a container
// labelled isobench with the tokens of its labels (isobench.run, or
// isobench.name holding it), and Remove removes it.
func TestSweepListsContainers(t *testing.T) {
	if Factory.Sweep == nil {
		t.Fatal("the docker Factory declares no Sweep")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI to create a container with")
	}
	img, _ := exec.Command("docker", "images", "--format", "{{.Repository}}:{{.Tag}}").Output()
	ref := ""
	for _, l := range strings.Fields(string(img)) {
		if strings.Contains(l, "isobench/") {
			ref = l
			break
		}
	}
	if ref == "" {
		t.Skip("no isobench image in docker to create a container from")
	}
	name := "isobench-sweep-test-" + filepath.Base(t.TempDir())
	if out, err := exec.Command("docker", "create", "--label", platform.Label+"=1", "--label", platform.Label+".name=r7abc123-1", "--name", name, ref, "/bin/true").CombinedOutput(); err != nil {
		t.Fatalf("docker create: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })

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
