package hostinfo

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFingerprintRecordsStorageAndSwap(t *testing.T) {
	f := Fingerprint()
	for _, k := range []string{"cores", "kernel", "swap", "cwd", "cwd_fs", "loadavg"} {
		if f[k] == "" {
			t.Errorf("fingerprint lacks %q: %v", k, f)
		}
	}
	if s := f["swap"]; s != "on" && s != "off" {
		t.Errorf("swap = %q", s)
	}
}

func TestFSTypeOfMissingDirUsesAncestor(t *testing.T) {
	dir := t.TempDir()
	want, err := FSType(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := FSType(filepath.Join(dir, "not", "yet"))
	if err != nil || got != want {
		t.Fatalf("FSType(missing) = %q, %v; want %q", got, err, want)
	}
	if got, err := FSType("/dev/shm"); err == nil && got != "tmpfs" {
		t.Errorf("/dev/shm is %q, want tmpfs", got)
	}
	f := map[string]string{}
	AddStorage(f, "state_dir", filepath.Join(dir, "state"))
	if f["state_dir_fs"] != want || !strings.HasSuffix(f["state_dir"], "/state") {
		t.Errorf("AddStorage: %v", f)
	}
}

func TestWarnings(t *testing.T) {
	clean := map[string]string{
		"cpu_governor": "performance", "smt": "off", "thp": "always madvise [never]", "swap": "off",
		"loadavg": "0.10 0.20 0.30 1/100 42", "cores": "2", "cwd_fs": "ext4", "qemu.accel": "kvm",
	}
	if w := Warnings(clean); len(w) != 0 {
		t.Fatalf("clean host warned: %q", w)
	}
	if w := Warnings(map[string]string{}); len(w) != 0 {
		t.Fatalf("empty fingerprint warned: %q", w)
	}
	bad := map[string]string{
		"cpu_governor": "powersave", "smt": "on", "thp": "[always] madvise never", "swap": "on",
		"loadavg": "3.50 1.00 1.00 2/100 42", "cores": "2", "state_dir_fs": "tmpfs",
		"qemu.accel": "tcg", "qemu:cpus=1.accel": "kvm",
	}
	w := Warnings(bad)
	want := []string{"governor", "SMT", "huge pages", "swap", "load average", "state_dir is tmpfs", "qemu runs under TCG"}
	if len(w) != len(want) {
		t.Fatalf("got %d warnings, want %d: %q", len(w), len(want), w)
	}
	for i, s := range want {
		if !strings.Contains(w[i], s) {
			t.Errorf("warning %d = %q, want it to mention %q", i, w[i], s)
		}
	}
	if !slices.Equal(Warnings(bad), w) {
		t.Error("Warnings is not deterministic")
	}
	// CPU-limited platforms on a host whose idle CPUs halt: a warning,
	// unless the run holds them polling or they cannot halt
	limited := map[string]string{"cores": "2", "cpu_limited": "qemu:quota=0.25", "cpuidle_halts": "yes", "cpuidle_driver": "haltpoll", "cpu_idle": "host"}
	if w := Warnings(limited); len(w) != 1 || !strings.Contains(w[0], "cpuidle haltpoll") || !strings.Contains(w[0], "qemu:quota=0.25") || !strings.Contains(w[0], "--cpu-idle poll") {
		t.Errorf("limited platforms, halting CPUs: %q", w)
	}
	for k, v := range map[string]string{"cpu_idle": "poll", "cpuidle_halts": "no", "cpu_limited": ""} {
		m := maps.Clone(limited)
		m[k] = v
		if w := Warnings(m); len(w) != 0 {
			t.Errorf("%s=%s warned: %q", k, v, w)
		}
	}
	if selected("madvise") != "madvise" || selected("a [b] c") != "b" {
		t.Error("selected")
	}
}

// The fingerprint records the version and the commit stamped at link time
// (the Makefile's -X flags set Version and commit).
func TestFingerprintRecordsTheBuild(t *testing.T) {
	savedV, savedC := Version, commit
	defer func() { Version, commit = savedV, savedC }()
	Version, commit = "v1.2.3", "0123456789ab-dirty"
	f := Fingerprint()
	if f["isobench_version"] != "v1.2.3" || f["isobench_commit"] != "0123456789ab-dirty" {
		t.Fatalf("isobench_version %q, isobench_commit %q", f["isobench_version"], f["isobench_commit"])
	}
}
