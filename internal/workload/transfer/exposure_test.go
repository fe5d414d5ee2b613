package transfer

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	fake "github.com/isobench/isobench/internal/testkit/fakeplatform"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/service"
)

// spyPlatform is the fake platform whose instances have a private
// address of their own and record every argv they run.
type spyPlatform struct {
	*fake.Platform
	addr string
	mu   sync.Mutex
	runs [][]string
}

func (p *spyPlatform) Create(ctx context.Context, s platform.Spec) (platform.Instance, error) {
	in, err := p.Platform.Create(ctx, s)
	if err != nil {
		return nil, err
	}
	return &spyInstance{Instance: in, p: p}, nil
}

type spyInstance struct {
	platform.Instance
	p *spyPlatform
}

func (in *spyInstance) Address(context.Context) (string, error) { return in.p.addr, nil }

func (in *spyInstance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	in.p.mu.Lock()
	in.p.runs = append(in.p.runs, append([]string(nil), argv...))
	in.p.mu.Unlock()
	return in.Instance.Exec(ctx, argv, stdio)
}

// TestHostGivesSecretsOnStdinAndBindsInstanceAddress reproduces defects 1,
// 5 and 6 of issue 23 on the host's side: the scp host key and the smb
// password travelled in the agent's argv (readable in /proc by every
// local user, quoted by exec errors into failure records) and the server
// listened on 0.0.0.0. Now the server half (a stub recording what it
// got) listens on the instance's own address and gets the secrets on its
// stdin; no argv run in the instance and no error holds them.
func TestHostGivesSecretsOnStdinAndBindsInstanceAddress(t *testing.T) {
	for _, c := range []struct {
		def    workload.Def
		secret string
		bins   []string
	}{
		{SCPDef, "hostkey", []string{"scp", "ssh-keygen"}},
		{SMBDef, "secret", []string{"smbclient"}},
	} {
		t.Run(c.def.Name, func(t *testing.T) {
			for _, b := range c.bins {
				if err := needBin(b); err != nil {
					t.Skip(err)
				}
			}
			var got workload.Params
			stub := Server
			stub.Agent = func(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
				got = p
				return nil, errors.New("stub server: not starting " + p.String())
			}
			reg, err := workload.NewRegistry(stub)
			if err != nil {
				t.Fatal(err)
			}
			sp := &spyPlatform{Platform: &fake.Platform{Label: "spy", Workloads: reg}, addr: "10.77.0.9"}
			p, err := c.def.Resolve(map[string]string{"file": "1k"})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			env := workload.HostEnv{Platform: sp, Instances: 1, NewName: func() string { n++; return "i" + strconv.Itoa(n) }}
			_, err = c.def.Host(t.Context(), p, env)
			if err == nil || !strings.Contains(err.Error(), "stub server") {
				t.Fatalf("hostRun: %v, want the stub's failure", err)
			}
			if b := got.Str("bind"); b != "10.77.0.9" {
				t.Errorf("the server half listens on %q, want the instance's own address 10.77.0.9", b)
			}
			sec := got.Str(c.secret)
			if sec == "" {
				t.Fatalf("the server half got no %s", c.secret)
			}
			if strings.Contains(err.Error(), sec) {
				t.Errorf("the error shows the %s", c.secret)
			}
			if len(sp.runs) == 0 {
				t.Fatal("nothing ran in the instance")
			}
			for _, argv := range sp.runs {
				a := strings.Join(argv, " ")
				if strings.Contains(a, sec) || strings.Contains(a, c.secret+"=") || strings.Contains(a, "0.0.0.0") {
					t.Errorf("argv %q holds the %s or listens everywhere", a, c.secret)
				}
			}
		})
	}
}

func needBin(b string) error {
	for _, d := range strings.Split(os.Getenv("PATH")+":/usr/sbin:/sbin", ":") {
		if st, err := os.Stat(filepath.Join(d, b)); err == nil && !st.IsDir() {
			return nil
		}
	}
	return errors.New(b + " is not installed on the host")
}

// TestServerRefusesInjection: what reaches sshd_config, smb.conf,
// vsftpd.conf, Apache's and Postfix's configuration and authorized_keys
// is refused unless plain: bind (';', spaces, quotes, newlines, 0.0.0.0),
// an authorized key with options or a second line, a host key that is
// not one, a password that could end a line.
func TestServerRefusesInjection(t *testing.T) {
	hx := func(s string) string { return hex.EncodeToString([]byte(s)) }
	good := map[string]string{"proto": SCP, "bind": "10.0.0.2",
		"authkey": hx("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample isobench\n"),
		"hostkey": hx("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----\n")}
	if _, err := Server.Resolve(good); err != nil {
		t.Fatalf("a plain server: %v", err)
	}
	for name, bad := range map[string]map[string]string{
		"bind 0.0.0.0":      {"bind": "0.0.0.0"},
		"bind ;":            {"bind": "10.0.0.2;"},
		"bind space":        {"bind": "10.0.0.2 extra"},
		"bind newline":      {"bind": "10.0.0.2\nPermitRootLogin yes"},
		"bind quote":        {"bind": `"10.0.0.2"`},
		"authkey options":   {"authkey": hx(`command="sh" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample x` + "\n")},
		"authkey two keys":  {"authkey": hx("ssh-ed25519 AAAA x\nssh-ed25519 BBBB y\n")},
		"authkey not hex":   {"authkey": "zz"},
		"hostkey not a key": {"hostkey": hx("hello\nworld\n")},
		"secret newline":    {"secret": "0123456789abcdef\nguest ok = yes"},
		"secret short":      {"secret": "abc"},
		"pasv beyond 65535": {"pasv": "65000", "pasv-n": "1000"},
		"pasv-address line": {"pasv-address": "127.0.0.1\nanon_upload_enable=YES"},
		"pasv-address name": {"pasv-address": "localhost"},
		"pasv-address v6":   {"pasv-address": "::1"},
	} {
		raw := map[string]string{}
		for k, v := range good {
			raw[k] = v
		}
		for k, v := range bad {
			raw[k] = v
		}
		_, err := Server.Resolve(raw)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if v := bad["secret"]; v != "" && strings.Contains(err.Error(), v) {
			t.Errorf("%s: the error quotes the secret: %v", name, err)
		}
	}
	// the agent's own check of the scratch directory and the address
	t.Setenv(workload.ScratchEnv, filepath.Join(t.TempDir(), "a b"))
	p, err := Server.Resolve(map[string]string{"proto": Wget})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := serve(t.Context(), p, func() error { t.Error("reported ready"); return nil }, make(chan struct{})); err == nil || !strings.Contains(err.Error(), "configuration") {
		t.Errorf("a scratch directory with a space: %v", err)
	}
	if service.ValidPassword("0123456789abcdef\n") {
		t.Error("a password with a newline is valid")
	}
}
