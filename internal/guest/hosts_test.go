package guest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/guestenv"
)

// The VM's name is added to the image's hosts file once, at eth0's
// address (127.0.1.1 without one), and a name already there is left
// alone; an address equal to the name does not count as naming it.
func TestNameHost(t *testing.T) {
	const image = "127.0.0.1 localhost isobench\n::1 localhost\n"
	for _, c := range []struct {
		name, before, addr, host, want string
	}{
		{"eth0 address", image, "10.199.0.2", "isobench-ab12", image + "10.199.0.2\tisobench-ab12\n"},
		{"no network", image, "", "isobench-ab12", image + "127.0.1.1\tisobench-ab12\n"},
		{"named already", image, "10.199.0.2", "isobench", image},
		{"named in another case", image, "10.199.0.2", "ISOBENCH", image},
		{"no final newline", "127.0.0.1 localhost", "10.0.0.5", "vm", "127.0.0.1 localhost\n10.0.0.5\tvm\n"},
		{"only in a comment", "# 10.0.0.9 vm\n", "10.0.0.5", "vm", "# 10.0.0.9 vm\n10.0.0.5\tvm\n"},
		{"only as an address", "vm other\n", "10.0.0.5", "vm", "vm other\n10.0.0.5\tvm\n"},
		{"no hosts file", "", "10.0.0.5", "vm", "10.0.0.5\tvm\n"},
		{"no host name", image, "10.0.0.5", "", image},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hosts")
			if c.before != "" {
				if err := os.WriteFile(path, []byte(c.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 { // a second boot stage adds nothing more
				if err := nameHost(path, c.addr, c.host); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil && c.want != "" {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("hosts file:\n%q\nwant\n%q", got, c.want)
			}
			if left, _ := filepath.Glob(path + ".*"); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

func TestNameHostUnwritable(t *testing.T) {
	err := nameHost(filepath.Join(t.TempDir(), "missing-dir", "hosts"), "10.0.0.5", "vm")
	if err == nil || !strings.Contains(err.Error(), "hosts file") {
		t.Fatalf("a hosts file that cannot be written: %v", err)
	}
}

func TestHostAddr(t *testing.T) {
	for in, want := range map[string]string{"10.199.0.2/22": "10.199.0.2", "": "", "10.199.0.2": "", "junk/8": ""} {
		if got := hostAddr(in); got != want {
			t.Errorf("hostAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

// The VM's resolver is replaced by the loopback one, also through a
// symbolic link, which is replaced and not written through.
func TestNoResolver(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "resolv.conf")
	os.WriteFile(target, []byte("nameserver 192.0.2.53\n"), 0o644)
	path := filepath.Join(dir, "resolv.conf")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := noResolver(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != guestenv.NoResolver {
		t.Errorf("resolv.conf %q", b)
	}
	if b, _ := os.ReadFile(target); string(b) != "nameserver 192.0.2.53\n" {
		t.Errorf("written through the link: %q", b)
	}
	// an initramfs root may have no /etc yet
	if err := noResolver(filepath.Join(dir, "etc", "resolv.conf")); err != nil {
		t.Fatal(err)
	}
}
