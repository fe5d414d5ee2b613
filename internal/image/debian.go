package image

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/guestenv"
)

// Debian is the profile name of a Debian root file system of the host's
// release holding real server software (DebianPackages) and the isobench
// agent. It is built without any registry, with mmdebstrap from the Debian
// archive the host's apt already uses, once per content digest (release,
// apt sources, package list, the versions apt would install, the agent),
// and kept in the state directory: the Debian part of a tree is reused when
// only the agent changed, so a rebuild takes seconds.
const Debian = "debian"

// DebianPackages are what the debian profile installs (with their
// dependencies, without recommends): the servers the service workloads
// start, the servers the transfer and mail workloads will need, and the
// load generators for clients placed in instances.
var DebianPackages = []string{
	"nginx", "apache2", "redis-server", "mariadb-server",
	"openssh-server", "vsftpd", "postfix", "samba",
	"apache2-utils", "wrk", "redis-tools", "sysbench", "mariadb-client",
	// the papers' own tools run in every instance (study 003's fio)
	"fio",
	"iproute2", "procps",
	// a system's own init and services, for system containers
	// (lxc/lxd init=system, nspawn boot=true): systemd with journald,
	// D-Bus, and sshd above
	"systemd", "systemd-sysv", "dbus",
}

// DebianDocker is the debian profile plus a Docker engine (DockerPackages):
// the root disk of a VM that runs dockerd (platform docker-in-vm). It is a
// profile of its own so the debian profile's size and digest do not change.
const DebianDocker = "debian-docker"

// DockerPackages are what DebianDocker adds to DebianPackages: the engine,
// and a static busybox for the minimal image dockerd in the guest builds.
var DockerPackages = []string{"docker.io", "containerd", "runc", "iptables", "busybox-static"}

// IsDebian reports whether profile is built from a Debian tree.
func IsDebian(profile string) bool { return profile == Debian || profile == DebianDocker }

// debianPackages is the package list of a Debian-based profile.
func debianPackages(profile string) []string {
	if profile == DebianDocker {
		return append(append([]string(nil), DebianPackages...), DockerPackages...)
	}
	return DebianPackages
}

// mmdebstrap is the tool that builds the Debian tree.
const mmdebstrap = "mmdebstrap"

// mmdebstrapTree builds a Debian tree of release rel from the apt sources
// file srcFile into target with the packages pkgs, without man pages, docs,
// locales or apt lists, printing mmdebstrap's output prefixed with "image
// WHAT: ". extra are further mmdebstrap options (hooks).
func (b Builder) mmdebstrapTree(ctx context.Context, what, rel, srcFile, target string, pkgs []string, extra ...string) error {
	args := []string{
		"--mode=root", "--variant=apt", "--format=directory",
		"--include=" + strings.Join(pkgs, ","),
		"--dpkgopt=path-exclude=/usr/share/man/*",
		"--dpkgopt=path-exclude=/usr/share/doc/*",
		"--dpkgopt=path-exclude=/usr/share/locale/*",
		"--dpkgopt=path-include=/usr/share/locale/locale.alias",
	}
	args = append(args, extra...)
	args = append(args,
		"--customize-hook=rm -rf \"$1\"/var/lib/apt/lists/* \"$1\"/var/cache/apt/*.bin",
		rel, target, srcFile)
	cmd := exec.CommandContext(ctx, mmdebstrap, args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "DEBCONF_NONINTERACTIVE_SEEN=true")
	pw := &prefixWriter{w: b.log(), prefix: "image " + what + ": "}
	var tail tailBuffer
	out := io.MultiWriter(pw, &tail) // one writer: exec then writes from one goroutine
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s image: mmdebstrap: %w: %s", what, err, tail.String())
	}
	return nil
}

// aptSourceFiles are where the host's apt finds the Debian archive, in
// the order they are tried.
var aptSourceFiles = []string{"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"}

// hostRelease returns the host's Debian codename (e.g. "bookworm").
func hostRelease() (string, error) {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "", fmt.Errorf("debian image: reading the host's release: %w", err)
	}
	var id, code string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"`)
		switch k {
		case "ID":
			id = v
		case "VERSION_CODENAME":
			code = v
		}
	}
	if id != "debian" || code == "" {
		return "", fmt.Errorf("debian image: the host is %q %q, not a Debian release with a codename; the debian profile is built from the host's Debian archive", id, code)
	}
	return code, nil
}

// aptSources returns the host's apt source file that names the Debian
// archive and its content.
func aptSources() (string, []byte, error) {
	for _, f := range aptSourceFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte("debian")) {
			return f, b, nil
		}
	}
	return "", nil, fmt.Errorf("debian image: no apt source naming the Debian archive in %s", strings.Join(aptSourceFiles, ", "))
}

// candidateVersions asks the host's apt which version of every package it
// would install ("pkg=version" lines, sorted).
func candidateVersions(ctx context.Context, pkgs []string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "apt-cache", append([]string{"policy"}, pkgs...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("debian image: apt-cache policy: %w", err)
	}
	return parsePolicy(pkgs, string(out))
}

// parsePolicy reads `apt-cache policy` output.
func parsePolicy(pkgs []string, out string) ([]string, error) {
	cand := map[string]string{}
	cur := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":") {
			cur = strings.TrimSuffix(line, ":")
			continue
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Candidate:"); ok && cur != "" {
			cand[cur] = strings.TrimSpace(v)
		}
	}
	var res, missing []string
	for _, p := range pkgs {
		v := cand[p]
		if v == "" || v == "(none)" {
			missing = append(missing, p)
			continue
		}
		res = append(res, p+"="+v)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("debian image: apt knows no installable version of %s: run 'apt-get update'", strings.Join(missing, ", "))
	}
	sort.Strings(res)
	return res, nil
}

// indexStamps names the host's apt package indexes with their sizes and
// modification times: when the archive publishes new versions of any
// dependency, they change.
func indexStamps() []string {
	files, _ := filepath.Glob("/var/lib/apt/lists/*_Packages*")
	sort.Strings(files)
	var s []string
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			s = append(s, fmt.Sprintf("%s %d %d", filepath.Base(f), st.Size(), st.ModTime().Unix()))
		}
	}
	return s
}

// DebianBaseDigest identifies the Debian part of the debian profile
// (everything but the agent): engines keep it as a base layer that
// survives agent rebuilds.
func DebianBaseDigest(ctx context.Context) (string, error) { return debianBaseDigest(ctx, Debian) }

// debianBaseDigest identifies the Debian part of profile's tree
// (everything but the agent).
func debianBaseDigest(ctx context.Context, profile string) (string, error) {
	return treeDigest(ctx, profile, debianPackages(profile), nil)
}

// treeDigest identifies profile's tree as mmdebstrap builds it with pkgs:
// the host's release, its apt sources and their indexes, the packages'
// candidate versions, and the lines extra (nil: none) adds after the
// sources (what else the profile puts in, e.g. "pyspark=3.5.7\n").
func treeDigest(ctx context.Context, profile string, pkgs []string, extra func() (string, error)) (string, error) {
	rel, err := hostRelease()
	if err != nil {
		return "", err
	}
	_, src, err := aptSources()
	if err != nil {
		return "", err
	}
	vers, err := candidateVersions(ctx, pkgs)
	if err != nil {
		return "", err
	}
	more := ""
	if extra != nil {
		if more, err = extra(); err != nil {
			return "", err
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "profile=%s\nrelease=%s\nsources=%s\n%s", profile, rel, src, more)
	for _, v := range vers {
		fmt.Fprintf(h, "pkg=%s\n", v)
	}
	for _, s := range indexStamps() {
		fmt.Fprintf(h, "index=%s\n", s)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// DebianDigest identifies the debian profile's content: the Debian base
// and the agent.
func (b Builder) DebianDigest(ctx context.Context) (string, error) {
	return b.debianDigest(ctx, Debian)
}

func (b Builder) debianDigest(ctx context.Context, profile string) (string, error) {
	base, err := debianBaseDigest(ctx, profile)
	if err != nil {
		return "", err
	}
	return b.agentDigest(profile, base)
}

// agentDigest identifies a profile's content: base, the digest of its tree
// without the agent, and the agent binary.
func (b Builder) agentDigest(profile, base string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "profile=%s\nbase=%s\n", profile, base)
	if err := hashFile(h, b.AgentBinary); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func (b Builder) log() io.Writer {
	if b.Log == nil {
		return io.Discard
	}
	return b.Log
}

// debianTreeDone says whether dir holds a finished Debian tree (its last
// package's files are in place).
func debianTreeDone(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "usr/sbin/nginx"))
	return err == nil
}

// Cold says whether building profile would first build a Debian tree with
// mmdebstrap (minutes: the debian, debian-docker and spark profiles when
// their tree for the current package list is not in StateDir yet), for a
// plan's estimate and the dry run. The minimal and tools profiles are made
// from host files in seconds: never cold.
func (b Builder) Cold(ctx context.Context, profile string) (bool, error) {
	switch profile {
	case Debian, DebianDocker:
		digest, err := debianBaseDigest(ctx, profile)
		if err != nil {
			return false, err
		}
		return !debianTreeDone(filepath.Join(b.StateDir, "debian", "base-"+digest)), nil
	case Spark:
		digest, err := SparkBaseDigest(ctx)
		if err != nil {
			return false, err
		}
		return !sparkTreeDone(filepath.Join(b.StateDir, "spark", "base-"+digest)), nil
	case Minimal, Tools:
		return false, nil
	}
	return false, unknownProfile(profile)
}

// DebianBase returns the directory of the cached Debian tree (without the
// agent) under StateDir/debian, building it with mmdebstrap when no tree
// exists for the current digest.
func (b Builder) DebianBase(ctx context.Context) (string, error) {
	return b.debianBase(ctx, Debian)
}

func (b Builder) debianBase(ctx context.Context, profile string) (string, error) {
	if b.StateDir == "" {
		return "", errors.New("debian image: no state directory to keep the Debian tree in")
	}
	pkgs := debianPackages(profile)
	digest, err := debianBaseDigest(ctx, profile)
	if err != nil {
		return "", err
	}
	return b.baseTree(ctx, "debian", "Debian", digest, debianTreeDone, false, func(ctx context.Context, rel, srcFile, target string) error {
		fmt.Fprintf(b.log(), "image debian: building a %s tree with %s from %s (%d packages; this takes a few minutes)\n", rel, mmdebstrap, srcFile, len(pkgs))
		return b.mmdebstrapTree(ctx, "debian", rel, srcFile, target, pkgs)
	})
}

// baseTree returns the cached tree of kind ("debian", "spark"; title is
// its name in messages) for digest, StateDir/KIND/base-DIGEST, when done
// says it is finished; else it builds it: fill writes it into target from
// the host's release rel and its apt sources srcFile (mmdebstrap), and it
// is renamed into place (a concurrent build's finished tree is kept).
// With prune, the trees of other digests are removed first.
func (b Builder) baseTree(ctx context.Context, kind, title, digest string, done func(dir string) bool, prune bool, fill func(ctx context.Context, rel, srcFile, target string) error) (string, error) {
	root := filepath.Join(b.StateDir, kind)
	dir := filepath.Join(root, "base-"+digest)
	if done(dir) {
		fmt.Fprintf(b.log(), "image %s: reusing the %s tree %s\n", kind, title, dir)
		return dir, nil
	}
	if _, err := exec.LookPath(mmdebstrap); err != nil {
		return "", fmt.Errorf("%s image: %s is not installed: install it with 'apt-get install mmdebstrap'", kind, mmdebstrap)
	}
	rel, _ := hostRelease()
	srcFile, _, err := aptSources()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("%s image: %w", kind, err)
	}
	if prune {
		// Trees of older digests are of no use any more.
		if ents, err := os.ReadDir(root); err == nil {
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), "base-") && e.Name() != "base-"+digest {
					os.RemoveAll(filepath.Join(root, e.Name()))
				}
			}
		}
	}
	tmp, err := os.MkdirTemp(root, ".build-")
	if err != nil {
		return "", fmt.Errorf("%s image: %w", kind, err)
	}
	defer os.RemoveAll(tmp)
	target := filepath.Join(tmp, "root")
	start := time.Now()
	if err := fill(ctx, rel, srcFile, target); err != nil {
		return "", err
	}
	if err := os.Rename(target, dir); err != nil {
		if !done(dir) { // not a concurrent build
			return "", fmt.Errorf("%s image: %w", kind, err)
		}
	}
	fmt.Fprintf(b.log(), "image %s: built the %s tree %s in %s\n", kind, title, dir, time.Since(start).Round(time.Second))
	return dir, nil
}

// BuildDebianRootfs writes the debian profile into dir: the cached Debian
// tree, hard-linked (every platform uses the result read-only: as an
// overlay's lower layer or as a tar to import), then the agent and the
// directories isobench uses.
func (b Builder) BuildDebianRootfs(ctx context.Context, dir string) error {
	return b.buildDebianRootfs(ctx, Debian, dir)
}

func (b Builder) buildDebianRootfs(ctx context.Context, profile, dir string) error {
	if err := b.checkAgent(); err != nil {
		return err
	}
	start := time.Now()
	if err := b.buildDebianBaseRootfs(ctx, profile, dir); err != nil {
		return err
	}
	return b.addAgent("debian", dir, start)
}

// addAgent writes the agent into the root file system dir as a new file
// (not through a link into a cached tree) and logs that the kind's root
// file system is ready, built since start.
func (b Builder) addAgent(kind, dir string, start time.Time) error {
	agent := filepath.Join(dir, AgentPath)
	os.Remove(agent)
	if err := copyFile(b.AgentBinary, agent, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(b.log(), "image %s: root file system ready in %s (%v)\n", kind, dir, time.Since(start).Round(time.Millisecond))
	return nil
}

// BuildDebianBaseRootfs writes the debian profile without the agent into
// dir: what DebianBaseDigest identifies.
func (b Builder) BuildDebianBaseRootfs(ctx context.Context, dir string) error {
	return b.buildDebianBaseRootfs(ctx, Debian, dir)
}

func (b Builder) buildDebianBaseRootfs(ctx context.Context, profile, dir string) error {
	base, err := b.debianBase(ctx, profile)
	if err != nil {
		return err
	}
	return linkTree(ctx, "debian image: copying the Debian tree", base, dir)
}

// linkTree lays a cached tree out in dir for one instance image: the tree
// hard-linked (every platform uses the result read-only: as an overlay's
// lower layer or as a tar to import), the directories isobench uses (plus
// extra), and the files every instance gets, written as new files so
// nothing is written through a link into the cache. what prefixes a failed
// copy's error.
func linkTree(ctx context.Context, what, base, dir string, extra ...string) error {
	if out, err := exec.CommandContext(ctx, "cp", "-a", "-l", base+"/.", dir+"/").CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", what, err, strings.TrimSpace(string(out)))
	}
	dirs := append([]string{"usr/local/bin", "tmp", "var/tmp", "run", strings.TrimPrefix(guestenv.ScratchDir, "/")}, extra...)
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
	}
	os.Chmod(filepath.Join(dir, "tmp"), 0o1777)
	os.Chmod(filepath.Join(dir, "var/tmp"), 0o1777)
	files := map[string]string{
		// mmdebstrap kept daemons from starting while it configured the
		// packages; nothing started by a package script inside an
		// instance either: the workloads start the servers they need
		"usr/sbin/policy-rc.d": "#!/bin/sh\nexit 101\n",
		"etc/hostname":         "isobench\n",
		"etc/hosts":            "127.0.0.1 localhost isobench\n::1 localhost\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.Remove(p) // a hard link into the cached tree: never write through it
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "usr/sbin/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
	}
	return nil
}

// prefixWriter writes each complete line with a prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// tailBuffer keeps the last lines written to it.
type tailBuffer struct{ lines []string }

func (t *tailBuffer) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		t.lines = append(t.lines, l)
	}
	if len(t.lines) > 10 {
		t.lines = t.lines[len(t.lines)-10:]
	}
	return len(b), nil
}

func (t *tailBuffer) String() string { return strings.Join(t.lines, " | ") }

// DebianProfileBaseDigest identifies a Debian-based profile's tree without
// the agent (see IsDebian).
func DebianProfileBaseDigest(ctx context.Context, profile string) (string, error) {
	if !IsDebian(profile) {
		return "", unknownProfile(profile)
	}
	return debianBaseDigest(ctx, profile)
}

// BuildDebianProfileBaseRootfs writes a Debian-based profile without the
// agent into dir (what DebianProfileBaseDigest identifies).
func (b Builder) BuildDebianProfileBaseRootfs(ctx context.Context, profile, dir string) error {
	if !IsDebian(profile) {
		return unknownProfile(profile)
	}
	return b.buildDebianBaseRootfs(ctx, profile, dir)
}
