package hostos

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCgroupOOMKills(t *testing.T) {
	v1 := t.TempDir()
	os.WriteFile(filepath.Join(v1, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), 0o644)
	if n, err := CgroupOOMKills(v1); err != nil || n != 3 {
		t.Fatalf("v1: %d, %v; want 3", n, err)
	}
	v2 := t.TempDir()
	os.WriteFile(filepath.Join(v2, "memory.events"), []byte("low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n"), 0o644)
	if n, err := CgroupOOMKills(v2); err != nil || n != 1 {
		t.Fatalf("v2: %d, %v; want 1", n, err)
	}
	old := t.TempDir() // a kernel without the counter
	os.WriteFile(filepath.Join(old, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\n"), 0o644)
	if _, err := CgroupOOMKills(old); err == nil {
		t.Fatal("no oom_kill counter: want an error, not 0")
	}
	if _, err := CgroupOOMKills(t.TempDir()); err == nil {
		t.Fatal("not a memory cgroup: want an error")
	}
}

func TestMemoryCgroupOfThisProcess(t *testing.T) {
	dir, err := MemoryCgroupOf(os.Getpid())
	if err != nil {
		t.Skipf("no memory cgroup here: %v", err)
	}
	if _, err := CgroupOOMKills(dir); err != nil {
		t.Fatalf("this process's memory cgroup %s: %v", dir, err)
	}
}
