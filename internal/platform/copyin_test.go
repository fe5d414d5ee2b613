package platform

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostExec runs argv on this host, as an instance's Exec would inside it.
func hostExec(ctx context.Context, argv []string, stdio ExecIO) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	return cmd.Run()
}

// The copy-in script writes exactly the file's bytes with the mode, into
// directories it creates; a short stdin is an error that leaves no file;
// bytes after the size are not read into the file.
func TestCopyIn(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("content"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "a b", "c")
	if err := CopyIn(ctx, hostExec, "test", src, dst, 0o640); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dst)
	if err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("stat %v %v", st, err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "content" {
		t.Errorf("content %q", b)
	}

	short := filepath.Join(dir, "short")
	argv := CopyInArgv(short, 100, 0o644)
	err = hostExec(ctx, argv, ExecIO{Stdin: strings.NewReader("only 19 bytes here.")})
	if err == nil {
		t.Error("a short stdin was accepted")
	}
	if left, _ := filepath.Glob(short + "*"); len(left) > 0 {
		t.Errorf("a short copy left %v", left)
	}

	long := filepath.Join(dir, "long")
	if err := hostExec(ctx, CopyInArgv(long, 4, 0o644), ExecIO{Stdin: strings.NewReader("abcdEXTRA")}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(long); string(b) != "abcd" {
		t.Errorf("content %q, want the first 4 bytes", b)
	}

	for _, bad := range [][2]string{{src, "relative/path"}, {dir, filepath.Join(dir, "x")}, {filepath.Join(dir, "missing"), filepath.Join(dir, "y")}} {
		if err := CopyIn(ctx, hostExec, "test", bad[0], bad[1], 0o644); err == nil {
			t.Errorf("CopyIn(%s, %s) accepted", bad[0], bad[1])
		}
	}
}
