package blockdev

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// a sysfs tree as the kernel lays out vda and its partition vda1
func fakeSys(t *testing.T) string {
	t.Helper()
	sys := t.TempDir()
	disk := filepath.Join(sys, "devices", "pci0000:00", "virtio3", "block", "vda")
	part := filepath.Join(disk, "vda1")
	for _, d := range []string{part, filepath.Join(sys, "dev", "block")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(disk, "dev"), []byte("254:0\n"), 0o644)
	os.WriteFile(filepath.Join(disk, "uevent"), []byte("MAJOR=254\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\n"), 0o644)
	os.WriteFile(filepath.Join(part, "dev"), []byte("254:1\n"), 0o644)
	os.WriteFile(filepath.Join(part, "partition"), []byte("1\n"), 0o644)
	os.WriteFile(filepath.Join(part, "uevent"), []byte("DEVNAME=vda1\nDEVTYPE=partition\n"), 0o644)
	os.Symlink(disk, filepath.Join(sys, "dev", "block", "254:0"))
	os.Symlink(part, filepath.Join(sys, "dev", "block", "254:1"))
	return sys
}

func TestPartitionIsChargedToItsDisk(t *testing.T) {
	sys := fakeSys(t)
	for _, mm := range []string{"254:1", "254:0"} {
		d, err := fromMajMin(sys, mm)
		if err != nil {
			t.Fatal(err)
		}
		if d.MajMin != "254:0" || d.Node != "/dev/vda" {
			t.Errorf("%s: %+v, want the disk 254:0 /dev/vda", mm, d)
		}
	}
	if _, err := fromMajMin(sys, "8:0"); !errors.Is(err, ErrNoDisk) {
		t.Errorf("unknown device: %v", err)
	}
}

func TestOfThisHost(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := of(SysRoot, "/proc"); !errors.Is(err, ErrNoDisk) {
		t.Errorf("/proc: %v, want ErrNoDisk", err)
	}
	d, err := Of("/")
	if errors.Is(err, ErrNoDisk) {
		t.Skipf("/ is on no block device here: %v", err)
	}
	if err != nil || d.MajMin == "" || d.Node == "" {
		t.Fatalf("/: %+v, %v", d, err)
	}
	if _, err := os.Stat(filepath.Join(SysRoot, "dev", "block", d.MajMin, "partition")); err == nil {
		t.Errorf("/ resolved to a partition, %+v", d)
	}
}

func TestParseThrottle(t *testing.T) {
	size := func(s string) (int64, error) {
		switch s {
		case "50m":
			return 50 << 20, nil
		case "1k":
			return 1024, nil
		}
		return 0, errors.New("bad")
	}
	got, err := ParseThrottle(map[string]string{"read-iops": "1000", "read-bps": "50m"}, size)
	if err != nil || got != (Throttle{ReadIOPS: 1000, ReadBPS: 50 << 20}) || !got.Set() {
		t.Fatalf("%+v %v", got, err)
	}
	if got, _ := ParseThrottle(map[string]string{}, size); got.Set() {
		t.Errorf("no options: %+v", got)
	}
	for _, bad := range []map[string]string{{"read-iops": "0"}, {"read-iops": "1k"}, {"read-iops": "-5"}, {"read-bps": "1k"}, {"read-bps": "x"}} {
		if _, err := ParseThrottle(bad, size); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}
