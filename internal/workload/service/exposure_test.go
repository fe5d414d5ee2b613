package service

import (
	"context"
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
)

// spyPlatform is the fake platform whose instances have a private
// address of their own and record every argv they run.
type spyPlatform struct {
	*fake.Platform
	addr  string
	mu    sync.Mutex
	runs  [][]string
	specs []platform.Spec
}

func (p *spyPlatform) Create(ctx context.Context, s platform.Spec) (platform.Instance, error) {
	p.mu.Lock()
	p.specs = append(p.specs, s)
	p.mu.Unlock()
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

// stubServer stands in for _service in the agent: it records the
// parameters it got (secrets included) and fails, naming them.
func stubServer(got *workload.Params) workload.Def {
	d := Server
	d.Agent = func(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
		*got = p
		return nil, errors.New("stub server: not starting " + p.String())
	}
	return d
}

// TestHostStartsServerOnInstanceAddressWithSecretOffArgv reproduces
// defects 5 and 6 of issue 23 on the host's side: the server half used to
// listen on 0.0.0.0 and Redis had no password. Now it listens on the
// instance's own address, gets a fresh password on its stdin (never in
// the argv run in the instance), and no error shows the password.
func TestHostStartsServerOnInstanceAddressWithSecretOffArgv(t *testing.T) {
	for _, def := range []workload.Def{RedisDef, HTTP} {
		t.Run(def.Name, func(t *testing.T) {
			var got workload.Params
			reg, err := workload.NewRegistry(stubServer(&got))
			if err != nil {
				t.Fatal(err)
			}
			sp := &spyPlatform{Platform: &fake.Platform{Label: "spy", Workloads: reg}, addr: "10.77.0.9"}
			p, err := def.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			env := workload.HostEnv{Platform: sp, Base: platform.Spec{CPUGroup: true}, Instances: 1, NewName: func() string { n++; return "i" + strconv.Itoa(n) }}
			_, err = def.Host(t.Context(), p, env)
			if err == nil || !strings.Contains(err.Error(), "stub server") {
				t.Fatalf("hostRun: %v, want the stub's failure", err)
			}
			if b := got.Str("bind"); b != "10.77.0.9" {
				t.Errorf("the server half listens on %q, want the instance's own address 10.77.0.9", b)
			}
			pw := got.Str("password")
			if !ValidPassword(pw) {
				t.Fatalf("the server half got no valid password: %q", pw)
			}
			if strings.Contains(err.Error(), pw) {
				t.Errorf("the error shows the password: %v", err)
			}
			if len(sp.runs) == 0 {
				t.Fatal("nothing ran in the instance")
			}
			// the base spec's CPUGroup (set by the runner) reaches the
			// instances
			for _, s := range sp.specs {
				if !s.CPUGroup {
					t.Errorf("instance %s created without CPUGroup", s.Name)
				}
			}
			for _, argv := range sp.runs {
				if a := strings.Join(argv, " "); strings.Contains(a, pw) || strings.Contains(a, "0.0.0.0") {
					t.Errorf("argv %q holds the password or listens everywhere", a)
				}
			}
		})
	}
}

// TestServerRefusesInjection: the server half's parameters that reach
// configuration files (bind; the scratch directory) are refused unless
// plain: no nginx, Apache or Redis directive can be smuggled in.
func TestServerRefusesInjection(t *testing.T) {
	for _, bind := range []string{"0.0.0.0", "::", "127.0.0.1;", "127.0.0.1 8080", "127.0.0.1;\n  include /etc/shadow", `127.0.0.1"`, "'127.0.0.1'", "localhost"} {
		if _, err := Server.Resolve(map[string]string{"kind": Nginx, "bind": bind}); err == nil {
			t.Errorf("bind=%q accepted", bind)
		}
	}
	if _, err := Server.Resolve(map[string]string{"kind": Redis, "bind": "127.0.0.1"}); err == nil {
		t.Error("redis without a password accepted")
	}
	if _, err := Server.Resolve(map[string]string{"kind": Redis, "password": "sbtest sbtest\nrequirepass x"}); err == nil || strings.Contains(err.Error(), "sbtest") {
		t.Errorf("a malformed password: %v, want refused without its value", err)
	}
	for _, dir := range []string{"/tmp/a b", "/tmp/a;b", "/tmp/a\nb", "/tmp/a\"b", "rel/dir", "/tmp/../etc"} {
		c := config{kind: Nginx, dir: dir, bind: "127.0.0.1", port: 80}
		if err := c.check(); err == nil {
			t.Errorf("dir %q accepted", dir)
		}
	}
	if _, err := ApacheArgv(t.TempDir(), "0.0.0.0", 80); err == nil {
		t.Error("ApacheArgv listens on every interface")
	}
	if _, err := ApacheArgv(t.TempDir(), "127.0.0.1\nListen 22", 80); err == nil {
		t.Error("ApacheArgv took an injected Listen")
	}
}

// TestRedisNeedsPassword starts Redis as the server half does: a client
// without the password is refused, one with it cannot run CONFIG SET
// (redis-benchmark's argv shows the password), and the configuration
// holding it is readable by its owner only.
func TestRedisNeedsPassword(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	need(t, "redis-server", "redis-cli")
	var noAuth, withAuth, configSet string
	var confMode os.FileMode
	_, err := serveHere(t, map[string]string{"kind": Redis}, func(port int) {
		noAuth = runTool(t, []string{"redis-cli", "-p", strconv.Itoa(port), "config", "get", "dir"})
		withAuth = runTool(t, []string{"redis-cli", "-p", strconv.Itoa(port), "-a", testPassword, "--no-auth-warning", "ping"})
		configSet = runTool(t, []string{"redis-cli", "-p", strconv.Itoa(port), "-a", testPassword, "--no-auth-warning", "config", "set", "dir", "/"})
		dir, _ := serviceDir(Redis)
		if st, err := os.Stat(filepath.Join(dir, "redis.conf")); err == nil {
			confMode = st.Mode().Perm()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(noAuth, "NOAUTH") {
		t.Errorf("without the password Redis answered %q, want NOAUTH", noAuth)
	}
	if strings.TrimSpace(withAuth) != "PONG" {
		t.Errorf("with the password Redis answered %q", withAuth)
	}
	if !strings.Contains(configSet, "NOPERM") {
		t.Errorf("CONFIG SET dir with the password answered %q, want NOPERM (no file written as root where one likes)", configSet)
	}
	if confMode != 0o600 {
		t.Errorf("redis.conf mode %o, want 0600", confMode)
	}
}

// TestMariaDBRefusesOldCredentials starts MariaDB as the server half
// does: the fixed sbtest/sbtest of before is refused, the repetition's
// password is accepted (as sysbench reads it, on its stdin).
func TestMariaDBRefusesOldCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	need(t, "mariadbd", "mariadb-install-db", "mariadb")
	var old, now string
	_, err := serveHere(t, map[string]string{"kind": MariaDB}, func(port int) {
		q := func(pw string) string {
			return runTool(t, []string{"mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", strconv.Itoa(port), "-u", dbUser, "-p" + pw, "-e", "select 'in'", dbName})
		}
		old, now = q("sbtest"), q(testPassword)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(old, "Access denied") {
		t.Errorf("sbtest/sbtest: %q, want access denied", old)
	}
	if !strings.Contains(now, "in") || strings.Contains(now, "denied") {
		t.Errorf("the repetition's password: %q", now)
	}
}
