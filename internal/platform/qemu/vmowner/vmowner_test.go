package vmowner

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := Record{PID: 42, Tap: "isq0a1b2c3d4e", Disk: "/s/qemu/disks/x.img", Cgroup: "isoq-123"}
	if err := want.Write(dir); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil || got != want {
		t.Fatalf("read %+v, %v; want %+v", got, err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "."+File)); !os.IsNotExist(err) {
		t.Errorf("the temporary record is left: %v", err)
	}
}

// TestParseOld reads a record written before the cgroup key existed, and
// one with a bad pid and stray lines.
func TestParseOld(t *testing.T) {
	got := Parse([]byte("pid=7\ntap=isqx\ndisk=/d\nvolume=/v\n"))
	if want := (Record{PID: 7, Tap: "isqx", Disk: "/d", Volume: "/v"}); got != want {
		t.Errorf("old record: %+v, want %+v", got, want)
	}
	if got := Parse([]byte("pid=x\nnoise\nfuture=1\ncgroup=isoq-9")); got != (Record{Cgroup: "isoq-9"}) {
		t.Errorf("odd record: %+v", got)
	}
	if _, err := Read(t.TempDir()); err == nil {
		t.Error("a dir without a record read without error")
	}
}
