package qemu

import (
	"crypto/rand"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/qemu/vmowner"
)

// deadPID is the pid of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// cgroupName is a VM cgroup name no real VM has (MkdirTemp's digits are
// at most ten).
func cgroupName() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1e12))
	return vmowner.DirPrefix + "9" + strings.Repeat("0", 12-len(n.String())) + n.String()
}

// TestSweepHostile plants run directories the stale sweep must not act on
// (a record naming /etc-like paths outside the state dir, a cgroup glob,
// a directory named with the bare prefix, a link, a well-formed disk of
// another state dir) beside one real dead VM's, and checks that only the
// real one is removed and the others' reasons are logged.
func TestSweepHostile(t *testing.T) {
	state := t.TempDir()
	var log strings.Builder
	p, err := NewPlatform(platform.Options{Name: "qemu"}, platform.Env{AgentBinary: "/bin/true", StateDir: state, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	base, err := vmowner.MakeBase(filepath.Join(t.TempDir(), "qemu"))
	if err != nil {
		t.Fatal(err)
	}
	dead := deadPID(t)
	// what must survive: a victim directory standing for /etc, another
	// state dir's disk, and (as root) a live VM's cgroup
	victim := t.TempDir()
	os.WriteFile(filepath.Join(victim, "passwd"), []byte("root:x:0:0"), 0o644)
	otherState := t.TempDir()
	otherDisk := vmowner.DiskPath(otherState, "isobench-other-abcdef")
	os.MkdirAll(filepath.Dir(otherDisk), 0o700)
	os.WriteFile(otherDisk, nil, 0o600)
	var live *cgroup.Group
	if os.Geteuid() == 0 {
		if live, err = cgroup.New(cgroupName(), cgroup.Limits{}); err == nil {
			t.Cleanup(func() { live.Remove() })
		}
	}

	plant := func(name, rec string) string {
		d := filepath.Join(base, name)
		if name == "" {
			var err error
			if d, err = os.MkdirTemp(base, vmowner.DirPrefix+"*"); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, vmowner.File), []byte(rec), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	pid := "pid=" + strconv.Itoa(dead) + "\n"
	kept := map[string]string{
		plant("", pid+"disk="+victim+"\n"):                                     "disk=",
		plant("", pid+"volume="+victim+"\n"):                                   "volume=",
		plant("", pid+"disk="+state+"/qemu/disks/../../../"+victim+"\n"):       "disk=",
		plant("", pid+"cgroup=*\n"):                                            "cgroup=",
		plant("", pid+"cgroup=isoq-\n"):                                        "cgroup=",
		plant("", "pid=x\ndisk="+vmowner.DiskPath(state, "isobench-a-1")+"\n"): "pid=",
		plant(vmowner.DirPrefix, pid):                                          "",
		plant("", pid+"disk="+otherDisk+"\n"):                                  "",
	}
	if live != nil {
		kept[plant("", pid+"cgroup="+filepath.Base(live.Dirs()[0])+"\n")] = "not its run directory's"
	}
	if err := os.Symlink(victim, filepath.Join(base, vmowner.DirPrefix+"7")); err != nil {
		t.Fatal(err)
	}
	// the real leftover: a dead VM's run dir and disk in this state dir
	realDir, err := os.MkdirTemp(base, vmowner.DirPrefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	disk := vmowner.DiskPath(state, "isobench-dead-123abc")
	if _, err := p.privateDir("disks"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(disk, nil, 0o600)
	if err := (vmowner.Record{PID: dead, Disk: disk}).Write(realDir); err != nil {
		t.Fatal(err)
	}

	p.sweepStale(t.Context(), base)

	for _, gone := range []string{realDir, disk} {
		if _, err := os.Lstat(gone); !os.IsNotExist(err) {
			t.Errorf("the dead VM's %s is left: %v", gone, err)
		}
	}
	for _, left := range []string{filepath.Join(victim, "passwd"), otherDisk, filepath.Join(base, vmowner.DirPrefix+"7")} {
		if _, err := os.Lstat(left); err != nil {
			t.Errorf("%s was removed: %v", left, err)
		}
	}
	if live != nil {
		for _, d := range live.Dirs() {
			if _, err := os.Stat(d); err != nil {
				t.Errorf("a live VM's cgroup %s was removed: %v", d, err)
			}
		}
	}
	for d, why := range kept {
		if _, err := os.Stat(filepath.Join(d, vmowner.File)); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
		if why != "" && !strings.Contains(log.String(), "not sweeping "+d+": ") {
			t.Errorf("no reason logged for %s (want one about %s):\n%s", d, why, log.String())
		}
		if why != "" && !strings.Contains(log.String(), why) {
			t.Errorf("the log does not say %q:\n%s", why, log.String())
		}
	}

	// a base of another user's is not believed at all
	if os.Geteuid() == 0 {
		if err := os.Chown(base, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		log.Reset()
		p.sweepStale(t.Context(), base)
		if !strings.Contains(log.String(), "uid 65534") {
			t.Errorf("a base of uid 65534 swept without a word:\n%s", log.String())
		}
		for d := range kept {
			if _, err := os.Stat(d); err != nil {
				t.Errorf("%s was removed: %v", d, err)
			}
		}
	}
}
