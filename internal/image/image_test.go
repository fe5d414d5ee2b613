package image

import (
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
