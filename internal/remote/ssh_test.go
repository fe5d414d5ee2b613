package remote

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/native"
)

type testLog struct{ t *testing.T }

// dialer is the host's end of a remote platform as the suite dials through
// it (platformd.Client's DialContext).
type dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestSSHConformance runs the platform suite on native on a remote host
// reached over a real sshd in a network namespace: isobench is copied
// there, cached by digest, and leaves nothing behind.
func TestSSHConformance(t *testing.T) {
	tb := newTestbed(t, 1)
	h := tb.hosts[0]
	agent := testAgent(t)
	reg := Wrap(platform.NewRegistry(native.Factory))
	f, o, err := reg.Parse(tb.spec("native", h, "key="+tb.key))
	if err != nil {
		t.Fatal(err)
	}
	env := platform.Env{AgentBinary: agent, StateDir: t.TempDir(), Log: testLog{t}}
	if entries, _ := os.ReadDir(h.cacheDir()); len(entries) != 0 {
		t.Fatalf("the remote cache is not empty before the first connection: %v", entries)
	}
	var p platform.Platform
	conformance.Run(t, func(t *testing.T) platform.Platform {
		p, err = f.New(withCtx(t, 2*60e9), o, env)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, conformance.Opts{
		NoNetworks: []string{platform.NetBridge, platform.NetNone},
		Leftovers:  h.instanceLeftovers(t),
		Limits:     nativeLimits,
		Dial:       func(ctx context.Context, n, a string) (net.Conn, error) { return p.(dialer).DialContext(ctx, n, a) },
	})
	if t.Failed() {
		return
	}
	h.assertClean(t)

	// the binary is in the remote cache under its digest, and a second
	// connection uses it as it is
	digest, err := fileDigest(agent)
	if err != nil {
		t.Fatal(err)
	}
	cached := filepath.Join(h.cacheDir(), "isobench-"+digest[:32])
	if d, err := fileDigest(cached); err != nil || d != digest {
		t.Fatalf("cached binary %s: digest %s, %v; want %s", cached, d, err, digest)
	}
	before, err := os.Stat(cached)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := f.New(withCtx(t, 2*60e9), o, env)
	if err != nil {
		t.Fatal(err)
	}
	ctx := withCtx(t, 2*60e9)
	inst, err := p2.Create(ctx, platform.Spec{Name: "cache-check"})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := inst.Exec(ctx, []string{"sh", "-c", "echo $TMPDIR"}, platform.ExecIO{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != h.tmpDir() {
		t.Errorf("remote TMPDIR %q, want the host's own %q", got, h.tmpDir())
	}
	facts := inst.Facts(ctx)
	if facts["host"] != h.url() || facts["host_kernel"] == "" || facts["host_cpu"] == "" {
		t.Errorf("instance facts lack the host: %v", facts)
	}
	inst.Close(ctx)
	p2.Close(ctx)
	after, err := os.Stat(cached)
	if err != nil {
		t.Fatal(err)
	}
	// a copy is a new file moved in place (another inode); using the
	// cached one touches it (the cache keeps the most recently used)
	if !os.SameFile(before, after) {
		t.Error("the cached binary was copied again although its digest was there")
	}
	if after.ModTime().Before(before.ModTime()) {
		t.Errorf("the cached binary was not touched when used: %v, then %v", before.ModTime(), after.ModTime())
	}
	entries, _ := os.ReadDir(h.cacheDir())
	if len(entries) != 1 {
		t.Errorf("remote cache holds %d entries, want 1", len(entries))
	}
	h.assertClean(t)
}

// TestSSHHostKeys: an unknown host and a changed host key are refused with
// an error that says what to do; nothing is trusted on first use.
func TestSSHHostKeys(t *testing.T) {
	tb := newTestbed(t, 1)
	h := tb.hosts[0]
	agent := testAgent(t)
	reg := Wrap(platform.NewRegistry(native.Factory))
	env := platform.Env{AgentBinary: agent, StateDir: t.TempDir()}
	open := func(known string) error {
		f, o, err := reg.Parse(fmt.Sprintf("native:host=%s,key=%s,known-hosts=%s", h.url(), tb.key, known))
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.New(withCtx(t, 60e9), o, env)
		if err == nil {
			p.Close(t.Context())
		}
		return err
	}
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := open(empty)
	if err == nil || !strings.Contains(err.Error(), "not in "+empty) || !strings.Contains(err.Error(), "ssh-keyscan -p 22 "+h.addr) {
		t.Errorf("unknown host: %v", err)
	}
	if b, _ := os.ReadFile(empty); len(b) != 0 {
		t.Errorf("known_hosts was written to: %q", b)
	}
	_, otherPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherSigner, _ := ssh.NewSignerFromKey(otherPriv)
	other := otherSigner.PublicKey()
	wrong := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(wrong, []byte(knownhosts.Line([]string{h.addr}, other)+"\n"), 0o600)
	if err := open(wrong); err == nil || !strings.Contains(err.Error(), "HOST KEY MISMATCH") {
		t.Errorf("changed host key: %v", err)
	}
	if err := open(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing known_hosts: %v", err)
	}
	// a binary for another architecture is refused before it is copied
	otherArch, otherMachine := "linux/arm64", elf.EM_AARCH64
	if runtime.GOARCH == "arm64" {
		otherArch, otherMachine = "linux/amd64", elf.EM_X86_64
	}
	arm := filepath.Join(t.TempDir(), "isobench-other")
	elfBytes, err := os.ReadFile(agent)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint16(elfBytes[18:], uint16(otherMachine)) // e_machine
	if err := os.WriteFile(arm, elfBytes, 0o755); err != nil {
		t.Fatal(err)
	}
	f, o, err := reg.Parse(tb.spec("native", h, "key="+tb.key+",binary="+arm))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.New(withCtx(t, 60e9), o, env); err == nil || !strings.Contains(err.Error(), "built for "+otherArch) || !strings.Contains(err.Error(), "GOARCH="+runtime.GOARCH) {
		t.Errorf("%s binary for a %s host: %v", otherArch, runtime.GOARCH, err)
	}
	// no key and no agent
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv(KeyEnv, "")
	f, o, _ = reg.Parse(fmt.Sprintf("native:host=%s,known-hosts=%s", h.url(), h.known))
	if _, err := f.New(withCtx(t, 60e9), o, env); err == nil || !strings.Contains(err.Error(), "ssh-add") {
		t.Errorf("no key: %v", err)
	}
	// a cache that was never used stays empty: nothing was copied
	if entries, _ := os.ReadDir(h.cacheDir()); len(entries) != 0 {
		t.Errorf("refused connections copied isobench: %v", entries)
	}
}
