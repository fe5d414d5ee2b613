package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Makefile's -ldflags stamp the version and the commit (with -dirty)
// into the variables 'isobench version' and the run fingerprint read: a
// binary built with them says which build it is (issue 27, defect 12).
func TestMakefileStampsVersionAndCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^LDFLAGS\s*:=\s*(.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no LDFLAGS := line in the Makefile")
	}
	ld := strings.NewReplacer("$(VERSION)", "v9.9.9-test", "$(COMMIT)", "0123456789ab-dirty").Replace(string(m[1]))
	if strings.Contains(ld, "$(") {
		t.Fatalf("LDFLAGS has a variable this test does not know: %s", ld)
	}
	bin := filepath.Join(t.TempDir(), "isobench")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", ld, "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", ld, err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "isobench v9.9.9-test (commit 0123456789ab-dirty)\n"; string(out) != want {
		t.Fatalf("version: %q, want %q", out, want)
	}
}
