package image

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Tools is the profile name of the minimal image plus external benchmark
// tools (sysbench, fio, iperf3, iperf 2, sockperf) copied from the host with every
// shared library they load, at the same paths, so the very same bytes run
// inside instances and natively.
const Tools = "tools"

// HostTool is an external benchmark tool the tools profile can carry.
type HostTool struct {
	Name    string // tool name as used in tool lists
	Binary  string // executable name
	Package string // Debian package that provides it
}

// KnownTools lists the tools the tools profile carries by default.
var KnownTools = []HostTool{
	{Name: "sysbench", Binary: "sysbench", Package: "sysbench"},
	{Name: "fio", Binary: "fio", Package: "fio"},
	{Name: "iperf3", Binary: "iperf3", Package: "iperf3"},
	// iperf 2, study 000's (its paper chose it for many clients per server)
	{Name: "iperf", Binary: "iperf", Package: "iperf"},
	{Name: "sockperf", Binary: "sockperf", Package: "sockperf"},
}

// DefaultTools are the names of KnownTools.
func DefaultTools() []string {
	var n []string
	for _, t := range KnownTools {
		n = append(n, t.Name)
	}
	return n
}

func lookupTool(name string) (HostTool, error) {
	for _, t := range KnownTools {
		if t.Name == name {
			return t, nil
		}
	}
	return HostTool{}, fmt.Errorf("unknown tool %q for the %s image profile (known: %s)", name, Tools, strings.Join(DefaultTools(), ", "))
}

// hostBinary finds a tool's executable on the host.
func hostBinary(t HostTool) (string, error) {
	if p, err := exec.LookPath(t.Binary); err == nil {
		return filepath.Abs(p)
	}
	for _, dir := range []string{"/usr/bin", "/usr/local/bin", "/usr/sbin", "/bin", "/sbin"} {
		p := filepath.Join(dir, t.Binary)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("tool %s is not installed on the host: install it with 'apt-get install %s'", t.Binary, t.Package)
}

// SharedLibraries lists the absolute paths of the ELF interpreter and every
// shared library bin loads, as resolved by ldd(1) on the host. A static
// binary yields none.
func SharedLibraries(ctx context.Context, bin string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "ldd", bin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	text := stdout.String() + stderr.String()
	if strings.Contains(text, "not a dynamic executable") || strings.Contains(text, "statically linked") {
		return nil, nil
	}
	if err != nil {
		if _, lerr := exec.LookPath("ldd"); lerr != nil {
			return nil, fmt.Errorf("resolving libraries of %s: ldd not found (install 'libc-bin'): %w", bin, lerr)
		}
		return nil, fmt.Errorf("ldd %s: %w: %s", bin, err, strings.TrimSpace(text))
	}
	return parseLdd(bin, stdout.String())
}

// parseLdd extracts library paths from ldd output.
func parseLdd(bin, out string) ([]string, error) {
	seen := map[string]bool{}
	var libs []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var path string
		if name, rest, ok := strings.Cut(line, "=>"); ok {
			rest = strings.TrimSpace(rest)
			if strings.HasPrefix(rest, "not found") {
				return nil, fmt.Errorf("%s needs %s, which is not found on the host", bin, strings.TrimSpace(name))
			}
			path = strings.Fields(rest + " ")[0]
		} else {
			path = strings.Fields(line)[0]
		}
		if !strings.HasPrefix(path, "/") || seen[path] {
			continue // linux-vdso.so.1 and the like live in the kernel
		}
		seen[path] = true
		libs = append(libs, path)
	}
	return libs, nil
}

// toolFiles resolves the host files (binaries, interpreter, libraries) the
// tools need, sorted and without duplicates.
func toolFiles(ctx context.Context, tools []string) ([]string, error) {
	if len(tools) == 0 {
		tools = DefaultTools()
	}
	set := map[string]bool{}
	for _, name := range tools {
		t, err := lookupTool(name)
		if err != nil {
			return nil, err
		}
		bin, err := hostBinary(t)
		if err != nil {
			return nil, err
		}
		libs, err := SharedLibraries(ctx, bin)
		if err != nil {
			return nil, err
		}
		set[bin] = true
		for _, l := range libs {
			set[l] = true
		}
	}
	files := make([]string, 0, len(set))
	for f := range set {
		files = append(files, f)
	}
	sort.Strings(files)
	return files, nil
}

// ToolsDigest identifies the content of a tools profile built with tools
// (nil: DefaultTools), covering the minimal profile and every copied file.
func (b Builder) ToolsDigest(ctx context.Context, tools []string) (string, error) {
	base, err := b.Digest(Minimal)
	if err != nil {
		return "", err
	}
	files, err := toolFiles(ctx, tools)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "profile=%s\nminimal=%s\n", Tools, base)
	for _, f := range files {
		fmt.Fprintf(h, "file=%s\n", f)
		if err := hashFile(h, f); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// mergedUsrLinks are top-level directories that merged-/usr hosts (Debian
// 12) make symlinks into /usr; the rootfs mirrors them so library paths
// resolve the same way inside.
var mergedUsrLinks = []string{"lib", "lib64", "lib32", "libx32"}

// BuildToolsRootfs writes the tools profile into dir: the minimal profile,
// then each tool's host binary (tools nil or empty: DefaultTools) with its
// ELF interpreter and shared libraries copied to the same paths, so the
// same bytes run inside the instance as on the host.
func (b Builder) BuildToolsRootfs(ctx context.Context, dir string, tools []string) error {
	files, err := toolFiles(ctx, tools)
	if err != nil {
		return err
	}
	if err := b.BuildRootfs(ctx, Minimal, dir); err != nil {
		return err
	}
	for _, l := range mergedUsrLinks {
		target, err := os.Readlink("/" + l)
		if err != nil || strings.HasPrefix(target, "/") || strings.Contains(target, "..") {
			continue // a real directory (or odd link): copy into a real directory
		}
		if _, err := os.Lstat(filepath.Join(dir, l)); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Join(dir, target), 0o755); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		if err := os.Symlink(target, filepath.Join(dir, l)); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		st, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		dst := filepath.Join(dir, f)
		if lst, err := os.Lstat(dst); err == nil && lst.Mode()&os.ModeSymlink != 0 {
			// e.g. a busybox applet link: replace it, never write through it
			if err := os.Remove(dst); err != nil {
				return fmt.Errorf("rootfs: %w", err)
			}
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		if err := copyFile(f, dst, st.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}
