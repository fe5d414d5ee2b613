package k8s

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestOverlayUpper(t *testing.T) {
	const id = "0123abcd"
	line := `812 700 0:95 / /run/isobench-k8s/containerd/state/io.containerd.runtime.v2.task/k8s.io/0123abcd/rootfs rw,relatime - overlay overlay rw,lowerdir=/var/lib/x/snapshots/3/fs:/var/lib/x/snapshots/2/fs,upperdir=/var/lib/x/snapshots/41/fs,workdir=/var/lib/x/snapshots/41/work`
	if got, ok := overlayUpper(line, id); !ok || got != "/var/lib/x/snapshots/41/fs" {
		t.Errorf("overlayUpper = %q, %v", got, ok)
	}
	if _, ok := overlayUpper(line, "123abcd"); ok {
		t.Error("overlayUpper matched a container whose id ends the same")
	}
	bind := `813 700 8:1 /x /run/k8s.io/0123abcd/rootfs rw - ext4 /dev/vda rw`
	if _, ok := overlayUpper(bind, id); ok {
		t.Error("overlayUpper matched a mount that is not an overlay")
	}
	spaced := `814 700 0:96 / /a/0123abcd/rootfs rw - overlay overlay rw,lowerdir=/l,upperdir=/var/lib/my\040dir/fs,workdir=/w`
	if got, _ := overlayUpper(spaced, id); got != "/var/lib/my dir/fs" {
		t.Errorf("overlayUpper with an escaped space = %q", got)
	}
}

func TestUpperDirMissing(t *testing.T) {
	f := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(f, []byte("1 0 8:1 / / rw - ext4 /dev/vda rw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := upperDir(f, "abc"); err == nil {
		t.Error("upperDir found a rootfs that is not mounted")
	}
}

func TestPodCgroupDir(t *testing.T) {
	const uid = "5f1c-aa-01"
	for _, rel := range []string{
		"kubepods/pod" + uid,
		"kubepods/burstable/pod" + uid,
		"kubepods.slice/kubepods-pod5f1c_aa_01.slice",
		"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod5f1c_aa_01.slice",
	} {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
			t.Fatal(err)
		}
		if got, err := podCgroupDir(root, uid); err != nil || got != filepath.Join(root, rel) {
			t.Errorf("%s: podCgroupDir = %q, %v", rel, got, err)
		}
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "kubepods/burstable/pod5f1c-aa-02"), 0o755)
	if got, err := podCgroupDir(root, uid); err == nil {
		t.Errorf("podCgroupDir found another pod's cgroup %q", got)
	}
}

func TestListeningInodes(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:2802 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5551 1 0000000000000000 100 0 0 10 0
   1: 0100007F:2802 0100007F:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 5552 1 0000000000000000 20 4 30 10 -1
   2: 00000000:12802 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5553 1 0000000000000000 100 0 0 10 0
   3: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5554 1 0000000000000000 100 0 0 10 0
`
	// 10242 is 0x2802: the listener, not the established connection nor
	// port 0x16
	got := listeningInodes(table, 10242)
	if !slices.Equal(got, []string{"5551"}) {
		t.Errorf("listeningInodes = %v, want [5551]", got)
	}
}

func TestKubeletRootDir(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"kubelet", "--config", "/c.yaml", "--root-dir", "/var/lib/isobench/k8s/kubelet"}, "/var/lib/isobench/k8s/kubelet"},
		{[]string{"kubelet", "--root-dir=/srv/kubelet"}, "/srv/kubelet"},
		{[]string{"/usr/bin/kubelet", "--v", "1"}, "/var/lib/kubelet"},
	} {
		if got := kubeletRootDir(c.argv); got != c.want {
			t.Errorf("kubeletRootDir(%q) = %q, want %q", c.argv, got, c.want)
		}
	}
}
