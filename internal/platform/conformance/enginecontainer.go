package conformance

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
)

// EngineContainer creates, with an engine's own CLI (docker, podman), a
// stopped container from one of isobench's images, labelled isobench
// (platform.Label=1) and with labels ("KEY=VALUE"), for a test of what
// the platform's Sweep lists; the test's cleanup removes it. Without the
// CLI or an isobench image the test is skipped, or fails when
// $ISOBENCH_REQUIRE_PLATFORMS names platform.
func EngineContainer(t *testing.T, cli, platformName string, labels ...string) (name string) {
	t.Helper()
	skip := t.Skipf
	if Required(platformName) {
		skip = t.Fatalf
	}
	if _, err := exec.LookPath(cli); err != nil {
		skip("no %s CLI to create a container with", cli)
	}
	img, _ := exec.Command(cli, "images", "--format", "{{.Repository}}:{{.Tag}}").Output()
	ref := ""
	for _, l := range strings.Fields(string(img)) {
		if strings.Contains(l, "isobench/") {
			ref = l
			break
		}
	}
	if ref == "" {
		skip("no isobench image in %s to create a container from", cli)
	}
	name = "isobench-sweep-test-" + filepath.Base(t.TempDir())
	args := []string{"create", "--label", platform.Label + "=1"}
	for _, l := range labels {
		args = append(args, "--label", l)
	}
	args = append(args, "--name", name, ref, "/bin/true")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s create: %v: %s", cli, err, out)
	}
	t.Cleanup(func() { exec.Command(cli, "rm", "-f", name).Run() })
	return name
}
