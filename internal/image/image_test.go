package image

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A dynamically linked agent is refused with the way out, before anything
// is written; a static one passes the check.
func TestDynamicAgentRefused(t *testing.T) {
	dynamic := "/bin/ls" // Debian's coreutils are dynamically linked
	if ok, err := staticELF(dynamic); err != nil || ok {
		t.Skipf("%s is not a dynamic ELF here (static=%v, %v)", dynamic, ok, err)
	}
	dir := filepath.Join(t.TempDir(), "rootfs")
	err := Builder{AgentBinary: dynamic}.BuildRootfs(t.Context(), Minimal, dir)
	if err == nil || !strings.Contains(err.Error(), "dynamically linked") || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("BuildRootfs with %s: %v, want a 'dynamically linked ... CGO_ENABLED=0' error", dynamic, err)
	}
	if _, err := os.Stat(filepath.Join(dir, AgentPath)); err == nil {
		t.Error("the dynamic agent was copied in anyway")
	}
	if _, err := staticELF(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("staticELF of a missing file: no error")
	}
	if bb, err := (Builder{}).busybox(); err == nil {
		if ok, err := staticELF(bb); err != nil || !ok {
			t.Errorf("busybox %s: static=%v, %v", bb, ok, err)
		}
	}
}

func TestTarKeepsNumericOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "var/lib/redis"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(dir, "var/lib/redis"), 101, 102); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Tar(dir, &buf); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "var/lib/redis/" {
			found = true
			if h.Uid != 101 || h.Gid != 102 || h.Uname != "" {
				t.Errorf("var/lib/redis: uid %d gid %d uname %q, want 101 102 and no name", h.Uid, h.Gid, h.Uname)
			}
		} else if h.Uid != 0 {
			t.Errorf("%s: uid %d, want 0 (created by root)", h.Name, h.Uid)
		}
	}
	if !found {
		t.Fatal("var/lib/redis missing from the tar")
	}
}
