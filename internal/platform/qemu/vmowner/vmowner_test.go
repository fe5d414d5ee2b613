package vmowner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runDir makes a run directory named like the platform's in a private
// base of the test's own.
func runDir(t *testing.T) (base, dir string) {
	t.Helper()
	base, err := MakeBase(filepath.Join(t.TempDir(), "qemu"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err = os.MkdirTemp(base, DirPrefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	return base, dir
}

func TestRoundTrip(t *testing.T) {
	_, dir := runDir(t)
	want := Record{PID: 42, Tap: "isq0a1b2c3d4e", Disk: DiskPath("/s", "isobench-x-abc123"), Volume: VolumePath("/s", "isobench-x-abc123"), Cgroup: filepath.Base(dir)}
	if err := want.Write(dir); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil || got != want {
		t.Fatalf("read %+v, %v; want %+v", got, err, want)
	}
	if sd, err := got.StateDir(); sd != "/s" || err != nil {
		t.Errorf("state dir %q, %v; want /s", sd, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "."+File)); !os.IsNotExist(err) {
		t.Errorf("the temporary record is left: %v", err)
	}
}

// TestParseOld reads a record written before the cgroup key existed, and
// one with stray lines and unknown keys.
func TestParseOld(t *testing.T) {
	got, err := Parse([]byte("pid=7\ntap=isq0123456789\ndisk=/s/qemu/disks/isobench-a-1.img\nvolume=\n"))
	if want := (Record{PID: 7, Tap: "isq0123456789", Disk: "/s/qemu/disks/isobench-a-1.img"}); err != nil || got != want {
		t.Errorf("old record: %+v, %v; want %+v", got, err, want)
	}
	if got, err := Parse([]byte("pid=9\nnoise\nfuture=1\ncgroup=isoq-9")); err != nil || got != (Record{PID: 9, Cgroup: "isoq-9"}) {
		t.Errorf("odd record: %+v, %v", got, err)
	}
	if _, err := Read(t.TempDir()); err == nil {
		t.Error("a dir without a record read without error")
	}
}

// TestParseHostile: records any local user could have planted (or a
// corrupt one) are refused, field by field, saying which.
func TestParseHostile(t *testing.T) {
	ok := "pid=7\n"
	for rec, field := range map[string]string{
		"":                    "pid",
		"pid=x\n":             "pid",
		"pid=-1\n":            "pid",
		"pid=0\n":             "pid",
		"pid=1 2\n":           "pid",
		"pid=99999999999\n":   "pid",
		ok + "disk=/etc\n":    "disk",
		ok + "disk=/\n":       "disk",
		ok + "disk=etc.img\n": "disk",
		ok + "disk=/s/qemu/disks/../../../etc/isobench-x.img\n":                       "disk",
		ok + "disk=/s/qemu/disks/passwd.img\n":                                        "disk",
		ok + "disk=/s/qemu/disks/isobench-x\n":                                        "disk",
		ok + "disk=/s/qemu/volumes/isobench-x.img\n":                                  "disk",
		ok + "disk=/s/qemu/disks/isobench-*.img\n":                                    "disk",
		ok + "volume=/etc\n":                                                          "volume",
		ok + "volume=/s/qemu/volumes/isobench-x/..\n":                                 "volume",
		ok + "volume=/s/qemu/volumes/isobench-x\ndisk=/t/qemu/disks/isobench-x.img\n": "two state directories",
		ok + "cgroup=*\n":                                                             "cgroup",
		ok + "cgroup=isoq-\n":                                                         "cgroup",
		ok + "cgroup=isoq-*\n":                                                        "cgroup",
		ok + "cgroup=isoq-1/..\n":                                                     "cgroup",
		ok + "cgroup=../isoq-1\n":                                                     "cgroup",
		ok + "cgroup=isob-x1234\n":                                                    "cgroup",
		ok + "tap=eth0\n":                                                             "tap",
		ok + "tap=isq*\n":                                                             "tap",
	} {
		r, err := Parse([]byte(rec))
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%q: %+v, %v; want an error about %s", rec, r, err, field)
		}
	}
}

func TestIsName(t *testing.T) {
	for name, want := range map[string]bool{
		"isoq-1": true, "isoq-4294967295": true,
		"isoq-": false, "isoq-*": false, "isoq-1a": false, "isoq-test1": false, "isoq-1/": false, "xisoq-1": false, "isoq--1": false,
	} {
		if IsName(name) != want {
			t.Errorf("IsName(%q) = %v", name, !want)
		}
	}
}

// TestReadHostile: a record is read only from a run directory named like
// one, from a regular file of this user's, naming its own cgroup.
func TestReadHostile(t *testing.T) {
	base, dir := runDir(t)
	good := Record{PID: 7, Cgroup: filepath.Base(dir)}
	if err := good.Write(dir); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(base, DirPrefix)
	os.Mkdir(bare, 0o700)
	(Record{PID: 7}).Write(bare)
	if _, err := Read(bare); err == nil {
		t.Error("a record in a directory named with the bare prefix was read")
	}
	other, _ := os.MkdirTemp(base, DirPrefix+"*")
	if err := os.Symlink(filepath.Join(dir, File), filepath.Join(other, File)); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(other); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a record that is a symbolic link: %v", err)
	}
	stolen, _ := os.MkdirTemp(base, DirPrefix+"*")
	(Record{PID: 7, Cgroup: filepath.Base(dir)}).Write(stolen)
	if _, err := Read(stolen); err == nil || !strings.Contains(err.Error(), "not its run directory's") {
		t.Errorf("a record naming another run directory's cgroup: %v", err)
	}
	if os.Geteuid() == 0 {
		planted, _ := os.MkdirTemp(base, DirPrefix+"*")
		good.Cgroup = filepath.Base(planted)
		good.Write(planted)
		if err := os.Chown(filepath.Join(planted, File), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(planted); err == nil || !strings.Contains(err.Error(), "uid 65534") {
			t.Errorf("a record of uid 65534: %v", err)
		}
	}
}

// TestList: only real directories named isoq-<digits> in a trusted base
// are listed; a base that is a link, or another user's, lists nothing.
func TestList(t *testing.T) {
	base, dir := runDir(t)
	for _, name := range []string{DirPrefix, DirPrefix + "x1", "other"} {
		os.Mkdir(filepath.Join(base, name), 0o700)
	}
	os.Symlink("/etc", filepath.Join(base, DirPrefix+"5"))
	os.WriteFile(filepath.Join(base, DirPrefix+"6"), nil, 0o600)
	dirs, skipped, err := List(base)
	if err != nil || !slices.Equal(dirs, []string{dir}) {
		t.Fatalf("listed %q, %v; want only %s", dirs, err, dir)
	}
	for _, name := range []string{DirPrefix, DirPrefix + "x1", DirPrefix + "5", DirPrefix + "6"} {
		if skipped[filepath.Join(base, name)] == "" {
			t.Errorf("%s is not listed as skipped: %q", name, skipped)
		}
	}
	if dirs, _, err := List(filepath.Join(t.TempDir(), "none")); err != nil || len(dirs) > 0 {
		t.Errorf("a missing base: %q, %v", dirs, err)
	}
	link := filepath.Join(t.TempDir(), "qemu")
	os.Symlink(base, link)
	if dirs, _, err := List(link); err == nil {
		t.Errorf("a base that is a symbolic link listed %q", dirs)
	}
	if _, err := MakeBase(link); err == nil {
		t.Error("MakeBase accepted a symbolic link")
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(base, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if dirs, _, err := List(base); err == nil || !strings.Contains(err.Error(), "uid 65534") {
			t.Errorf("a base of uid 65534 listed %q, %v", dirs, err)
		}
		if _, err := MakeBase(base); err == nil {
			t.Error("MakeBase accepted a directory of uid 65534")
		}
	}
}
