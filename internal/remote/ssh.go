package remote

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/platformd"
	"github.com/isobench/isobench/internal/spec"
)

// Wrap gives every platform of reg the options that run it on another
// machine: host=ssh://user@addr[:port] (required for the others), key=PATH
// (a private key file; default $ISOBENCH_SSH_KEY, else the keys in
// $SSH_AUTH_SOCK's agent), known-hosts=PATH (default $ISOBENCH_KNOWN_HOSTS,
// else ~/.ssh/known_hosts) and binary=PATH (the
// isobench to copy there, for a host of another OS or architecture;
// default: this one). Without host= a platform is created here as before.
func Wrap(reg platform.Registry) platform.Registry {
	out := platform.Registry{}
	for name, f := range reg {
		local := f.New
		f.Extra = append(slices.Clone(f.Extra), platformd.HostKeys...)
		f.New = func(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
			if o.Extra["host"] == "" {
				for _, k := range platformd.HostKeys {
					if o.Extra[k] != "" {
						return nil, fmt.Errorf("%s: %s= needs host=ssh://user@addr", o.Name, k)
					}
				}
				return local(ctx, o, env)
			}
			return Open(ctx, o, env)
		}
		out[name] = f
	}
	return out
}

// Target is a parsed host= option.
type Target struct {
	User string
	Addr string // host:port
}

// ParseHost reads ssh://[user@]addr[:port] (user defaults to $USER, port to 22).
func ParseHost(s string) (Target, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "ssh" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return Target{}, fmt.Errorf("host=%q: want ssh://user@address[:port]", s)
	}
	t := Target{User: u.User.Username(), Addr: u.Host}
	if _, pw := u.User.Password(); pw {
		return Target{}, fmt.Errorf("host=%q: no passwords in host=; use ssh-agent or key=PATH", s)
	}
	if t.User == "" {
		t.User = os.Getenv("USER")
	}
	if t.User == "" {
		t.User = "root"
	}
	if u.Port() == "" {
		t.Addr = net.JoinHostPort(u.Hostname(), "22")
	}
	return t, nil
}

// Open connects to o's host= over SSH, puts this isobench there (unless a
// copy with the same digest is already in its cache), starts
// "isobench platformd" for o's platform and returns the host's end.
func Open(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
	host := o.Extra["host"]
	client, path, err := connect(ctx, o.Extra, env.AgentBinary)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			client.Close()
		}
	}()
	params := maps.Clone(o.Raw)
	for _, k := range platformd.HostKeys {
		delete(params, k)
	}
	remoteSpec := (spec.Spec{Name: o.Name, Params: params}).String()
	sess, err := client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", host, err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		return nil, err
	}
	log := env.Log
	if log == nil {
		log = io.Discard
	}
	stderr := platformd.NewTail(log, "["+host+"] ")
	sess.Stderr = stderr
	if err := sess.Start(shell("exec " + quote(path) + " platformd " + quote(remoteSpec))); err != nil {
		return nil, fmt.Errorf("%s: starting platformd: %w", host, err)
	}
	conn := platformd.Conn(stdout, stdin, func() error { return stdin.Close() })
	cleanup := func() error {
		stdin.Close()
		done := make(chan struct{})
		go func() { sess.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
		sess.Close()
		return client.Close()
	}
	hctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	p, err := platformd.NewClient(hctx, conn, host, cleanup, stderr)
	if err != nil {
		return nil, err
	}
	ok = true
	go keepalive(client, p)
	return p, nil
}

// connect dials opts["host"] (with opts key, known-hosts, binary as in
// Wrap) and puts the isobench binary there; it returns the client and the
// binary's remote path.
func connect(ctx context.Context, opts map[string]string, agentBinary string) (*ssh.Client, string, error) {
	host := opts["host"]
	t, err := ParseHost(host)
	if err != nil {
		return nil, "", err
	}
	bin := opts["binary"]
	if bin == "" {
		bin = agentBinary
	}
	if bin == "" {
		return nil, "", fmt.Errorf("%s: no isobench binary to copy (binary=PATH)", host)
	}
	cfg, err := clientConfig(t, opts["key"], opts["known-hosts"])
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", host, err)
	}
	client, err := dial(ctx, t, cfg)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", host, err)
	}
	path, err := install(ctx, client, bin)
	if err != nil {
		client.Close()
		return nil, "", fmt.Errorf("%s: %w", host, err)
	}
	return client, path, nil
}

// RunThere runs "isobench ARGS..." on host (ssh://user@addr, with the
// same key and known_hosts rules as host=), with this isobench copied
// there as for a run; its output goes to stdout and stderr.
func RunThere(ctx context.Context, host, agentBinary string, stdout, stderr io.Writer, args ...string) error {
	client, path, err := connect(ctx, map[string]string{"host": host}, agentBinary)
	if err != nil {
		return err
	}
	defer client.Close()
	s, err := client.NewSession()
	if err != nil {
		return fmt.Errorf("%s: %w", host, err)
	}
	defer s.Close()
	s.Stdout, s.Stderr = stdout, stderr
	cmd := "exec " + quote(path)
	for _, a := range args {
		cmd += " " + quote(a)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(shell(cmd)) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: isobench %s: %w", host, strings.Join(args, " "), err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// keepalive closes the connection when the remote sshd stops answering,
// so calls in flight fail with the host's name instead of hanging.
func keepalive(c *ssh.Client, p platform.Platform) {
	closed := platformd.Closed(p)
	// within 9 s of the last answer: before the agents' own heartbeat
	// check (11 s) calls a whole host's instances hung
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-closed:
			return
		case <-tick.C:
		}
		res := make(chan error, 1)
		go func() {
			_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
			res <- err
		}()
		select {
		case err := <-res:
			if err == nil {
				continue
			}
		case <-time.After(7 * time.Second):
		}
		why := "unreachable: no answer to SSH keep-alives for 7 s"
		platformd.GiveUp(p, why)
		c.Close()
		return
	}
}

func dial(ctx context.Context, t Target, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nc, err := d.DialContext(dctx, "tcp", t.Addr)
	if err != nil {
		return nil, fmt.Errorf("ssh: %w", err)
	}
	if dl, ok := dctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	c, chans, reqs, err := ssh.NewClientConn(nc, t.Addr, cfg)
	if err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

// Environment variables that stand for key= and known-hosts= when those
// are not given, so that a platform's label stays "docker:host=ssh://...".
const (
	KeyEnv        = "ISOBENCH_SSH_KEY"
	KnownHostsEnv = "ISOBENCH_KNOWN_HOSTS"
)

// clientConfig authenticates with key (a file) or the agent, and checks
// host keys against knownHosts (default ~/.ssh/known_hosts): an unknown
// host is an error that says how to add it, never trusted on first use.
func clientConfig(t Target, key, knownHosts string) (*ssh.ClientConfig, error) {
	if key == "" {
		key = os.Getenv(KeyEnv)
	}
	if knownHosts == "" {
		knownHosts = os.Getenv(KnownHostsEnv)
	}
	var auth []ssh.AuthMethod
	switch {
	case key != "":
		b, err := os.ReadFile(key)
		if err != nil {
			return nil, fmt.Errorf("key=%s: %w", key, err)
		}
		signer, err := ssh.ParsePrivateKey(b)
		var pe *ssh.PassphraseMissingError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("key=%s is encrypted: load it into your agent (ssh-add %s) and leave key= out", key, key)
		}
		if err != nil {
			return nil, fmt.Errorf("key=%s: %w", key, err)
		}
		auth = append(auth, ssh.PublicKeys(signer))
	case os.Getenv("SSH_AUTH_SOCK") != "":
		sock := os.Getenv("SSH_AUTH_SOCK")
		auth = append(auth, ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
			c, err := net.Dial("unix", sock)
			if err != nil {
				return nil, fmt.Errorf("ssh-agent at $SSH_AUTH_SOCK: %w", err)
			}
			// the connection stays open while the signers are in use
			return agent.NewClient(c).Signers()
		}))
	default:
		return nil, errors.New("no SSH key: start ssh-agent and ssh-add your key, or give key=PATH (or $" + KeyEnv + ")")
	}
	if knownHosts == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("known_hosts: %w", err)
		}
		knownHosts = filepath.Join(home, ".ssh", "known_hosts")
	}
	check, err := knownhosts.New(filepath.SplitList(knownHosts)...)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s does not exist, so no host key can be checked: %s", knownHosts, addHint(t, knownHosts))
		}
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	cb := func(hostname string, remote net.Addr, k ssh.PublicKey) error {
		err := check(hostname, remote, k)
		var ke *knownhosts.KeyError
		if errors.As(err, &ke) {
			if len(ke.Want) == 0 {
				return fmt.Errorf("host key of %s (%s %s) is not in %s; isobench does not trust hosts on first use: check the key and %s",
					hostname, k.Type(), ssh.FingerprintSHA256(k), knownHosts, addHint(t, knownHosts))
			}
			return fmt.Errorf("HOST KEY MISMATCH for %s: it offered %s %s, %s line %d has another key; if the host was reinstalled, remove the old line (ssh-keygen -R %s -f %s)",
				hostname, k.Type(), ssh.FingerprintSHA256(k), ke.Want[0].Filename, ke.Want[0].Line, knownhostsName(t), knownHosts)
		}
		return err
	}
	return &ssh.ClientConfig{
		User:              t.User,
		Auth:              auth,
		HostKeyCallback:   cb,
		HostKeyAlgorithms: knownAlgorithms(check, t),
		Timeout:           30 * time.Second,
	}, nil
}

func knownhostsName(t Target) string {
	h, p, _ := net.SplitHostPort(t.Addr)
	return knownhosts.Normalize(net.JoinHostPort(h, p))
}

func addHint(t Target, file string) string {
	h, p, _ := net.SplitHostPort(t.Addr)
	return fmt.Sprintf("add it with: ssh-keyscan -p %s %s >> %s (or connect once with ssh -p %s %s@%s)", p, h, file, p, t.User, h)
}

// knownAlgorithms lists the host key algorithms known_hosts has for t, so
// the server is asked for a key we can check (nil: the library's default).
func knownAlgorithms(check ssh.HostKeyCallback, t Target) []string {
	probe, err := ssh.NewPublicKey(ed25519.PublicKey(probeKey))
	if err != nil {
		return nil
	}
	var ke *knownhosts.KeyError
	addr, _ := net.ResolveTCPAddr("tcp", t.Addr)
	if addr == nil {
		addr = &net.TCPAddr{}
	}
	if err := check(t.Addr, addr, probe); !errors.As(err, &ke) || len(ke.Want) == 0 {
		return nil
	}
	var algs []string
	for _, k := range ke.Want {
		switch typ := k.Key.Type(); typ {
		case ssh.KeyAlgoRSA:
			algs = append(algs, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			algs = append(algs, typ)
		}
	}
	return algs
}

// install puts bin into the remote cache (named by its digest) unless it
// is there already, and returns its remote path.
func install(ctx context.Context, c *ssh.Client, bin string) (string, error) {
	digest, err := fileDigest(bin)
	if err != nil {
		return "", err
	}
	want, err := binaryTarget(bin)
	if err != nil {
		return "", err
	}
	name := "isobench-" + digest[:32]
	// a binary in use is touched: the cache keeps the most recently used
	out, err := run(ctx, c, nil, `uname -sm; d="${XDG_CACHE_HOME:-$HOME/.cache}/isobench/bin"; mkdir -p "$d" && cd "$d" && pwd; if test -x `+quote(name)+`; then touch `+quote(name)+` 2>/dev/null; echo present; else echo absent; fi`)
	if err != nil {
		return "", fmt.Errorf("looking at the remote cache: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		return "", fmt.Errorf("unexpected answer from the remote shell: %q", out)
	}
	if got := unameTarget(lines[0]); got != want {
		return "", fmt.Errorf("the host is %s (%s) but %s is built for %s: build one for it (e.g. CGO_ENABLED=0 GOOS=%s GOARCH=%s go build -o isobench-%s-%s ./cmd/isobench) and give binary=PATH",
			got, lines[0], bin, want, strings.Split(got, "/")[0], strings.Split(got, "/")[1], strings.Split(got, "/")[0], strings.Split(got, "/")[1])
	}
	path := lines[1] + "/" + name
	if lines[2] == "present" {
		return path, nil
	}
	fh, err := os.Open(bin)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := path + ".part-" + hex.EncodeToString(rnd[:]) // concurrent installs do not share it
	if _, err := run(ctx, c, fh, "cat > "+quote(tmp)+" && chmod 755 "+quote(tmp)+" && mv -f "+quote(tmp)+" "+quote(path)); err != nil {
		return "", fmt.Errorf("copying isobench to %s: %w", path, err)
	}
	// best effort: a cache that could not be pruned only takes more space
	prune(ctx, c, lines[1], name, KeepBinaries)
	return path, nil
}

// KeepBinaries is how many isobench binaries (digests) a host's cache
// keeps: the most recently used, counting the one just copied.
const KeepBinaries = 3

// prune removes from the remote cache dir all but the keep most recently
// used isobench binaries (by modification time: install touches the one
// it uses, so another run that has just chosen an old binary keeps it
// among the newest). It never removes current, nor a binary some process
// there was started from (platformd or doctor of another run, whose
// command line starts with the binary's path: nothing else records a run
// on the remote side); where ps cannot list every process's command line,
// it removes nothing. Copies left half-done (.part-) for over a day go
// too. It returns the names it removed.
func prune(ctx context.Context, c *ssh.Client, dir, current string, keep int) ([]string, error) {
	// the cache's binaries, isobench- and 32 hex digits (not the .part-
	// files of copies under way)
	binPattern := "isobench-" + strings.Repeat("[0-9a-f]", 32)
	script := `d=` + quote(dir) + `
cd "$d" || exit 1
procs=$(ps -A -ww -o args= 2>/dev/null) || exit 0
[ -n "$procs" ] || exit 0
n=0
for f in $(ls -t); do
	case "$f" in ` + binPattern + `) ;; *) continue ;; esac
	n=$((n+1))
	if [ "$n" -le ` + strconv.Itoa(keep) + ` ] || [ "$f" = ` + quote(current) + ` ]; then continue; fi
	case "$procs" in *"$d/$f"*) continue ;; esac
	rm -f "$f" && echo "$f"
done
find . -name 'isobench-*.part-*' -mtime +1 -exec rm -f {} + 2>/dev/null
exit 0`
	out, err := run(ctx, c, nil, script)
	if err != nil {
		return nil, fmt.Errorf("pruning the remote cache %s: %w", dir, err)
	}
	return strings.Fields(out), nil
}

// run runs script with sh on the remote machine and returns its stdout.
func run(ctx context.Context, c *ssh.Client, stdin io.Reader, script string) (string, error) {
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	var out, errb strings.Builder
	s.Stdout, s.Stderr, s.Stdin = &out, &errb, stdin
	done := make(chan error, 1)
	go func() { done <- s.Run(shell(script)) }()
	select {
	case err := <-done:
		if err != nil {
			if msg := strings.TrimSpace(errb.String()); msg != "" {
				return "", fmt.Errorf("%w: %s", err, msg)
			}
			return "", err
		}
		return out.String(), nil
	case <-ctx.Done():
		s.Close()
		return "", ctx.Err()
	}
}

// shell runs script with sh whatever the login shell is.
func shell(script string) string { return "sh -c " + quote(script) }

// quote is POSIX shell single quoting.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func fileDigest(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// binaryTarget reads GOOS/GOARCH from an ELF binary.
func binaryTarget(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	goos := "linux"
	if f.OSABI == elf.ELFOSABI_FREEBSD {
		goos = "freebsd"
	}
	switch f.Machine {
	case elf.EM_X86_64:
		return goos + "/amd64", nil
	case elf.EM_AARCH64:
		return goos + "/arm64", nil
	}
	return goos + "/" + strings.ToLower(strings.TrimPrefix(f.Machine.String(), "EM_")), nil
}

// unameTarget turns `uname -sm` into GOOS/GOARCH.
func unameTarget(s string) string {
	f := strings.Fields(s)
	if len(f) != 2 {
		return "unknown/unknown"
	}
	goos := strings.ToLower(f[0])
	arch := f[1]
	switch arch {
	case "x86_64", "amd64":
		arch = "amd64"
	case "aarch64", "arm64":
		arch = "arm64"
	}
	return goos + "/" + arch
}

// probeKey is a fixed ed25519 public key no host has, used to ask
// known_hosts which key types it holds for a host.
var probeKey = []byte{
	0x3b, 0x6a, 0x27, 0xbc, 0xce, 0xb6, 0xa4, 0x2d, 0x62, 0xa3, 0xa8, 0xd0, 0x2a, 0x6f, 0x0d, 0x73,
	0x65, 0x32, 0x15, 0x77, 0x1d, 0xe2, 0x43, 0xa6, 0x3a, 0xc0, 0x48, 0xa1, 0x8b, 0x59, 0xda, 0x29,
}
