package local

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
)

// TestWriteNames: on the bridge the container gets a resolver that fails
// at once instead of the host's unreachable nameservers, and its name maps
// to its lease; a symbolic link at resolv.conf is replaced, never written
// through; network=host keeps the image's files.
func TestWriteNames(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	hostResolv := filepath.Join(outside, "resolv.conf")
	os.WriteFile(hostResolv, []byte("nameserver 192.0.2.53\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc", "hosts"), []byte("127.0.0.1 localhost isobench\n"), 0o644)
	if err := os.Symlink(hostResolv, filepath.Join(root, "etc", "resolv.conf")); err != nil {
		t.Fatal(err)
	}
	if err := WriteNames(root, platform.NetBridge, netip.MustParseAddr("10.199.0.7"), Hostname, "isob-c0ffee01"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(hostResolv); string(b) != "nameserver 192.0.2.53\n" {
		t.Errorf("written through the symbolic link: %q", b)
	}
	fi, err := os.Lstat(filepath.Join(root, "etc", "resolv.conf"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("resolv.conf: %v, %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc", "resolv.conf")); string(b) != NoResolver || nameservers(string(b)) != "127.0.0.1" {
		t.Errorf("resolv.conf = %q", b)
	}
	hosts, _ := os.ReadFile(filepath.Join(root, "etc", "hosts"))
	if !strings.Contains(string(hosts), "\n10.199.0.7 isobench isob-c0ffee01\n") || strings.Contains(string(hosts), "127.0.0.1 localhost isobench") {
		t.Errorf("hosts = %q", hosts)
	}

	none := t.TempDir()
	if err := WriteNames(none, platform.NetNone, netip.Addr{}, Hostname); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(none, "etc", "hosts")); !strings.Contains(string(b), "127.0.0.1 localhost isobench\n") {
		t.Errorf("none: hosts = %q", b)
	}

	host := t.TempDir()
	os.MkdirAll(filepath.Join(host, "etc"), 0o755)
	os.WriteFile(filepath.Join(host, "etc", "resolv.conf"), []byte("nameserver 192.0.2.53\n"), 0o644)
	if err := WriteNames(host, platform.NetHost, netip.Addr{}, Hostname); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(host, "etc", "resolv.conf")); string(b) != "nameserver 192.0.2.53\n" {
		t.Errorf("network=host: resolv.conf = %q", b)
	}
	if _, err := os.Stat(filepath.Join(host, "etc", "hosts")); err == nil {
		t.Error("network=host: hosts written")
	}
}

// nameservers lists the nameserver lines' addresses.
func nameservers(conf string) string {
	var ns []string
	for _, l := range strings.Split(conf, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "nameserver" {
			ns = append(ns, f[1])
		}
	}
	return strings.Join(ns, " ")
}
