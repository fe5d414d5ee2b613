package cleanup

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/isobench/isobench/internal/platform/qemu/vmowner"
)

// planned lists the plan's objects whose name is or is under one of dirs,
// as "kind name".
func planned(p *Plan, dirs ...string) []string {
	var out []string
	for _, o := range p.Objects {
		for _, d := range dirs {
			if o.Name == d || strings.HasPrefix(o.Name, d+"/") || strings.Contains(o.Name, " "+d+"/") {
				out = append(out, o.Kind+" "+o.Name)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// keptWhy is why the plan keeps name, "" if it does not.
func keptWhy(p *Plan, name string) string {
	for _, k := range p.Kept {
		if k.Name == name {
			return k.Why
		}
	}
	return ""
}

func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// TestQEMUHostile plants QEMU run directories any local user could have
// made (records naming /etc-like paths and cgroup globs, a directory named
// with the bare prefix, a link, a record that is a link) beside a live
// VM's (a process naming its run dir) and a real dead VM's: isobench clean
// plans to remove only the dead VM's run dir and disk, keeps the rest
// saying why, and kills nothing.
func TestQEMUHostile(t *testing.T) {
	base, err := vmowner.MakeBase(filepath.Join(t.TempDir(), "qemu"))
	if err != nil {
		t.Fatal(err)
	}
	dead := "pid=" + strconv.Itoa(deadPID(t)) + "\n"
	victim := t.TempDir() // stands for /etc
	os.WriteFile(filepath.Join(victim, "passwd"), []byte("root:x:0:0"), 0o644)
	write := func(d, rec string) string {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, vmowner.File), []byte(rec), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	plant := func(rec string) string {
		d, err := os.MkdirTemp(base, vmowner.DirPrefix+"*")
		if err != nil {
			t.Fatal(err)
		}
		return write(d, rec)
	}

	// a live VM: its record names this process, its "qemu" names files in
	// its run dir, isoq-123
	live := write(filepath.Join(base, vmowner.DirPrefix+"123"), "pid="+strconv.Itoa(os.Getpid())+"\n")
	vm := exec.Command("sh", "-c", "exec sleep 600", "qemu-system-x86_64", "path="+live+"/console.log")
	if err := vm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vm.Process.Kill(); vm.Wait() })

	hostile := map[string]string{ // run dir -> what the reason says
		plant(dead + "disk=" + victim + "\n"):                          "disk=",
		plant(dead + "volume=" + victim + "\n"):                        "volume=",
		plant(dead + "disk=/s/qemu/disks/../../.." + victim + "\n"):    "disk=",
		plant(dead + "cgroup=*\n"):                                     "cgroup=",
		plant(dead + "pid=x\n"):                                        "pid=",
		write(filepath.Join(base, vmowner.DirPrefix), dead):            "not named",
		write(filepath.Join(base, vmowner.DirPrefix+"1x"), dead):       "not named",
		plant("pid=" + strconv.Itoa(os.Getpid()) + "\ncgroup=isoq-\n"): "cgroup=",
	}
	link := filepath.Join(base, vmowner.DirPrefix+"7")
	os.Symlink(victim, link)
	hostile[link] = "not a directory"
	stolen, _ := os.MkdirTemp(base, vmowner.DirPrefix+"*")
	os.Symlink(filepath.Join(live, vmowner.File), filepath.Join(stolen, vmowner.File))
	hostile[stolen] = "symbolic link"

	// a dead VM whose name is a prefix of the live one's (isoq-12): its
	// own leftovers go, the live VM's process stays
	prefix := write(filepath.Join(base, vmowner.DirPrefix+"12"), dead)
	// a dead VM with a disk in a state dir no run record names: kept
	// until clean is told the state dir
	state := t.TempDir()
	disk := vmowner.DiskPath(state, "isobench-dead-abc123")
	os.MkdirAll(filepath.Dir(disk), 0o700)
	os.WriteFile(disk, nil, 0o600)
	withDisk := plant(dead + "disk=" + disk + "\n")

	opts := Options{QEMUDir: base, RecordDir: t.TempDir()}
	p, err := Scan(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dir " + prefix}
	if got := planned(p, base, victim, state); !slices.Equal(got, want) {
		t.Errorf("planned:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, o := range p.Objects {
		if strings.Contains(o.Name, strconv.Itoa(vm.Process.Pid)+" ") {
			t.Errorf("the live VM's process is planned: %s", o)
		}
	}
	for d, why := range hostile {
		if got := keptWhy(p, d); got == "" || !strings.Contains(got, why) {
			t.Errorf("%s: kept %q, want a reason saying %q", d, got, why)
		}
	}
	if got := keptWhy(p, withDisk); !strings.Contains(got, "--state-dir") {
		t.Errorf("the VM whose disk is in an unknown state dir: kept %q", got)
	}
	if fails := Remove(context.WithoutCancel(t.Context()), p); len(fails) > 0 {
		t.Logf("failures (other sessions' objects): %v", fails)
	}
	for _, left := range []string{filepath.Join(victim, "passwd"), live, link, disk} {
		if _, err := os.Lstat(left); err != nil {
			t.Errorf("%s was removed: %v", left, err)
		}
	}
	for d := range hostile {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	if err := vm.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the live VM's process was killed: %v", err)
	}

	// told the state dir, clean removes that VM's run dir and disk, and
	// the snapshot overlay directory of a VM whose run dir is gone (not
	// the live VM's, nor a link planted there)
	deadOverlay := vmowner.OverlayDir(state, vmowner.DirPrefix+"55")
	liveOverlay := vmowner.OverlayDir(state, filepath.Base(live))
	os.MkdirAll(deadOverlay, 0o700)
	os.MkdirAll(liveOverlay, 0o700)
	os.Symlink(victim, vmowner.OverlayDir(state, vmowner.DirPrefix+"56"))
	opts.StateDirs = []string{state}
	if p, err = Scan(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	want = []string{"dir " + withDisk, "qemu-disk " + disk, "qemu-overlay " + deadOverlay}
	slices.Sort(want)
	if got := planned(p, base, victim, state); !slices.Equal(got, want) {
		t.Errorf("with --state-dir, planned:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// a base of another user's is not searched at all
	if os.Geteuid() == 0 {
		if err := os.Chown(base, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if p, err = Scan(t.Context(), opts); err != nil {
			t.Fatal(err)
		}
		if got := planned(p, base, victim, state); len(got) > 0 {
			t.Errorf("a base of uid 65534: planned %q", got)
		}
		if why := keptWhy(p, base); !strings.Contains(why, "uid 65534") {
			t.Errorf("a base of uid 65534: kept %q", why)
		}
	}
}

// TestNativeHostile: an isobench-native directory that is a link, or
// another user's, is not searched (nothing in it is planned), and a link
// planted inside a good one is kept; a real dead run's directory in a
// good one is still found.
func TestNativeHostile(t *testing.T) {
	victim := t.TempDir()
	leftover := filepath.Join(victim, "r1abcdef-1-123")
	os.Mkdir(leftover, 0o700)

	linked := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(linked, "isobench-native")); err != nil {
		t.Fatal(err)
	}
	good := t.TempDir()
	base := filepath.Join(good, "isobench-native")
	os.Mkdir(base, 0o711)
	real := filepath.Join(base, "r1fedcba-1-456")
	os.Mkdir(real, 0o700)
	inner := filepath.Join(base, "r1fedcba-2-789")
	os.Symlink(victim, inner)
	dirs := []string{linked, good}
	other := t.TempDir()
	if os.Geteuid() == 0 {
		ob := filepath.Join(other, "isobench-native")
		os.Mkdir(ob, 0o711)
		os.Mkdir(filepath.Join(ob, "r1abcdef-1-123"), 0o700)
		if err := os.Chown(ob, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, other)
	}
	// the runs are dead by their records (tokens abcdef, fedcba)
	records := t.TempDir()
	for _, token := range []string{"abcdef", "fedcba"} {
		pid := strconv.Itoa(deadPID(t))
		os.WriteFile(filepath.Join(records, pid+".json"), []byte(`{"pid":`+pid+`,"start":1,"token":"`+token+`"}`), 0o644)
	}
	p, err := Scan(t.Context(), Options{TempDirs: dirs, RecordDir: records, QEMUDir: filepath.Join(t.TempDir(), "none")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dir " + real}
	if got := planned(p, victim, linked, good, other); !slices.Equal(got, want) {
		t.Errorf("planned:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if why := keptWhy(p, filepath.Join(linked, "isobench-native")); !strings.Contains(why, "symbolic link") {
		t.Errorf("a linked isobench-native: kept %q", why)
	}
	if why := keptWhy(p, inner); why == "" {
		t.Error("a link inside isobench-native is not kept")
	}
	if os.Geteuid() == 0 {
		if why := keptWhy(p, filepath.Join(other, "isobench-native")); !strings.Contains(why, "uid 65534") {
			t.Errorf("an isobench-native of uid 65534: kept %q", why)
		}
	}
}
