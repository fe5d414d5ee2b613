package qemu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/fstree"
	"github.com/isobench/isobench/internal/image"
)

// DiskModules are the drivers loaded before the root disk is mounted when
// the guest boots from one: GuestModules plus what an engine in the guest
// needs (overlay for Docker's overlay2 driver).
var DiskModules = append(append([]string(nil), GuestModules...), "overlay")

// usesRootDisk reports whether profile boots from a root disk rather than
// as an initramfs: the Debian trees (600 MB and more) do.
func usesRootDisk(profile string) bool { return image.IsDebian(profile) }

// rootDiskKey identifies a root disk image's inputs.
func (p *Platform) rootDiskKey(profile string) (string, error) {
	// without the agent: the initramfs brings it (an agent rebuild does
	// not remake a gigabyte disk)
	d, err := image.DebianProfileBaseDigest(context.Background(), profile)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "format=1\nimage=%s\nhook=%s\n", d, p.RootfsHookKey)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// buildRootDisk returns the path of profile's root disk image, without the
// agent (the boot initramfs copies its agent onto the VM's root before
// switching to it) (raw ext4,
// made with mkfs.ext4 -d from the profile's tree: no loop mount, no root-
// only tool), building it into the state dir when missing. Instances
// attach it with snapshot=on: qemu writes each VM's changes to its own
// temporary overlay and the image is never written.
func (p *Platform) buildRootDisk(ctx context.Context, profile string) (string, error) {
	key, err := p.rootDiskKey(profile)
	if err != nil {
		return "", fmt.Errorf("qemu: %w", err)
	}
	dir, err := p.privateDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "root-"+profile+"-"+key+".img")
	p.buildMu.Lock()
	defer p.buildMu.Unlock()
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if p.env.Log != nil {
		fmt.Fprintf(p.env.Log, "qemu: building the %s root disk\n", profile)
	}
	tmp, err := os.MkdirTemp(dir, "rootfs-")
	if err != nil {
		return "", fmt.Errorf("qemu: %w", err)
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "root")
	if err := (image.Builder{AgentBinary: p.env.AgentBinary, StateDir: p.env.StateDir, Log: p.env.Log}).BuildDebianProfileBaseRootfs(ctx, profile, root); err != nil {
		return "", fmt.Errorf("qemu: %w", err)
	}
	if p.RootfsHook != nil {
		if err := p.RootfsHook(ctx, profile, root); err != nil {
			return "", fmt.Errorf("qemu: rootfs hook: %w", err)
		}
	}
	size, files, err := treeSize(root)
	if err != nil {
		return "", fmt.Errorf("qemu: %w", err)
	}
	// room for the tree's blocks and metadata, and free space for the
	// guest's own writes (they go to the per-VM overlay, but the file
	// system must have the blocks to give)
	disk := size + size/4 + 512<<20
	img := filepath.Join(tmp, "root.img")
	f, err := os.Create(img)
	if err == nil {
		err = f.Truncate(disk)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return "", fmt.Errorf("qemu: root disk: %w", err)
	}
	inodes := files*2 + 65536
	o, err := exec.CommandContext(ctx, "mkfs.ext4", "-F", "-q", "-m", "0", "-N", strconv.FormatInt(inodes, 10),
		"-L", "isobench-root", "-E", "lazy_itable_init=0,lazy_journal_init=0", "-d", root, img).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("qemu: mkfs.ext4 -d %s: %w: %s", root, err, strings.TrimSpace(string(o)))
	}
	if err := os.Rename(img, out); err != nil {
		return "", fmt.Errorf("qemu: %w", err)
	}
	pruneStale(dir, "root-"+profile+"-", ".img", out)
	return out, nil
}

// StaleAge is how old an unused cached root disk or boot initramfs must be
// before a newer build removes it (another process may be about to boot
// a VM from it).
const StaleAge = time.Hour

// pruneStale removes the files of dir named prefix+KEY+suffix (KEY
// without a dash: root-debian- must not match root-debian-docker-), except
// keep, last modified more than StaleAge ago: root disks of older Debian
// contents (a gigabyte each) and boot initramfs of older agents. A VM
// running from one keeps its open file.
func pruneStale(dir, prefix, suffix, keep string) {
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		key, okP := strings.CutPrefix(e.Name(), prefix)
		key, okS := strings.CutSuffix(key, suffix)
		if !okP || !okS || key == "" || strings.Contains(key, "-") {
			continue
		}
		f := filepath.Join(dir, e.Name())
		if f == keep {
			continue
		}
		if st, err := os.Stat(f); err == nil && time.Since(st.ModTime()) > StaleAge {
			os.Remove(f)
		}
	}
}

// treeSize is the bytes (rounded up to 4 KiB blocks) and entries of dir.
func treeSize(dir string) (int64, int64, error) {
	var size, n int64
	err := fstree.Walk(dir, func(e fstree.Entry) error {
		n++
		size += (e.Info.Size() + 4095) &^ 4095
		return nil
	})
	return size, n, err
}
