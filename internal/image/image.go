// Package image builds, without any registry, the file trees isobench puts
// into instances. A profile is a root file system directory; engines that
// want an image (Docker, Podman) import a tar of it, the others (LXC, runc,
// nspawn, QEMU initramfs) use the directory itself.
//
// Profile "minimal": the host's static busybox and the isobench binary.
// Profile "tools": minimal plus the host's sysbench, fio, iperf3, iperf 2
// and sockperf with their shared libraries (see tools.go).
// Profile "debian": a Debian tree of the host's release with real servers
// (nginx, apache2, redis, MariaDB...) and the agent (see debian.go).
// Profile "spark": a small Debian tree with Java, Python and the host's
// pyspark for the spark workload (see spark.go).
package image

import (
	"archive/tar"
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

	"github.com/isobench/isobench/internal/fstree"
	"github.com/isobench/isobench/internal/guestenv"
)

// Profiles known to Build (Tools is declared in tools.go).
const (
	Minimal = "minimal"
)

// Profiles lists every image profile, in the order help shows them.
func Profiles() []string { return []string{Minimal, Tools, Debian, DebianDocker, Spark} }

// CheckProfile says whether p names a profile, before anything is built.
func CheckProfile(p string) error {
	for _, k := range Profiles() {
		if p == k {
			return nil
		}
	}
	return unknownProfile(p)
}

func unknownProfile(p string) error {
	return fmt.Errorf("unknown image profile %q (known: %s)", p, strings.Join(Profiles(), ", "))
}

// AgentPath is where the isobench binary lives inside every image.
const AgentPath = "/usr/local/bin/isobench"

// BusyboxCandidates are where Debian's busybox-static puts its binary.
var BusyboxCandidates = []string{"/bin/busybox", "/usr/bin/busybox"}

// Builder builds profiles from host files.
type Builder struct {
	AgentBinary string // host path of the static isobench binary
	Busybox     string // host path of a static busybox; found if empty
	StateDir    string // where the debian profile keeps its Debian tree
	Log         io.Writer
}

// Digest identifies the content a profile will be built from, so a cached
// image can be reused exactly when nothing changed.
func (b Builder) Digest(profile string) (string, error) {
	switch profile {
	case Tools:
		return b.ToolsDigest(context.Background(), nil)
	case Debian:
		return b.DebianDigest(context.Background())
	case DebianDocker:
		return b.debianDigest(context.Background(), profile)
	case Spark:
		return b.SparkDigest(context.Background())
	case Minimal:
	default:
		return "", unknownProfile(profile)
	}
	h := sha256.New()
	fmt.Fprintf(h, "profile=%s\n", profile)
	bb, err := b.busybox()
	if err != nil {
		return "", err
	}
	for _, f := range []string{b.AgentBinary, bb} {
		if err := hashFile(h, f); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func (b Builder) busybox() (string, error) {
	if b.Busybox != "" {
		return b.Busybox, nil
	}
	for _, c := range BusyboxCandidates {
		if isStatic(c) {
			return c, nil
		}
	}
	return "", fmt.Errorf("no static busybox found (looked at %s): install it with 'apt-get install busybox-static'", strings.Join(BusyboxCandidates, ", "))
}

// isStatic reports whether path is an ELF file with no program interpreter.
func isStatic(path string) bool {
	ok, err := staticELF(path)
	return err == nil && ok
}

// staticELF reports whether path is an ELF executable that needs no
// program interpreter (no PT_INTERP: no dynamic loader, no libc).
func staticELF(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

// checkAgent refuses an agent binary that instances without the host's
// libc could not run.
func (b Builder) checkAgent() error {
	ok, err := staticELF(b.AgentBinary)
	if err != nil {
		return fmt.Errorf("image: the agent binary %s: %w", b.AgentBinary, err)
	}
	if !ok {
		return fmt.Errorf("image: the agent binary %s is dynamically linked, so instances without the host's libc cannot run it: build it static with 'make build' (CGO_ENABLED=0)", b.AgentBinary)
	}
	return nil
}

// BuildRootfs writes profile's root file system into dir (which must not
// exist yet or be empty).
func (b Builder) BuildRootfs(ctx context.Context, profile, dir string) error {
	switch profile {
	case Tools:
		return b.BuildToolsRootfs(ctx, dir, nil)
	case Debian:
		return b.BuildDebianRootfs(ctx, dir)
	case DebianDocker:
		return b.buildDebianRootfs(ctx, profile, dir)
	case Spark:
		return b.BuildSparkRootfs(ctx, dir)
	case Minimal:
	default:
		return unknownProfile(profile)
	}
	bb, err := b.busybox()
	if err != nil {
		return err
	}
	for _, d := range []string{"bin", "sbin", "usr/bin", "usr/sbin", "usr/local/bin", "etc", "tmp", "proc", "sys", "dev", "run", "root", "var/tmp", strings.TrimPrefix(guestenv.ScratchDir, "/")} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
	}
	os.Chmod(filepath.Join(dir, "tmp"), 0o1777)
	os.Chmod(filepath.Join(dir, "var/tmp"), 0o1777)
	if err := copyFile(bb, filepath.Join(dir, "bin/busybox"), 0o755); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, bb, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("rootfs: listing busybox applets: %w", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		link := filepath.Join(dir, applet)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		if err := os.Symlink("/bin/busybox", link); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
	}
	if err := b.checkAgent(); err != nil {
		return err
	}
	if err := copyFile(b.AgentBinary, filepath.Join(dir, AgentPath), 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"etc/passwd":   "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
		"etc/group":    "root:x:0:\nnogroup:x:65534:\n",
		"etc/hostname": "isobench\n",
		"etc/hosts":    "127.0.0.1 localhost isobench\n::1 localhost\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// hashFile writes the content of the file at path to a digest's hash h.
func hashFile(h io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("image digest: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("image digest: %w", err)
	}
	return nil
}

// BuildInTemp builds profile's root file system with build in a new
// temporary directory under stateDir, hands it to use (an engine's
// import) and removes it. engine ("docker", "podman") starts the errors
// and names the directory (docker-rootfs-*); ref names the image in a
// failed build's error.
func BuildInTemp(ctx context.Context, stateDir, engine, profile, ref string, build func(ctx context.Context, profile, dir string) error, use func(dir string) error) error {
	if stateDir == "" {
		return fmt.Errorf("%s image: no state directory to build the root file system in", engine)
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return fmt.Errorf("%s image: %w", engine, err)
	}
	tmp, err := os.MkdirTemp(stateDir, engine+"-rootfs-")
	if err != nil {
		return fmt.Errorf("%s image: %w", engine, err)
	}
	defer os.RemoveAll(tmp)
	if err := build(ctx, profile, tmp); err != nil {
		return fmt.Errorf("%s image %s: %w", engine, ref, err)
	}
	return use(tmp)
}

// Tar writes dir as an uncompressed tar stream keeping numeric ownership,
// the form `docker import` and `podman import` take.
func Tar(dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := fstree.Walk(dir, func(e fstree.Entry) error {
		hdr, err := tar.FileInfoHeader(e.Info, e.Link)
		if err != nil {
			return err
		}
		hdr.Name = e.Rel
		if e.Info.IsDir() {
			hdr.Name += "/"
		}
		// Ownership as on disk (FileInfoHeader took uid/gid from lstat): a
		// Debian root file system has files owned by its service users.
		// Names are left empty so the importer goes by the numbers.
		hdr.Uname, hdr.Gname = "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if e.Info.Mode().IsRegular() {
			f, err := os.Open(e.Path)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("tar %s: %w", dir, err)
	}
	return tw.Close()
}
