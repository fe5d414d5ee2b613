package image

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParsePolicy(t *testing.T) {
	out := `nginx:
  Installed: (none)
  Candidate: 1.22.1-9+deb12u11
  Version table:
     1.22.1-9+deb12u11 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
redis-server:
  Installed: 5:7.0.15-1~deb12u10
  Candidate: 5:7.0.15-1~deb12u10
`
	got, err := parsePolicy([]string{"redis-server", "nginx"}, out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"nginx=1.22.1-9+deb12u11", "redis-server=5:7.0.15-1~deb12u10"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := parsePolicy([]string{"nginx", "nosuch"}, out+"nosuch:\n  Installed: (none)\n  Candidate: (none)\n"); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("a package without a candidate: got %v, want an error naming it", err)
	}
}

// TestDebianBuild builds the debian profile twice into one state directory
// (ISOBENCH_TEST_STATE keeps it between runs): the second build reuses the
// Debian tree. The tree holds the servers and the agent.
func TestDebianBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Debian tree with mmdebstrap (minutes)")
	}
	if os.Geteuid() != 0 {
		t.Skip("mmdebstrap --mode=root needs root")
	}
	if _, err := exec.LookPath(mmdebstrap); err != nil {
		t.Skip("mmdebstrap not installed")
	}
	agent := filepath.Join(t.TempDir(), "isobench")
	build := exec.Command("go", "build", "-o", agent, "github.com/isobench/isobench/cmd/isobench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the agent: %v\n%s", err, out)
	}
	state := os.Getenv("ISOBENCH_TEST_STATE")
	if state == "" {
		state = filepath.Join(os.TempDir(), "isobench-local-platforms-test") // local.TestStateDir: the platform tests reuse the tree
	}
	var log bytes.Buffer
	b := Builder{AgentBinary: agent, StateDir: state, Log: &log}
	d1, err := b.Digest(Debian)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		dir := filepath.Join(t.TempDir(), "root")
		os.Mkdir(dir, 0o755)
		start := time.Now()
		if err := b.BuildRootfs(t.Context(), Debian, dir); err != nil {
			t.Fatalf("build %d: %v\n%s", i+1, err, log.String())
		}
		t.Logf("build %d took %v", i+1, time.Since(start))
		for _, f := range []string{"usr/sbin/nginx", "usr/sbin/apache2", "usr/bin/redis-server", "usr/sbin/mariadbd", "usr/bin/wrk", "usr/bin/ab", "usr/bin/redis-benchmark", "usr/bin/sysbench", "usr/sbin/sshd", "usr/sbin/vsftpd", "usr/sbin/postfix", "usr/sbin/smbd", "usr/sbin/policy-rc.d", AgentPath[1:]} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("build %d: %v", i+1, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "usr/share/doc/nginx/copyright")); err == nil {
			t.Errorf("build %d: documentation was installed", i+1)
		}
	}
	if !strings.Contains(log.String(), "reusing the Debian tree") {
		t.Errorf("the second build did not reuse the Debian tree:\n%s", log.String())
	}
	d2, err := b.Digest(Debian)
	if err != nil || d1 != d2 {
		t.Errorf("digest changed between builds: %s, %s (%v)", d1, d2, err)
	}
}
