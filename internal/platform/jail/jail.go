// Package jail runs instances as FreeBSD jails: `jail -c` on a root made
// of the base system's static /rescue binaries (nullfs, read-only) and the
// isobench agent (its FreeBSD build), limits through rctl(8), commands
// through jexec(8), removal with `jail -r`. It runs on a FreeBSD host; from
// a Linux machine it is reached over SSH (jail:host=ssh://root@HOST), where
// isobench's FreeBSD build drives it.
//
// Every command is built by a pure function and run through a Runner, so
// the command lines and the parsing of jls(8) output are tested anywhere;
// the platform itself has not run against a real FreeBSD host in this
// project's CI (none is reachable there).
package jail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/instguard"
)

// Factory registers the jail platform.
var Factory = platform.Factory{
	Name: "jail",
	Help: "FreeBSD jails (jail -c, jexec, rctl limits) on a FreeBSD host, e.g. jail:host=ssh://root@bsd; network=host|none|bridge (an alias on iface= from subnet=); not yet run against a real FreeBSD host",
	// iface and subnet place network=bridge jails: each gets the next
	// address of subnet as an alias on iface (default lo1, 10.201.0.0/24).
	Extra: []string{"iface", "subnet"},
	New:   New,
	// not yet measured on a FreeBSD host: the default's second
	Cost: platform.Cost{Instance: time.Second},
	// jails live on the FreeBSD host (host=ssh://), where the platformd
	// this host talks to removes its own when the connection is gone:
	// nothing of theirs is left on this host
	Sweep: platform.NoLeftovers,
}

// Runner runs one command on the jail host.
type Runner interface {
	Run(ctx context.Context, argv, env []string, stdio platform.ExecIO) error
	// Start runs argv in the background; wait returns its exit status.
	Start(ctx context.Context, argv, env []string, stdout io.Writer) (wait func() (int, error), err error)
}

// Platform is the jail platform.
type Platform struct {
	env    platform.Env
	base   platform.Spec
	iface  string
	subnet netip.Prefix
	run    Runner
	goos   string

	mu   sync.Mutex
	next netip.Addr // next bridge address
	used map[netip.Addr]bool
}

// New checks the options; nothing runs until Available or Create.
func New(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
	return newPlatform(o, env, execRunner{}, runtime.GOOS)
}

func newPlatform(o platform.Options, env platform.Env, r Runner, goos string) (*Platform, error) {
	p := &Platform{env: env, base: o.Base, iface: "lo1", run: r, goos: goos, used: map[netip.Addr]bool{}}
	p.subnet = netip.MustParsePrefix("10.201.0.0/24")
	if v := o.Extra["iface"]; v != "" {
		if strings.ContainsAny(v, " \t=,/") {
			return nil, fmt.Errorf("jail: iface=%q is not an interface name", v)
		}
		p.iface = v
	}
	if v := o.Extra["subnet"]; v != "" {
		pfx, err := netip.ParsePrefix(v)
		if err != nil || !pfx.Addr().Is4() || pfx.Bits() > 30 {
			return nil, fmt.Errorf("jail: subnet=%q must be an IPv4 prefix of at least 4 addresses, e.g. 10.201.0.0/24", v)
		}
		p.subnet = pfx.Masked()
	}
	switch o.Base.Network {
	case platform.NetDefault, platform.NetHost, platform.NetNone, platform.NetBridge:
	default:
		return nil, fmt.Errorf("jail: network=%s is %w (host, none or bridge)", o.Base.Network, platform.ErrUnsupported)
	}
	p.next = p.subnet.Addr().Next().Next() // .1 is left for the host side
	return p, nil
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "jail" }

// Available says whether jails can be made here and, with limits, whether
// rctl can enforce them.
func (p *Platform) Available(ctx context.Context) error {
	if p.goos != "freebsd" {
		return fmt.Errorf("jail: FreeBSD jails run only on a FreeBSD host (this is %s); reach one over SSH with jail:host=ssh://root@HOST", p.goos)
	}
	if err := p.run.Run(ctx, []string{"jls", "-n", "jid"}, nil, platform.ExecIO{}); err != nil {
		return fmt.Errorf("jail: jls failed (%w): run isobench as root on the FreeBSD host", err)
	}
	if p.base.CPUs > 0 || p.base.Memory > 0 {
		var out strings.Builder
		if err := p.run.Run(ctx, []string{"sysctl", "-n", "kern.racct.enable"}, nil, platform.ExecIO{Stdout: &out}); err != nil || strings.TrimSpace(out.String()) != "1" {
			return errors.New("jail: cpus/memory limits need rctl: add kern.racct.enable=1 to /boot/loader.conf and reboot")
		}
	}
	return nil
}

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"goarch": runtime.GOARCH}
	for k, argv := range map[string][]string{
		"freebsd_version": {"freebsd-version", "-k"},
		"racct":           {"sysctl", "-n", "kern.racct.enable"},
	} {
		var out strings.Builder
		if p.run.Run(ctx, argv, nil, platform.ExecIO{Stdout: &out}) == nil {
			f[k] = strings.TrimSpace(out.String())
		}
	}
	return f
}

// Close implements platform.Platform.
func (p *Platform) Close(ctx context.Context) error { return nil }

// JailName turns an instance name into a jail name (letters, digits, _ and
// -; jail names may not contain dots).
func JailName(name string) string {
	var b strings.Builder
	b.WriteString("isob-")
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Layout is where one jail's files live on the host.
type Layout struct {
	Root    string // the jail's path
	Scratch string // host directory nullfs-mounted at the scratch dir (storage=volume), or ""
}

// CreateArgs is the `jail -c` command for a jail named name at l with
// network net (addr for bridge).
func CreateArgs(name string, l Layout, network, iface string, addr netip.Addr) []string {
	argv := []string{"jail", "-c",
		"name=" + name,
		"path=" + l.Root,
		"host.hostname=" + name,
		"persist",
		"mount.devfs", "devfs_ruleset=4",
		"enforce_statfs=2",
		"children.max=0",
		"allow.raw_sockets=0",
		"mount=/rescue " + filepath.Join(l.Root, "rescue") + " nullfs ro 0 0",
	}
	if l.Scratch != "" {
		argv = append(argv, "mount="+l.Scratch+" "+filepath.Join(l.Root, strings.TrimPrefix(guestenv.ScratchDir, "/"))+" nullfs rw 0 0")
	}
	switch network {
	case platform.NetNone:
		argv = append(argv, "ip4=disable", "ip6=disable")
	case platform.NetBridge:
		argv = append(argv, "interface="+iface, "ip4.addr="+addr.String(), "ip6=disable")
	default: // host
		argv = append(argv, "ip4=inherit", "ip6=inherit")
	}
	return argv
}

// LimitArgs are the rctl(8) rules for a jail's cpus (pcpu is in percent of
// one CPU) and memory.
func LimitArgs(name string, cpus float64, memory int64) [][]string {
	var out [][]string
	if cpus > 0 {
		out = append(out, []string{"rctl", "-a", fmt.Sprintf("jail:%s:pcpu:deny=%d", name, int(cpus*100+0.5))})
	}
	if memory > 0 {
		out = append(out, []string{"rctl", "-a", fmt.Sprintf("jail:%s:memoryuse:deny=%d", name, memory)})
	}
	return out
}

// ExecArgs is argv run inside jail name by jexec, with the agent
// placeholder resolved.
func ExecArgs(name string, argv []string) []string {
	return append([]string{"jexec", name}, platform.AgentArgv(argv, agentPath)...)
}

// agentPath is where the agent sits inside every jail.
const agentPath = "/isobench"

// guestEnv is the environment of every command in a jail.
var guestEnv = []string{"PATH=/rescue", guestenv.ScratchEnv + "=" + guestenv.ScratchDir, "HOME=/"}

// ParseJLS parses `jls -n -j NAME` output: space-separated name=value
// parameters and bare boolean flags ("persist", "nodying"); values with
// spaces come double-quoted.
func ParseJLS(s string) (map[string]string, error) {
	out := map[string]string{}
	s = strings.TrimSpace(s)
	for s != "" {
		var tok string
		i := 0
		inQ := false
		for ; i < len(s); i++ {
			c := s[i]
			if c == '"' {
				inQ = !inQ
				continue
			}
			if c == '\\' && i+1 < len(s) {
				tok += string(s[i+1])
				i++
				continue
			}
			if (c == ' ' || c == '\n' || c == '\t') && !inQ {
				break
			}
			tok += string(c)
		}
		if inQ {
			return nil, fmt.Errorf("jls: unterminated quote in %q", s)
		}
		s = strings.TrimLeft(s[i:], " \n\t")
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			v = "true"
		}
		if k == "" {
			return nil, fmt.Errorf("jls: empty parameter name in %q", tok)
		}
		out[k] = v
	}
	if out["jid"] == "" || out["name"] == "" {
		return nil, errors.New("jls: output has no jid or name")
	}
	return out, nil
}

// Create makes the jail's root, starts the jail, applies limits and, with
// Spec.Main, starts the main process. On error nothing is left behind.
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	s = mergeSpec(p.base, s)
	if s.Network == "" {
		s.Network = platform.NetHost
	}
	name := JailName(s.Name)
	dir, err := os.MkdirTemp(p.env.StateDir, "jail-")
	if err != nil {
		return nil, fmt.Errorf("jail: %w", err)
	}
	in := &instance{p: p, name: name, dir: dir, network: s.Network}
	defer func() {
		if err != nil {
			in.Close(context.WithoutCancel(ctx))
		}
	}()
	l := Layout{Root: filepath.Join(dir, "root")}
	for _, d := range []string{"rescue", "dev", "tmp", "etc", strings.TrimPrefix(guestenv.ScratchDir, "/")} {
		if err := os.MkdirAll(filepath.Join(l.Root, d), 0o755); err != nil {
			return nil, fmt.Errorf("jail: %w", err)
		}
	}
	if err := os.Chmod(filepath.Join(l.Root, "tmp"), 0o1777); err != nil {
		return nil, fmt.Errorf("jail: %w", err)
	}
	if err := os.Symlink("rescue", filepath.Join(l.Root, "bin")); err != nil {
		return nil, fmt.Errorf("jail: %w", err)
	}
	if err := copyFile(p.env.AgentBinary, filepath.Join(l.Root, strings.TrimPrefix(agentPath, "/")), 0o755); err != nil {
		return nil, fmt.Errorf("jail: agent: %w", err)
	}
	if s.Storage == platform.StorageVolume {
		l.Scratch = filepath.Join(dir, "scratch")
		if err := os.Mkdir(l.Scratch, 0o700); err != nil {
			return nil, fmt.Errorf("jail: %w", err)
		}
	}
	if s.Network == platform.NetBridge {
		if in.addr, err = p.lease(); err != nil {
			return nil, err
		}
	}
	if err := p.run.Run(ctx, CreateArgs(name, l, s.Network, p.iface, in.addr), nil, platform.ExecIO{}); err != nil {
		return nil, fmt.Errorf("jail: create %s: %w", name, err)
	}
	in.created = true
	for _, argv := range LimitArgs(name, s.CPUs, s.Memory) {
		if err := p.run.Run(ctx, argv, nil, platform.ExecIO{}); err != nil {
			return nil, fmt.Errorf("jail: limit %s: %w", name, err)
		}
		in.limited = true
	}
	in.cpus, in.memory = s.CPUs, s.Memory
	if s.Phase != nil {
		s.Phase("created", nowFunc())
	}
	if len(s.Main) > 0 {
		out := s.MainStdout
		if out == nil {
			out = io.Discard
		}
		wait, err := p.run.Start(ctx, ExecArgs(name, s.Main), guestEnv, out)
		if err != nil {
			return nil, fmt.Errorf("jail: main: %w", err)
		}
		in.wait = wait
		if s.Phase != nil {
			s.Phase("started", nowFunc())
		}
	}
	return in, nil
}

func (p *Platform) lease() (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a := p.next; p.subnet.Contains(a); a = a.Next() {
		if !p.used[a] && a.Next().IsValid() && p.subnet.Contains(a.Next()) { // not the broadcast address
			p.used[a] = true
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("jail: no free address left in %s", p.subnet)
}

func (p *Platform) release(a netip.Addr) {
	p.mu.Lock()
	delete(p.used, a)
	p.mu.Unlock()
}

type instance struct {
	p       *Platform
	name    string
	dir     string
	network string
	addr    netip.Addr
	cpus    float64
	memory  int64
	created bool
	limited bool
	wait    func() (int, error)

	mu     sync.Mutex
	closed bool
}

func (in *instance) ID() string { return in.name }

func (in *instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	in.mu.Lock()
	closed := in.closed
	in.mu.Unlock()
	if closed {
		return fmt.Errorf("jail %s: closed", in.name)
	}
	full := ExecArgs(in.name, argv)
	err := in.p.run.Run(ctx, full, guestEnv, stdio)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &platform.ExitError{Code: ee.ExitCode(), Argv: argv}
	}
	return err
}

func (in *instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	if !filepath.IsAbs(guestPath) || strings.Contains(guestPath, "..") {
		return fmt.Errorf("jail: copy-in path %q must be absolute and without ..", guestPath)
	}
	dst := filepath.Join(in.dir, "root", guestPath)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("jail: %w", err)
	}
	return copyFile(hostPath, dst, os.FileMode(mode))
}

func (in *instance) Address(ctx context.Context) (string, error) {
	switch in.network {
	case platform.NetNone:
		return "", nil
	case platform.NetBridge:
		return in.addr.String(), nil
	}
	return "127.0.0.1", nil
}

func (in *instance) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"network": in.network, "id": in.name}
	if in.cpus > 0 {
		f["cpus"] = strconv.FormatFloat(in.cpus, 'g', -1, 64)
	}
	if in.memory > 0 {
		f["memory"] = strconv.FormatInt(in.memory, 10)
	}
	var out strings.Builder
	if in.p.run.Run(ctx, []string{"jls", "-n", "-j", in.name}, nil, platform.ExecIO{Stdout: &out}) == nil {
		if kv, err := ParseJLS(out.String()); err == nil {
			f["jid"] = kv["jid"]
			f["securelevel"] = kv["securelevel"]
			f["enforce_statfs"] = kv["enforce_statfs"]
		}
	}
	return f
}

func (in *instance) Wait(ctx context.Context) (int, error) {
	if in.wait == nil {
		<-ctx.Done()
		return -1, ctx.Err()
	}
	return in.wait()
}

// Close removes the jail (jail -r unmounts devfs and the nullfs mounts),
// its rctl rules, its address and its files. Every failure is reported.
func (in *instance) Close(ctx context.Context) error {
	if !instguard.First(&in.mu, &in.closed) {
		return nil
	}
	var errs []error
	if in.created {
		if err := in.p.run.Run(ctx, []string{"jail", "-r", in.name}, nil, platform.ExecIO{}); err != nil {
			errs = append(errs, fmt.Errorf("jail -r %s: %w", in.name, err))
		}
	}
	if in.limited {
		if err := in.p.run.Run(ctx, []string{"rctl", "-r", "jail:" + in.name}, nil, platform.ExecIO{}); err != nil {
			errs = append(errs, fmt.Errorf("rctl -r jail:%s: %w", in.name, err))
		}
	}
	if in.addr.IsValid() {
		in.p.release(in.addr)
	}
	if err := os.RemoveAll(in.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", in.dir, err))
	}
	return errors.Join(errs...)
}

func mergeSpec(base, s platform.Spec) platform.Spec {
	if s.CPUs == 0 {
		s.CPUs = base.CPUs
	}
	if s.Memory == 0 {
		s.Memory = base.Memory
	}
	if s.Network == "" {
		s.Network = base.Network
	}
	if s.Storage == "" {
		s.Storage = base.Storage
	}
	return s
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
