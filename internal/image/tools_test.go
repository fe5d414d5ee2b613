package image

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseLdd(t *testing.T) {
	out := `	linux-vdso.so.1 (0x00007ff23d636000)
	libiperf.so.0 => /lib/x86_64-linux-gnu/libiperf.so.0 (0x00007ff23d5ef000)
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007ff23d40d000)
	libm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007ff23d327000)
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007ff23d40d000)
	/lib64/ld-linux-x86-64.so.2 (0x00007ff23d638000)
`
	got, err := parseLdd("iperf3", out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/lib/x86_64-linux-gnu/libiperf.so.0", "/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	_, err = parseLdd("fio", "\tlibrbd.so.1 => not found\n")
	if err == nil || !strings.Contains(err.Error(), "librbd.so.1") {
		t.Errorf("missing library not reported: %v", err)
	}
}

func TestUnknownTool(t *testing.T) {
	b := Builder{AgentBinary: os.Args[0]}
	err := b.BuildToolsRootfs(context.Background(), t.TempDir(), []string{"netperf"})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("err = %v", err)
	}
}

// TestBuildToolsRootfs builds the tools profile from this host's binaries
// and runs each tool inside it with chroot, proving the copied libraries
// are complete; it needs root, busybox-static and the tools installed.
func TestBuildToolsRootfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	if _, err := exec.LookPath("chroot"); err != nil {
		t.Skip("no chroot")
	}
	// any static binary stands in for the agent here: static busybox
	bb, err := (Builder{}).busybox()
	if err != nil {
		t.Skip(err)
	}
	b := Builder{AgentBinary: bb}
	var tools []string
	for _, tool := range KnownTools {
		if _, err := hostBinary(tool); err != nil {
			t.Logf("skipping %s: %v", tool.Name, err)
			continue
		}
		tools = append(tools, tool.Name)
	}
	if len(tools) == 0 {
		t.Skip("none of the tools is installed on this host")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "rootfs")
	if err := b.BuildToolsRootfs(ctx, dir, tools); err != nil {
		t.Fatal(err)
	}
	version := map[string][]string{
		"sysbench": {"--version"}, "fio": {"--version"}, "iperf3": {"--version"}, "sockperf": {"--version"},
		"iperf": {"-v"}, // exits 1 after printing its version
	}
	for _, name := range tools {
		tool, _ := lookupTool(name)
		hostBin, _ := hostBinary(tool)
		inside, err := os.ReadFile(filepath.Join(dir, hostBin))
		if err != nil {
			t.Fatal(err)
		}
		outside, err := os.ReadFile(hostBin)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(inside, outside) {
			t.Errorf("%s inside the rootfs differs from the host's", hostBin)
		}
		out, err := exec.Command("chroot", append([]string{dir, hostBin}, version[name]...)...).CombinedOutput()
		if name == "iperf" && strings.Contains(string(out), "iperf version") {
			err = nil
		}
		if err != nil {
			t.Errorf("chroot %s %s: %v\n%s", hostBin, version[name][0], err, out)
			continue
		}
		t.Logf("%s: %s", name, strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0])
	}
	// A real (short) run inside, not only --version.
	if contains(tools, "sysbench") {
		out, err := exec.Command("chroot", dir, "/usr/bin/sysbench", "cpu", "--time=1", "run").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "events per second") {
			t.Errorf("sysbench cpu inside the rootfs: %v\n%s", err, out)
		}
	}
	if contains(tools, "fio") {
		out, err := exec.Command("chroot", dir, "/usr/bin/fio", "--name=t", "--directory=/tmp", "--size=1m", "--rw=randread",
			"--bs=4k", "--ioengine=libaio", "--output-format=json").CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"jobname" : "t"`) {
			t.Errorf("fio inside the rootfs: %v\n%s", err, out)
		}
	}
	var size int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			size += info.Size()
		}
		return nil
	})
	t.Logf("tools rootfs: %.1f MiB", float64(size)/(1<<20))
	// The agent and busybox of the minimal profile are still there.
	for _, p := range []string{AgentPath, "/bin/busybox", "/bin/sh"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s missing: %v", p, err)
		}
	}
	d1, err := b.ToolsDigest(ctx, tools)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := b.ToolsDigest(ctx, tools[:1])
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) > 1 && d1 == d2 {
		t.Errorf("digest ignores the tool list: %s", d1)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
