package remote

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/isobench/isobench/internal/platform/conformance"
)

const sshd = "/usr/sbin/sshd"

// testbed is a bridge this test owns with one network namespace per
// remote host, each running its own sshd (own host key, own config, own
// cache and temp dirs: namespaces share the file system).
type testbed struct {
	br    string
	key   string // the client's private key file
	hosts []*sshHost
}

type sshHost struct {
	ns    string
	veth  string
	addr  string // IP
	dir   string // config, keys, cache/, tmp/
	known string // known_hosts with this host's key
	hkey  ssh.PublicKey
	sshd  *exec.Cmd
	dead  chan struct{}
}

func (h *sshHost) url() string      { return "ssh://root@" + h.addr }
func (h *sshHost) cacheDir() string { return filepath.Join(h.dir, "cache", "isobench", "bin") }
func (h *sshHost) tmpDir() string   { return filepath.Join(h.dir, "tmp") }

func requireTestbed(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no SSH test hosts")
	}
	// "remote" in $ISOBENCH_REQUIRE_PLATFORMS makes a missing piece fail
	if os.Geteuid() != 0 {
		conformance.SkipUnlessRequired(t, "remote", errors.New("needs root to create network namespaces"))
	}
	if _, err := os.Stat(sshd); err != nil {
		conformance.SkipUnlessRequired(t, "remote", fmt.Errorf("%s missing: apt-get install -y openssh-server", sshd))
	}
	for _, tool := range []string{"ip", "nsenter", "ssh-agent", "ssh-add", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			conformance.SkipUnlessRequired(t, "remote", fmt.Errorf("needs %s (iproute2, util-linux, openssh-client)", tool))
		}
	}
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newTestbed makes n hosts; everything is removed when t ends, even on
// failure.
func newTestbed(t *testing.T, n int) *testbed {
	requireTestbed(t)
	var rb [3]byte
	rand.Read(rb[:])
	id := hex.EncodeToString(rb[:2])
	subnet := fmt.Sprintf("10.231.%d", rb[2])
	tb := &testbed{br: "ibsb" + id}
	dir := t.TempDir()
	t.Cleanup(func() { tb.teardown(t) })

	// the client key
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	tb.key = filepath.Join(dir, "id_ed25519")
	writeKey(t, tb.key, priv)
	authorized := ssh.MarshalAuthorizedKey(signer.PublicKey())

	ipCmd(t, "link", "add", tb.br, "type", "bridge")
	ipCmd(t, "addr", "add", subnet+".1/24", "dev", tb.br)
	ipCmd(t, "link", "set", tb.br, "up")
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation dir
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		h := &sshHost{
			ns:   fmt.Sprintf("ibtest-ssh-%s-%d", id, i),
			veth: fmt.Sprintf("ibsv%s%d", id, i),
			addr: fmt.Sprintf("%s.%d", subnet, i+2),
			dir:  filepath.Join(dir, fmt.Sprintf("host%d", i)),
			dead: make(chan struct{}),
		}
		tb.hosts = append(tb.hosts, h)
		for _, d := range []string{h.dir, h.tmpDir(), filepath.Join(h.dir, "cache")} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		ipCmd(t, "netns", "add", h.ns)
		ipCmd(t, "link", "add", h.veth, "type", "veth", "peer", "name", h.veth+"p")
		ipCmd(t, "link", "set", h.veth+"p", "netns", h.ns)
		ipCmd(t, "link", "set", h.veth, "master", tb.br, "up")
		ipCmd(t, "-n", h.ns, "addr", "add", h.addr+"/24", "dev", h.veth+"p")
		ipCmd(t, "-n", h.ns, "link", "set", h.veth+"p", "up")
		ipCmd(t, "-n", h.ns, "link", "set", "lo", "up")

		_, hpriv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		hs, _ := ssh.NewSignerFromKey(hpriv)
		h.hkey = hs.PublicKey()
		writeKey(t, filepath.Join(h.dir, "host_key"), hpriv)
		if err := os.WriteFile(filepath.Join(h.dir, "authorized_keys"), authorized, 0o600); err != nil {
			t.Fatal(err)
		}
		h.known = filepath.Join(h.dir, "known_hosts")
		line := knownhosts.Line([]string{knownhosts.Normalize(h.addr + ":22")}, h.hkey) + "\n"
		if err := os.WriteFile(h.known, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := fmt.Sprintf(`Port 22
ListenAddress %s
HostKey %s
PidFile %s
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel ERROR
SetEnv XDG_CACHE_HOME=%s TMPDIR=%s
`, h.addr, filepath.Join(h.dir, "host_key"), filepath.Join(h.dir, "sshd.pid"), filepath.Join(h.dir, "authorized_keys"),
			filepath.Join(h.dir, "cache"), h.tmpDir())
		cfgPath := filepath.Join(h.dir, "sshd_config")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		logf, err := os.Create(filepath.Join(h.dir, "sshd.log"))
		if err != nil {
			t.Fatal(err)
		}
		// nsenter switches only the network namespace: "ip netns exec"
		// would also remount /sys, hiding the cgroup mounts native needs
		h.sshd = exec.Command("nsenter", "--net=/run/netns/"+h.ns, sshd, "-D", "-e", "-f", cfgPath)
		h.sshd.Stdout, h.sshd.Stderr = logf, logf
		if err := h.sshd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { h.sshd.Wait(); logf.Close(); close(h.dead) }()
		h.waitListening(t)
	}
	return tb
}

func writeKey(t *testing.T, path string, priv ed25519.PrivateKey) {
	t.Helper()
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitListening waits for sshd to accept connections, or to die.
func (h *sshHost) waitListening(t *testing.T) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(h.addr, "22"), time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-h.dead:
			log, _ := os.ReadFile(filepath.Join(h.dir, "sshd.log"))
			t.Fatalf("sshd in %s exited: %s", h.ns, log)
		case <-deadline:
			t.Fatalf("sshd in %s is not listening on %s:22: %v", h.ns, h.addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pids lists the processes in the host's namespace with their command lines.
func (h *sshHost) pids(t *testing.T) map[int]string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", h.ns).Output()
	if err != nil {
		return nil
	}
	m := map[int]string{}
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // gone
		}
		m[pid] = strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}
	return m
}

// isobenchProcs lists isobench processes (platformd, agents) in the host.
func (h *sshHost) isobenchProcs(t *testing.T) []string {
	var out []string
	for pid, cmd := range h.pids(t) {
		if strings.Contains(cmd, "isobench") {
			out = append(out, fmt.Sprintf("%d %s", pid, cmd))
		}
	}
	sort.Strings(out)
	return out
}

// tmpEntries lists what is left in the host's temp dir.
func (h *sshHost) tmpEntries() []string {
	var out []string
	filepath.Walk(h.tmpDir(), func(p string, fi os.FileInfo, err error) error {
		if err == nil && p != h.tmpDir() && !(fi.IsDir() && filepath.Base(p) == "isobench-native") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// instanceLeftovers is conformance's view: instance dirs and instance
// processes (platformd itself is running while the suite looks).
func (h *sshHost) instanceLeftovers(t *testing.T) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) {
		out := h.tmpEntries()
		for _, p := range h.isobenchProcs(t) {
			if !strings.Contains(p, " platformd ") {
				out = append(out, p)
			}
		}
		sort.Strings(out)
		return out, nil
	}
}

// assertClean waits (up to a minute) for the host to have no isobench
// process and an empty temp dir.
func (h *sshHost) assertClean(t *testing.T) {
	t.Helper()
	h.assertCleanWithin(t, time.Minute)
}

func (h *sshHost) assertCleanWithin(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		procs, files := h.isobenchProcs(t), h.tmpEntries()
		if len(procs)+len(files) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s (%s) not clean: processes %q, files %q", h.ns, h.addr, procs, files)
			return
		}
		time.Sleep(200 * time.Millisecond) // polling /proc: there is no event to wait on
	}
}

// kill stops the host the hard way: its sshd processes are killed, then
// its platformd is told to stop (as a machine going down would).
func (h *sshHost) kill(t *testing.T) {
	for pid, cmd := range h.pids(t) {
		if strings.Contains(cmd, "sshd") {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for pid, cmd := range h.pids(t) {
		if strings.Contains(cmd, "platformd") {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	}
}

func (tb *testbed) teardown(t *testing.T) {
	for _, h := range tb.hosts {
		if h.sshd != nil && h.sshd.Process != nil {
			h.sshd.Process.Kill()
			<-h.dead
		}
		// whatever this test started in its own namespace
		for pid := range h.pids(t) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		exec.Command("ip", "netns", "del", h.ns).Run()
		exec.Command("ip", "link", "del", h.veth).Run()
	}
	exec.Command("ip", "link", "del", tb.br).Run()
}

// spec is a platform spec running name on host h with the test's key.
func (tb *testbed) spec(name string, h *sshHost, extra string) string {
	s := fmt.Sprintf("%s:host=%s,known-hosts=%s", name, h.url(), h.known)
	if extra != "" {
		s += "," + extra
	}
	return s
}

func withCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
