package qemu

import (
	"github.com/isobench/isobench/internal/fstree"

	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/isobench/isobench/internal/guest"
	"github.com/isobench/isobench/internal/image"
)

// GuestModules are the drivers the guest needs, loaded by init in this
// order (with their dependencies first) when the kernel has them as
// modules; built-in drivers need nothing.
var GuestModules = []string{"virtio_pci", "virtio_console", "virtio_net", "virtio_blk", "virtiofs"}

// cpioWriter writes a newc ("070701") cpio archive.
type cpioWriter struct {
	w   io.Writer
	ino uint32
	err error
}

func (c *cpioWriter) header(name string, mode uint32, size int, rdevMajor, rdevMinor uint32) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := 1
	if mode&syscall.S_IFMT == syscall.S_IFDIR {
		nlink = 2
	}
	h := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, size, 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	_, c.err = io.WriteString(c.w, h+name+"\x00"+pad(len(h)+len(name)+1))
}

func pad(n int) string { return strings.Repeat("\x00", (4-n%4)%4) }

func (c *cpioWriter) data(b []byte) {
	if c.err != nil {
		return
	}
	if _, c.err = c.w.Write(b); c.err == nil {
		_, c.err = io.WriteString(c.w, pad(len(b)))
	}
}

// Dir adds a directory.
func (c *cpioWriter) Dir(name string, perm uint32) { c.header(name, syscall.S_IFDIR|perm, 0, 0, 0) }

// Symlink adds a symbolic link.
func (c *cpioWriter) Symlink(name, target string) {
	c.header(name, syscall.S_IFLNK|0o777, len(target), 0, 0)
	c.data([]byte(target))
}

// File adds a regular file.
func (c *cpioWriter) File(name string, perm uint32, content []byte) {
	c.header(name, syscall.S_IFREG|perm, len(content), 0, 0)
	c.data(content)
}

// CharDev adds a character device node.
func (c *cpioWriter) CharDev(name string, perm, major, minor uint32) {
	c.header(name, syscall.S_IFCHR|perm, 0, major, minor)
}

// Close writes the trailer.
func (c *cpioWriter) Close() error {
	c.header("TRAILER!!!", 0, 0, 0, 0)
	return c.err
}

// writeCPIO archives the tree at dir (paths relative to it, root-owned)
// plus /dev/console, which the kernel needs before init runs.
func writeCPIO(w io.Writer, dir string) error {
	c := &cpioWriter{w: w}
	err := fstree.Walk(dir, func(e fstree.Entry) error {
		perm := uint32(e.Info.Mode().Perm())
		if e.Info.Mode()&os.ModeSticky != 0 {
			perm |= syscall.S_ISVTX
		}
		switch {
		case e.Info.IsDir():
			c.Dir(e.Rel, perm)
		case e.Link != "":
			c.Symlink(e.Rel, e.Link)
		case e.Info.Mode().IsRegular():
			b, err := os.ReadFile(e.Path)
			if err != nil {
				return err
			}
			c.File(e.Rel, perm, b)
		}
		return c.err
	})
	if err != nil {
		return fmt.Errorf("cpio %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "dev")); err != nil {
		c.Dir("dev", 0o755)
	}
	c.CharDev("dev/console", 0o600, 5, 1)
	return c.Close()
}

// moduleOrder returns the .ko paths (relative to the modules dir) to load
// for wanted, dependencies first, from modules.dep. Modules built into the
// kernel or absent are skipped.
func moduleOrder(modDir string, wanted []string) ([]string, error) {
	f, err := os.Open(filepath.Join(modDir, "modules.dep"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	deps := map[string][]string{}
	byName := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		mod, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		deps[mod] = strings.Fields(rest)
		byName[moduleName(mod)] = mod
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	var add func(m string)
	add = func(m string) {
		if seen[m] {
			return
		}
		seen[m] = true
		d := deps[m]
		for i := len(d) - 1; i >= 0; i-- {
			add(d[i])
		}
		out = append(out, m)
	}
	for _, w := range wanted {
		if m, ok := byName[strings.ReplaceAll(w, "-", "_")]; ok {
			add(m)
		}
	}
	return out, nil
}

// moduleName is kernel/drivers/net/virtio_net.ko(.xz) → virtio_net.
func moduleName(path string) string {
	b := filepath.Base(path)
	if i := strings.Index(b, ".ko"); i >= 0 {
		b = b[:i]
	}
	return strings.ReplaceAll(b, "-", "_")
}

// readModule reads a module, decompressing .xz/.zst/.gz with host tools.
func readModule(ctx context.Context, path string) ([]byte, error) {
	var tool string
	switch {
	case strings.HasSuffix(path, ".ko"):
		return os.ReadFile(path)
	case strings.HasSuffix(path, ".xz"):
		tool = "xz"
	case strings.HasSuffix(path, ".zst"):
		tool = "zstd"
	case strings.HasSuffix(path, ".gz"):
		tool = "gzip"
	default:
		return nil, fmt.Errorf("module %s: unknown format", path)
	}
	out, err := exec.CommandContext(ctx, tool, "-dc", path).Output()
	if err != nil {
		return nil, fmt.Errorf("decompressing module %s with %s: %w", path, tool, err)
	}
	return out, nil
}

// initramfsKey identifies an initramfs's inputs.
func (p *Platform) initramfsKey(profile string, k kernel, mods []string) (string, error) {
	var d string
	var err error
	if profile == bootProfile {
		d, err = fileDigest(p.env.AgentBinary)
	} else {
		d, err = image.Builder{AgentBinary: p.env.AgentBinary}.Digest(profile)
	}
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "format=2\nimage=%s\nkernel=%s\nmodules=%s\nhook=%s\n", d, k.Version, strings.Join(mods, ","), p.RootfsHookKey)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// buildInitramfs returns the path of the gzip'd newc initramfs for profile
// and k, building it into the state dir if it is not there yet.
func (p *Platform) buildInitramfs(ctx context.Context, profile string, k kernel) (string, error) {
	var mods []string
	want := GuestModules
	if usesRootDisk(profile) {
		// the profile is on a root disk: the initramfs only mounts it
		profile, want = bootProfile, DiskModules
		// (the other profiles' builder checks its agent the same way)
		if err := checkStatic(p.env.AgentBinary); err != nil {
			return "", err
		}
	}
	if k.ModDir != "" {
		var err error
		if mods, err = moduleOrder(k.ModDir, want); err != nil {
			return "", fmt.Errorf("qemu: kernel modules of %s: %w", k.Version, err)
		}
	}
	key, err := p.initramfsKey(profile, k, mods)
	if err != nil {
		return "", fmt.Errorf("qemu: %w", err)
	}
	dir, err := p.privateDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "initramfs-"+profile+"-"+key+".cpio.gz")
	p.buildMu.Lock()
	defer p.buildMu.Unlock()
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if p.env.Log != nil {
		fmt.Fprintf(p.env.Log, "qemu: building the %s initramfs for kernel %s\n", profile, k.Version)
	}
	tmp, err := os.MkdirTemp(dir, "rootfs-")
	if err != nil {
		return "", fmt.Errorf("qemu: %w", err)
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "root")
	if profile == bootProfile {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(image.AgentPath)), 0o755); err != nil {
			return "", fmt.Errorf("qemu: %w", err)
		}
		if err := copyFile(p.env.AgentBinary, filepath.Join(root, image.AgentPath)); err != nil {
			return "", fmt.Errorf("qemu: %w", err)
		}
	} else if err := (image.Builder{AgentBinary: p.env.AgentBinary}).BuildRootfs(ctx, profile, root); err != nil {
		return "", fmt.Errorf("qemu: %w", err)
	}
	if err := os.Symlink(image.AgentPath, filepath.Join(root, "init")); err != nil {
		return "", fmt.Errorf("qemu: %w", err)
	}
	var list []string
	mdir := filepath.Join(root, "lib", "isobench-modules")
	for i, m := range mods {
		data, err := readModule(ctx, filepath.Join(k.ModDir, m))
		if err != nil {
			return "", fmt.Errorf("qemu: %w", err)
		}
		if err := os.MkdirAll(mdir, 0o755); err != nil {
			return "", fmt.Errorf("qemu: %w", err)
		}
		name := fmt.Sprintf("%02d-%s.ko", i, moduleName(m))
		if err := os.WriteFile(filepath.Join(mdir, name), data, 0o644); err != nil {
			return "", fmt.Errorf("qemu: %w", err)
		}
		list = append(list, "/lib/isobench-modules/"+name)
	}
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(guest.ModulesList)), 0o755); err != nil {
		return "", fmt.Errorf("qemu: %w", err)
	}
	if err := os.WriteFile(filepath.Join(root, guest.ModulesList), []byte(strings.Join(list, "\n")+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("qemu: %w", err)
	}
	if p.RootfsHook != nil && profile != bootProfile {
		if err := p.RootfsHook(ctx, profile, root); err != nil {
			return "", fmt.Errorf("qemu: rootfs hook: %w", err)
		}
	}
	f, err := os.CreateTemp(dir, "initramfs-*.tmp")
	if err != nil {
		return "", fmt.Errorf("qemu: %w", err)
	}
	defer os.Remove(f.Name())
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	bw := bufio.NewWriterSize(zw, 1<<20)
	err = writeCPIO(bw, root)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), out)
	}
	if err != nil {
		return "", fmt.Errorf("qemu: writing initramfs: %w", err)
	}
	if profile == bootProfile {
		// one per agent build: an agent rebuild makes a new one
		pruneStale(dir, "initramfs-boot-", ".cpio.gz", out)
	}
	return out, nil
}

// bootProfile names the initramfs that only mounts a root disk.
const bootProfile = "boot"

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// checkStatic refuses an agent binary with a program interpreter: it is the
// VM's /init, started before any loader or libc is there (the kernel then
// panics with "Failed to execute /init (error -2)").
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("qemu: the agent binary %s: %w", path, err)
	}
	defer f.Close()
	for _, pr := range f.Progs {
		if pr.Type == elf.PT_INTERP {
			return fmt.Errorf("qemu: the agent binary %s is dynamically linked, so it cannot be a VM's init: build it static with 'make build' (CGO_ENABLED=0)", path)
		}
	}
	return nil
}
