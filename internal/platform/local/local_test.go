package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
)

func TestIDs(t *testing.T) {
	a, b := NewID("r"), NewID("r")
	if a == b || !strings.HasPrefix(a, "isob-r") || len(a) != len("isob-r")+8 {
		t.Errorf("ids %q %q", a, b)
	}
	if v := VethName(a); len(v) > 15 || !strings.HasPrefix(v, "isvr") {
		t.Errorf("veth name %q", v)
	}
}

func TestArgv(t *testing.T) {
	if g := GuestArgv([]string{platform.AgentPlaceholder, "agent", "hello"}); strings.Join(g, " ") != "/usr/local/bin/isobench agent hello" {
		t.Errorf("GuestArgv %q", g)
	}
	if m := MainArgv(platform.Spec{}); strings.Join(m, " ") != "/usr/local/bin/isobench agent idle" {
		t.Errorf("MainArgv %q", m)
	}
}

func TestProcessTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if p := hostos.ParentPID(cmd.Process.Pid); p != os.Getpid() {
		t.Errorf("Parent = %d, want %d", p, os.Getpid())
	}
	var d []int
	for i := 0; i < 200 && len(d) < 2; i++ {
		d = Descendants(cmd.Process.Pid)
		exec.Command("true").Run()
	}
	if len(d) != 2 {
		t.Fatalf("descendants %v, want the two sleeps", d)
	}
	KillTree(cmd.Process.Pid)
	cmd.Wait()
	for _, p := range d {
		if hostos.ParentPID(p) == cmd.Process.Pid {
			t.Errorf("descendant %d still alive", p)
		}
	}
}

func TestRunExitAndCancel(t *testing.T) {
	ctx := context.Background()
	err := Run(ctx, exec.CommandContext(ctx, "sh", "-c", "exit 4"), []string{"x"}, "test")
	var ee *platform.ExitError
	if !asExit(err, &ee) || ee.Code != 4 {
		t.Errorf("exit 4 gave %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := Run(cctx, exec.CommandContext(cctx, "sleep", "10"), []string{"sleep"}, "test"); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("cancelled run gave %v", err)
	}
}

func asExit(err error, ee **platform.ExitError) bool {
	e, ok := err.(*platform.ExitError)
	*ee = e
	return ok
}

func TestUnescapeAndMounts(t *testing.T) {
	if got := hostos.UnescapeMount(`/a\040b\134c`); got != `/a b\c` {
		t.Errorf("unescape %q", got)
	}
	if m := MountsUnder("/proc"); len(m) == 0 || m[0] != "/proc" {
		t.Errorf("mounts under /proc %q", m)
	}
}

func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	// made private, parents too
	d := filepath.Join(base, "a", "state")
	if err := PrivateDir(d); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("made %v, %v; want mode 0700", st.Mode(), err)
	}
	// found readable by others: tightened
	loose := filepath.Join(base, "loose")
	os.Mkdir(loose, 0o755)
	if err := PrivateDir(loose); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(loose); st.Mode().Perm() != 0o700 {
		t.Errorf("found 0755, left %v", st.Mode())
	}
	// found writable by others: refused (what is in it may be planted)
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, os.ModeSticky|0o777)
	if err := PrivateDir(open); err == nil {
		t.Error("a world-writable directory was accepted as a private one")
	}
	// a symbolic link planted under the name is refused
	link := filepath.Join(base, "link")
	if err := os.Symlink(d, link); err != nil {
		t.Fatal(err)
	}
	if err := PrivateDir(link); err == nil {
		t.Error("a symbolic link was accepted as a private directory")
	}
	// someone else's directory is refused
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		os.Mkdir(other, 0o700)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := PrivateDir(other); err == nil {
			t.Error("a directory of uid 65534 was accepted")
		}
	}
	// per-instance directories are fresh
	if err := FreshDir(filepath.Join(d, "i")); err != nil {
		t.Fatal(err)
	}
	if err := FreshDir(filepath.Join(d, "i")); err == nil {
		t.Error("FreshDir reused an existing directory")
	}
}
