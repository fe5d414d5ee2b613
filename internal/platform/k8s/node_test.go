package k8s

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// fakeNode is a host with a dead local cluster: a runsc shim serving its
// containerd with a sandbox and a gofer below it, a runc shim with a
// container, a shim of another containerd, an unrelated process that
// names the socket, mounts under the run directory and elsewhere, the
// runtimes' state, and veths on the cluster's bridge and on another.
func fakeNode(t *testing.T) (node, *[]string) {
	t.Helper()
	root := t.TempDir()
	n := node{proc: filepath.Join(root, "proc"), run: filepath.Join(root, "run"), sysNet: filepath.Join(root, "net"), netns: filepath.Join(root, "netns")}
	n.sock = filepath.Join(n.run, "containerd", "containerd.sock")
	proc := func(pid, ppid string, argv ...string) {
		d := filepath.Join(n.proc, pid)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "stat"), []byte(pid+" (x) S "+ppid+" 1 1 0 -1"), 0o644)
		os.WriteFile(filepath.Join(d, "cmdline"), []byte(strings.Join(argv, "\x00")+"\x00"), 0o644)
	}
	proc("1", "0", "/sbin/init")
	proc("100", "1", "/var/cache/isobench/k8s/bin/current/containerd-shim-runsc-v1", "-namespace", "k8s.io", "-address", n.sock, "-publish-binary", "x", "-id", "abc")
	proc("101", "100", "runsc-sandbox", "--root", n.run+"/runsc")
	proc("102", "100", "runsc-gofer")
	proc("104", "101", ".") // runsc's sandbox children: argv[0] "."
	proc("103", "101", "/isobench", "agent", "idle")
	proc("200", "1", "/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-address", n.sock, "-id", "def")
	proc("201", "200", "/isobench", "agent", "idle")
	proc("300", "1", "/usr/bin/containerd-shim-runc-v2", "-namespace", "moby", "-address", "/run/containerd/containerd.sock", "-id", "other")
	proc("301", "300", "nginx")
	proc("400", "1", "/usr/bin/tail", "-address", n.sock) // names the socket, but no shim
	os.MkdirAll(filepath.Join(n.proc, "self"), 0o755)
	mountinfo := strings.Join([]string{
		"25 1 0:22 / / rw - ext4 /dev/vda rw",
		"85 27 0:4 net:[4026532255] " + n.run + "/runsc/k8s.io/null-netns rw - nsfs nsfs rw",
		"90 27 0:50 / " + n.run + "/containerd/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs rw - overlay overlay rw",
		"91 27 0:51 / " + n.run + "/containerd/state/io.containerd.runtime.v2.task/k8s.io/with\\040space/rootfs rw - overlay overlay rw",
		"92 27 0:52 / " + n.run + "x/elsewhere rw - tmpfs tmpfs rw",
		"93 27 0:53 / /run/containerd/runsc/k8s.io/null-netns rw - nsfs nsfs rw",
	}, "\n") + "\n"
	os.WriteFile(filepath.Join(n.proc, "self", "mountinfo"), []byte(mountinfo), 0o644)
	for _, d := range []string{"runc/k8s.io", "runsc/k8s.io", "containerd"} {
		os.MkdirAll(filepath.Join(n.run, d), 0o755)
	}
	// the sandboxes' specs: one in a CRI netns, one in another process's, one
	// naming a netns that is gone, one naming a netns not of CRI's making
	os.MkdirAll(n.netns, 0o755)
	for id, path := range map[string]string{
		"s1": "/var/run/netns/cni-8d8f2350-d909-09f8-af23-6d24c8a53ef9",
		"s2": "/proc/29776/ns/net",
		"s3": "/run/netns/cni-00000000-0000-0000-0000-000000000000",
		"s4": "/run/netns/mine",
	} {
		d := filepath.Join(n.run, "containerd", "state", "io.containerd.runtime.v2.task", "k8s.io", id)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "config.json"), []byte(`{"linux":{"namespaces":[{"type":"pid"},{"type":"network","path":"`+path+`"}]}}`), 0o644)
	}
	for _, name := range []string{"cni-8d8f2350-d909-09f8-af23-6d24c8a53ef9", "mine", "cni-11111111-1111-1111-1111-111111111111"} {
		os.WriteFile(filepath.Join(n.netns, name), nil, 0o444)
	}
	for link, master := range map[string]string{"veth1": localBridge, "veth2": "docker0", "eth0": ""} {
		d := filepath.Join(n.sysNet, link)
		os.MkdirAll(d, 0o755)
		if master != "" {
			os.Symlink("../"+master, filepath.Join(d, "master"))
		}
	}
	var did []string
	n.alive = func(string) bool { return false }
	n.kill = func(pid int) error { did = append(did, "kill "+strconv.Itoa(pid)); return nil }
	n.unmount = func(p string) error {
		did = append(did, "umount "+strings.TrimPrefix(p, n.run))
		// the mount goes from mountinfo
		b, _ := os.ReadFile(filepath.Join(n.proc, "self", "mountinfo"))
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 4 && unescapeMount(f[4]) == p {
				continue
			}
			keep = append(keep, l)
		}
		return os.WriteFile(filepath.Join(n.proc, "self", "mountinfo"), []byte(strings.Join(keep, "\n")), 0o644)
	}
	n.removeDir = func(p string) error { did = append(did, "rm "+strings.TrimPrefix(p, n.run)); return os.RemoveAll(p) }
	n.delLink = func(_ context.Context, name string) error { did = append(did, "ip link del "+name); return nil }
	return n, &did
}

// TestCleanNode: with the local cluster's containerd gone, clean removes
// the shims that served it and the processes below them (children first),
// the mounts under its run directory (deepest first), the runtimes' state
// and the veths on its bridge; the dry run lists the same and does
// nothing; another containerd's shim and its container, a process that
// only names the socket, mounts elsewhere and other bridges' veths stay.
// With the containerd answering, nothing is said or done.
func TestCleanNode(t *testing.T) {
	n, did := fakeNode(t)
	var out strings.Builder
	if err := n.clean(context.Background(), &out, true); err != nil {
		t.Fatal(err)
	}
	if len(*did) != 0 {
		t.Errorf("the dry run did %q", *did)
	}
	dry := strings.ReplaceAll(strings.ReplaceAll(out.String(), n.run, "RUN"), n.netns, "NETNS")
	want := []string{
		"would remove k8s-process 104 (x, below shim 100)",
		"would remove k8s-process 103 (isobench, below shim 100)",
		"would remove k8s-process 102 (runsc-gofer, below shim 100)",
		"would remove k8s-process 101 (runsc-sandbox, below shim 100)",
		"would remove k8s-shim 100 (containerd-shim-runsc-v1)",
		"would remove k8s-process 201 (isobench, below shim 200)",
		"would remove k8s-shim 200 (containerd-shim-runc-v2)",
		"would remove k8s-mount RUN/containerd/state/io.containerd.runtime.v2.task/k8s.io/with space/rootfs",
		"would remove k8s-mount RUN/containerd/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs",
		"would remove k8s-mount RUN/runsc/k8s.io/null-netns",
		"would remove k8s-runtime-state RUN/runc",
		"would remove k8s-runtime-state RUN/runsc",
		"would remove k8s-netns NETNS/cni-8d8f2350-d909-09f8-af23-6d24c8a53ef9",
		"would remove k8s-veth veth1",
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(dry), "\n") {
		l = strings.TrimSuffix(l, " (the local cluster's containerd is gone)")
		got = append(got, l)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dry run said\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	out.Reset()
	if err := n.clean(context.Background(), &out, false); err != nil {
		t.Fatal(err)
	}
	wantDid := []string{"kill 104", "kill 103", "kill 102", "kill 101", "kill 100", "kill 201", "kill 200",
		"umount /containerd/state/io.containerd.runtime.v2.task/k8s.io/with space/rootfs",
		"umount /containerd/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs",
		"umount /runsc/k8s.io/null-netns", "rm /runc", "rm /runsc",
		"umount " + filepath.Join(n.netns, "cni-8d8f2350-d909-09f8-af23-6d24c8a53ef9"), "ip link del veth1"}
	if !reflect.DeepEqual(*did, wantDid) {
		t.Errorf("clean did\n%s\nwant\n%s", strings.Join(*did, "\n"), strings.Join(wantDid, "\n"))
	}
	if strings.Count(out.String(), "removed ") != len(want) {
		t.Errorf("clean said:\n%s", out.String())
	}
	// the pod's netns pin is gone; the others stay
	for name, want := range map[string]bool{"cni-8d8f2350-d909-09f8-af23-6d24c8a53ef9": false, "mine": true, "cni-11111111-1111-1111-1111-111111111111": true} {
		if _, err := os.Stat(filepath.Join(n.netns, name)); (err == nil) != want {
			t.Errorf("netns %s there after clean: %v, want %v", name, err == nil, want)
		}
	}

	// a live cluster owns its shims: nothing
	n2, did2 := fakeNode(t)
	n2.alive = func(string) bool { return true }
	out.Reset()
	if err := n2.clean(context.Background(), &out, false); err != nil || out.Len() != 0 || len(*did2) != 0 {
		t.Errorf("with containerd answering: %v, said %q, did %q", err, out.String(), *did2)
	}
	// no local cluster at all: nothing
	n3, did3 := fakeNode(t)
	os.RemoveAll(n3.run)
	out.Reset()
	if err := n3.clean(context.Background(), &out, false); err != nil || out.Len() != 0 || len(*did3) != 0 {
		t.Errorf("with no local cluster: %v, said %q, did %q", err, out.String(), *did3)
	}
}
