package cleanup

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/platform/qemu/vmowner"
)

// TestQEMUCgroups: a dead VM's cgroup (named in its run dir's owner
// record) is planned with its run dir and removed; a VM cgroup whose run
// dir is gone is planned when nothing runs in it and kept when something
// does; a live VM's is left alone.
func TestQEMUCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for cgroups")
	}
	tmp, err := vmowner.MakeBase(filepath.Join(t.TempDir(), "qemu"))
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	runDir := func(pid int) (string, *cgroup.Group) {
		d, err := os.MkdirTemp(tmp, vmowner.DirPrefix+"*")
		if err != nil {
			t.Fatal(err)
		}
		g := newGroup(t, filepath.Base(d))
		if err := (vmowner.Record{PID: pid, Cgroup: filepath.Base(d)}).Write(d); err != nil {
			t.Fatal(err)
		}
		return d, g
	}
	deadDir, deadCg := runDir(dead.Process.Pid)
	liveDir, liveCg := runDir(os.Getpid())
	emptyCg := newGroup(t, testCgroupName())
	busyCg := newGroup(t, testCgroupName())
	sleep := exec.Command("sleep", "600")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	for _, f := range busyCg.ProcsFiles() {
		if err := os.WriteFile(f, []byte(strconv.Itoa(sleep.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
	}

	p, err := Scan(t.Context(), Options{QEMUDir: tmp, RecordDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	mine := map[string]bool{deadDir: true, liveDir: true}
	for _, g := range []*cgroup.Group{deadCg, liveCg, emptyCg, busyCg} {
		for _, d := range g.Dirs() {
			mine[d] = true
		}
	}
	var planned []Object
	var names []string
	for _, o := range p.Objects {
		if mine[o.Name] {
			planned = append(planned, o)
			names = append(names, o.Kind+" "+o.Name)
		}
	}
	want := []string{"dir " + deadDir}
	for _, d := range append(deadCg.Dirs(), emptyCg.Dirs()...) {
		want = append(want, "cgroup "+d)
	}
	slices.Sort(names)
	slices.Sort(want)
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Fatalf("planned:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	kept := false
	for _, k := range p.Kept {
		if slices.Contains(busyCg.Dirs(), k.Name) {
			kept = true
		}
	}
	if !kept {
		t.Errorf("the cgroup with a process in it is not listed as kept: %+v", p.Kept)
	}
	if fails := Remove(context.WithoutCancel(t.Context()), &Plan{Objects: planned}); len(fails) > 0 {
		t.Fatalf("remove: %v", fails)
	}
	for _, d := range append(append([]string{deadDir}, deadCg.Dirs()...), emptyCg.Dirs()...) {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", d, err)
		}
	}
	for _, d := range append([]string{liveDir}, liveCg.Dirs()...) {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("the live VM's %s: %v", d, err)
		}
	}
}

// testCgroupName is a VM cgroup name (isoq-<digits>) no real VM has: the
// platform's have at most ten digits (os.MkdirTemp's random part).
func testCgroupName() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1e12))
	return fmt.Sprintf("%s9%012d", vmowner.DirPrefix, n)
}

// newGroup makes cgroup isobench/name, removed when the test ends.
func newGroup(t *testing.T, name string) *cgroup.Group {
	t.Helper()
	g, err := cgroup.New(name, cgroup.Limits{})
	if err != nil {
		t.Skipf("cgroups: %v", err)
	}
	t.Cleanup(func() { g.Remove() })
	return g
}
