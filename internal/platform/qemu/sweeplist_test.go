package qemu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/qemu/vmowner"
)

// TestSweepListsVMs: the Factory's Sweep lists every run directory as a
// VM judged by its owner's pid (a live one's not dead, a dead one's dead
// with its disk and process as parts), a record that fails the checks and
// a dead VM whose disk is in no state directory it was given as kept with
// why, and an overlay whose run directory is gone as dead; the removals
// kill the process and remove the files. leftovers (the tests' list) holds
// what Sweep lists.
func TestSweepListsVMs(t *testing.T) {
	if Factory.Sweep == nil {
		t.Fatal("the qemu Factory declares no Sweep")
	}
	base, err := vmowner.MakeBase(filepath.Join(t.TempDir(), "qemu"))
	if err != nil {
		t.Fatal(err)
	}
	state, other := t.TempDir(), t.TempDir()
	mk := func(name string, rec vmowner.Record) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := rec.Write(d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	disk := func(sd, id string) string {
		p := vmowner.DiskPath(sd, id)
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, nil, 0o600)
		return p
	}
	dead := deadPID(t)
	live := mk(vmowner.DirPrefix+"9100", vmowner.Record{PID: os.Getpid()})
	deadDisk := disk(state, "isobench-dead-1")
	deadDir := mk(vmowner.DirPrefix+"9101", vmowner.Record{PID: dead, Disk: deadDisk})
	elsewhere := mk(vmowner.DirPrefix+"9102", vmowner.Record{PID: dead, Disk: disk(other, "isobench-dead-2")})
	bad := filepath.Join(base, vmowner.DirPrefix+"9103")
	os.Mkdir(bad, 0o700)
	os.WriteFile(filepath.Join(bad, vmowner.File), []byte("pid=x\n"), 0o600)
	overlay := vmowner.OverlayDir(state, vmowner.DirPrefix+"9104")
	os.MkdirAll(overlay, 0o700)
	vm := exec.Command("sh", "-c", "sleep 600; :", "qemu-system-x86_64", "path="+deadDir+"/console.log")
	if err := vm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vm.Process.Kill(); vm.Wait() })

	found, err := SweepDir(base)(t.Context(), platform.SweepEnv{StateDirs: []string{state}})
	if err != nil {
		t.Fatal(err)
	}
	type verdict struct {
		dead bool
		why  string
	}
	got := map[string]verdict{}
	var parts []string
	var remove []platform.Leftover
	for _, l := range found {
		if l.Owner != "" {
			parts = append(parts, l.Kind+" "+strings.Fields(l.Name)[0]+" of "+l.Owner)
			if l.Owner == deadDir {
				remove = append(remove, l)
			}
			continue
		}
		if l.Judge == nil {
			t.Errorf("%s: no Judge", l)
			continue
		}
		d, why := l.Judge()
		got[l.Name] = verdict{d, why}
		if d && l.Name != elsewhere {
			remove = append(remove, l)
		}
	}
	for name, want := range map[string]verdict{
		live:      {false, ""},
		deadDir:   {true, "process " + strconv.Itoa(dead) + " is gone"},
		elsewhere: {false, "--state-dir"},
		bad:       {false, "pid="},
		overlay:   {true, "run directory is gone"},
	} {
		g, ok := got[name]
		if !ok || g.dead != want.dead || !strings.Contains(g.why, want.why) || (want.why == "" && g.why != "") {
			t.Errorf("%s: judged %+v (listed %v), want %+v", name, g, ok, want)
		}
	}
	wantParts := []string{"process " + strconv.Itoa(vm.Process.Pid) + " of " + deadDir, "qemu-disk " + deadDisk + " of " + deadDir,
		"qemu-disk " + vmowner.DiskPath(other, "isobench-dead-2") + " of " + elsewhere}
	slices.Sort(parts)
	if !slices.Equal(parts, wantParts) {
		t.Errorf("parts %q, want %q", parts, wantParts)
	}
	for _, l := range remove {
		if err := l.Remove(context.Background()); err != nil {
			t.Errorf("remove %s: %v", l, err)
		}
	}
	for _, gone := range []string{deadDir, deadDisk, overlay} {
		if _, err := os.Lstat(gone); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", gone, err)
		}
	}
	exited := make(chan struct{})
	go func() { vm.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Error("the dead VM's process was not killed")
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live VM's run dir: %v", err)
	}

	// the tests' leftovers list what Sweep lists (here: this state dir's
	// disks, and the overlay no longer)
	left := leftovers(state)
	if slices.Contains(left, "qemu-overlay "+overlay) {
		t.Errorf("leftovers still list the removed overlay: %q", left)
	}
	os.MkdirAll(overlay, 0o700)
	if left := leftovers(state); !slices.Contains(left, "qemu-overlay "+overlay) {
		t.Errorf("leftovers lack the overlay Sweep lists: %q", left)
	}
}
