package privdir

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// chownOther gives path to uid 65534 (nobody), as another local user
// would own what they planted; it skips without root.
func chownOther(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	if err := os.Lchown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestMake(t *testing.T) {
	base := t.TempDir()
	d := filepath.Join(base, "a", "state")
	if err := Make(d, 0o711); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, d); m != 0o711 {
		t.Errorf("made %v, want 0711", m)
	}
	if m := mode(t, filepath.Dir(d)); m != 0o700 {
		t.Errorf("parent made %v, want 0700", m)
	}
	// found, readable by others: set to the mode asked for
	os.Chmod(d, 0o755)
	if err := Private(d); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, d); m != 0o700 {
		t.Errorf("found 0755, left %v", m)
	}
	if err := Make(filepath.Join(base, "w"), 0o775); err == nil {
		t.Error("a group-writable mode was accepted")
	}
	if err := Fresh(filepath.Join(d, "i")); err != nil {
		t.Fatal(err)
	}
	if err := Fresh(filepath.Join(d, "i")); err == nil {
		t.Error("Fresh reused an existing directory")
	}
}

// TestMakeRefuses: what another user could have made or swapped is
// refused, whatever it holds, and left as it is.
func TestMakeRefuses(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "target")
	os.Mkdir(target, 0o700)
	cases := map[string]func(p string){
		"symlink": func(p string) { os.Symlink(target, p) },
		"file":    func(p string) { os.WriteFile(p, nil, 0o600) },
		"world-writable": func(p string) {
			os.Mkdir(p, 0o700)
			os.Chmod(p, os.ModeSticky|0o777)
		},
	}
	for name, plant := range cases {
		p := filepath.Join(base, name)
		plant(p)
		before := mode(t, p)
		err := Make(p, 0o700)
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: Make gave %v, want an error naming %s", name, err, p)
		}
		if err := Check(p); err == nil {
			t.Errorf("%s: Check accepted it", name)
		}
		if after := mode(t, p); after != before {
			t.Errorf("%s: mode changed from %v to %v", name, before, after)
		}
	}
	if mode(t, target) != 0o700 {
		t.Error("the link's target was changed")
	}
}

func TestMakeRefusesOthers(t *testing.T) {
	base := t.TempDir()
	other := filepath.Join(base, "other")
	os.Mkdir(other, 0o700)
	chownOther(t, other)
	if err := Make(other, 0o700); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("a directory of uid 65534: %v", err)
	}
	if err := Check(other); err == nil {
		t.Error("Check accepted a directory of uid 65534")
	}
	// in a directory of another user's (who can swap it), or one others
	// can write to without the sticky bit: refused too
	if err := Make(filepath.Join(other, "x"), 0o700); err == nil {
		t.Error("a directory inside one of uid 65534 was accepted")
	}
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	if err := Make(filepath.Join(open, "x"), 0o700); err == nil || !strings.Contains(err.Error(), "not sticky") {
		t.Errorf("a directory in a world-writable parent: %v", err)
	}
	if _, err := os.Stat(filepath.Join(open, "x")); !os.IsNotExist(err) {
		t.Error("it was made anyway")
	}
	sticky := filepath.Join(base, "sticky")
	os.Mkdir(sticky, 0o700)
	os.Chmod(sticky, os.ModeSticky|0o777)
	if err := Make(filepath.Join(sticky, "x"), 0o700); err != nil {
		t.Errorf("a directory in a sticky parent (like /tmp): %v", err)
	}
}

func TestOpen(t *testing.T) {
	base := t.TempDir()
	good := filepath.Join(base, "good")
	os.WriteFile(good, []byte("x"), 0o644)
	f, err := Open(good)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	link := filepath.Join(base, "link")
	os.Symlink(good, link)
	if _, err := Open(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link: %v", err)
	}
	loose := filepath.Join(base, "loose")
	os.WriteFile(loose, nil, 0o600)
	os.Chmod(loose, 0o666)
	if _, err := Open(loose); err == nil {
		t.Error("a file others can write was opened")
	}
	fifo := filepath.Join(base, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(fifo); err == nil {
		t.Error("a FIFO was opened")
	}
	if _, err := Open(base); err == nil {
		t.Error("a directory was opened")
	}
	other := filepath.Join(base, "other")
	os.WriteFile(other, nil, 0o600)
	chownOther(t, other)
	if _, err := Open(other); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("a file of uid 65534: %v", err)
	}
}

func TestRunDir(t *testing.T) {
	d := RunDir()
	if !filepath.IsAbs(d) {
		t.Fatalf("RunDir %q is not absolute", d)
	}
	if os.Geteuid() == 0 && d != RunRoot {
		t.Errorf("as root RunDir is %q, want %q", d, RunRoot)
	}
}
