package runc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestContainerCgroup(t *testing.T) {
	for _, tc := range []struct{ dir, want string }{
		{"/sys/fs/cgroup/memory/isobench/isob-r1", "/sys/fs/cgroup/memory/isobench/isob-r1"},
		{"/sys/fs/cgroup/memory/isobench/isob-r1/init.scope", "/sys/fs/cgroup/memory/isobench/isob-r1"},
		{"/sys/fs/cgroup/memory/isobench/isob-r12", ""}, // another container
		{"/sys/fs/cgroup/memory/user.slice", ""},        // a reused pid
	} {
		if got := ContainerCgroup(tc.dir, "isob-r1"); got != tc.want {
			t.Errorf("ContainerCgroup(%q) = %q, want %q", tc.dir, got, tc.want)
		}
	}
}

// mkdirs makes dirs under root, and files (empty) at the paths in files.
func mkdirs(t *testing.T, root string, dirs []string, files ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConfiguredCgroupDirs(t *testing.T) {
	// v1 with cpuacct mounted alone, and with cpu,cpuacct together
	for _, cpuH := range []string{"cpuacct", "cpu,cpuacct"} {
		root := t.TempDir()
		mkdirs(t, root, []string{"memory/isobench/isob-r1", cpuH + "/isobench/isob-r1"})
		mem, cpu, err := ConfiguredCgroupDirs(root, "isob-r1")
		if err != nil || mem != filepath.Join(root, "memory/isobench/isob-r1") || cpu != filepath.Join(root, cpuH, "isobench/isob-r1") {
			t.Errorf("v1 %s: %q %q %v", cpuH, mem, cpu, err)
		}
		if _, _, err := ConfiguredCgroupDirs(root, "isob-r2"); err == nil {
			t.Errorf("v1 %s: a container without a cgroup was found", cpuH)
		}
	}
	// v2: one directory with memory.current
	root := t.TempDir()
	mkdirs(t, root, []string{"isobench/isob-c1"}, "isobench/isob-c1/memory.current")
	mem, cpu, err := ConfiguredCgroupDirs(root, "isob-c1")
	if want := filepath.Join(root, "isobench/isob-c1"); err != nil || mem != want || cpu != want {
		t.Errorf("v2: %q %q %v", mem, cpu, err)
	}
	// a v1 memory cgroup without its cpuacct one is not enough
	root = t.TempDir()
	mkdirs(t, root, []string{"memory/isobench/isob-r1"})
	if _, _, err := ConfiguredCgroupDirs(root, "isob-r1"); err == nil {
		t.Error("v1 without cpuacct accepted")
	}
}
