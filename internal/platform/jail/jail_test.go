package jail

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
)

// recorder is a Runner that records every command instead of running it,
// and fails the ones fail names (by their first two words).
type recorder struct {
	cmds [][]string
	envs [][]string
	fail map[string]error
	out  map[string]string // stdout per "argv[0] argv[1]"
	errs map[string]string // stderr per "argv[0] argv[1]"
}

func (r *recorder) key(argv []string) string {
	if len(argv) > 1 {
		return argv[0] + " " + argv[1]
	}
	return argv[0]
}

func (r *recorder) Run(ctx context.Context, argv, env []string, stdio platform.ExecIO) error {
	r.cmds = append(r.cmds, argv)
	r.envs = append(r.envs, env)
	if s, ok := r.out[r.key(argv)]; ok && stdio.Stdout != nil {
		io.WriteString(stdio.Stdout, s)
	}
	if s, ok := r.errs[r.key(argv)]; ok && stdio.Stderr != nil {
		io.WriteString(stdio.Stderr, s)
	}
	return r.fail[r.key(argv)]
}

func (r *recorder) Start(ctx context.Context, argv, env []string, stdout io.Writer) (func() (int, error), error) {
	r.cmds = append(r.cmds, argv)
	r.envs = append(r.envs, env)
	return func() (int, error) { return 3, nil }, nil
}

func (r *recorder) words() []string {
	var out []string
	for _, c := range r.cmds {
		out = append(out, strings.Join(c, " "))
	}
	return out
}

func newTest(t *testing.T, opts string, r *recorder) *Platform {
	t.Helper()
	o, err := platform.ParseOptions(opts, Factory.Extra...)
	if err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(t.TempDir(), "isobench")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := newPlatform(o, platform.Env{AgentBinary: agent, StateDir: t.TempDir()}, r, "freebsd")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCreateArgsPerNetwork(t *testing.T) {
	l := Layout{Root: "/var/db/isobench/jail-1/root"}
	common := "jail -c name=isob-a path=/var/db/isobench/jail-1/root host.hostname=isob-a persist mount.devfs devfs_ruleset=4 enforce_statfs=2 children.max=0 allow.raw_sockets=0"
	rescue := "mount=/rescue /var/db/isobench/jail-1/root/rescue nullfs ro 0 0"
	for _, tc := range []struct {
		network string
		scratch string
		want    string
	}{
		{platform.NetHost, "", common + "|" + rescue + "|ip4=inherit|ip6=inherit"},
		{platform.NetNone, "", common + "|" + rescue + "|ip4=disable|ip6=disable"},
		{platform.NetBridge, "/var/db/isobench/jail-1/scratch", common + "|" + rescue + "|mount=/var/db/isobench/jail-1/scratch /var/db/isobench/jail-1/root/isobench-scratch nullfs rw 0 0|interface=lo1|ip4.addr=10.201.0.2|ip6=disable"},
	} {
		l.Scratch = tc.scratch
		got := CreateArgs("isob-a", l, tc.network, "lo1", netip.MustParseAddr("10.201.0.2"))
		// mount= parameters carry spaces: compare word lists
		want := append(strings.Fields(strings.Split(tc.want, "|")[0]), strings.Split(tc.want, "|")[1:]...)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("network %s:\n got %q\nwant %q", tc.network, got, want)
		}
	}
}

func TestLimitAndExecArgs(t *testing.T) {
	got := LimitArgs("isob-a", 1.5, 512<<20)
	want := [][]string{{"rctl", "-a", "jail:isob-a:pcpu:deny=150"}, {"rctl", "-a", "jail:isob-a:memoryuse:deny=536870912"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LimitArgs = %q, want %q", got, want)
	}
	if got := LimitArgs("isob-a", 0, 0); len(got) != 0 {
		t.Errorf("no limits gave %q", got)
	}
	if got := ExecArgs("isob-a", []string{"{agent}", "agent", "hello"}); !reflect.DeepEqual(got, []string{"jexec", "isob-a", "/isobench", "agent", "hello"}) {
		t.Errorf("ExecArgs = %q", got)
	}
	if got := ExecArgs("isob-a", []string{"sh", "-c", "{agent}"}); got[2] != "sh" || got[4] != "{agent}" {
		t.Errorf("only argv[0] is the agent placeholder: %q", got)
	}
	if n := JailName("run1.docker/0"); n != "isob-run1_docker_0" {
		t.Errorf("JailName = %q", n)
	}
}

func TestParseJLS(t *testing.T) {
	// jls -n -j NAME on FreeBSD 13 prints one line of parameters.
	out := `devfs_ruleset=4 nodying enforce_statfs=2 host=new ip4=new ip4.addr=10.201.0.2 ip4.saddrsel ip6=disable jid=7 name=isob-a osreldate=1301000 osrelease=13.1-RELEASE parent=0 path=/var/db/isobench/jail-1/root persist securelevel=-1 host.hostname=isob-a host.domainname="" exec.start="/bin/sh /etc/rc" allow.nomount` + "\n"
	kv, err := ParseJLS(out)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"jid": "7", "name": "isob-a", "ip4.addr": "10.201.0.2", "persist": "true", "securelevel": "-1", "host.domainname": "", "exec.start": "/bin/sh /etc/rc", "enforce_statfs": "2"} {
		if kv[k] != v {
			t.Errorf("%s = %q, want %q", k, kv[k], v)
		}
	}
	for _, bad := range []string{"", "persist nodying", `name="isob-a jid=1`} {
		if _, err := ParseJLS(bad); err == nil {
			t.Errorf("ParseJLS(%q) accepted", bad)
		}
	}
}

func TestLifecycleCommands(t *testing.T) {
	r := &recorder{out: map[string]string{"jls -n": "jid=4 name=isob-i1 securelevel=-1 enforce_statfs=2"}}
	p := newTest(t, "jail:cpus=1,memory=256m,network=bridge,storage=volume", r)
	inst, err := p.Create(context.Background(), platform.Spec{Name: "i1", Main: []string{"{agent}", "agent", "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := inst.Address(context.Background()); a != "10.201.0.2" {
		t.Errorf("first bridge address %q, want 10.201.0.2", a)
	}
	if code, err := inst.Wait(context.Background()); code != 3 || err != nil {
		t.Errorf("Wait = %d, %v", code, err)
	}
	if err := inst.Exec(context.Background(), []string{"sh", "-c", "true"}, platform.ExecIO{}); err != nil {
		t.Fatal(err)
	}
	f := inst.Facts(context.Background())
	if f["jid"] != "4" || f["cpus"] != "1" || f["memory"] != "268435456" {
		t.Errorf("facts %v", f)
	}
	dir := inst.(*instance).dir
	if _, err := os.Stat(filepath.Join(dir, "root", "isobench")); err != nil {
		t.Errorf("agent not copied into the root: %v", err)
	}
	if err := inst.CopyIn(context.Background(), p.env.AgentBinary, "/opt/x", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := inst.CopyIn(context.Background(), p.env.AgentBinary, "/../etc/x", 0o700); err == nil {
		t.Error("copy-in escaping the root accepted")
	}
	if err := inst.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := inst.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("jail directory left behind: %v", err)
	}
	w := r.words()
	wantPrefixes := []string{"jail -c name=isob-i1", "rctl -a jail:isob-i1:pcpu:deny=100", "rctl -a jail:isob-i1:memoryuse:deny=268435456", "jexec isob-i1 /isobench agent hello", "jexec isob-i1 sh -c true", "jls -n -j isob-i1", "jail -r isob-i1", "rctl -r jail:isob-i1"}
	if len(w) != len(wantPrefixes) {
		t.Fatalf("commands:\n%s", strings.Join(w, "\n"))
	}
	for i, pfx := range wantPrefixes {
		if !strings.HasPrefix(w[i], pfx) {
			t.Errorf("command %d = %q, want %q...", i, w[i], pfx)
		}
	}
	for _, i := range []int{3, 4} { // main and exec run with the guest's environment
		if !reflect.DeepEqual(r.envs[i], guestEnv) {
			t.Errorf("%q: env %q, want %q", w[i], r.envs[i], guestEnv)
		}
	}
	// the address is free again
	inst2, err := p.Create(context.Background(), platform.Spec{Name: "i2"})
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := inst2.Address(context.Background()); a != "10.201.0.2" {
		t.Errorf("released address not reused: %q", a)
	}
	inst2.Close(context.Background())
}

func TestFailedCreateLeavesNothing(t *testing.T) {
	r := &recorder{fail: map[string]error{"rctl -a": errors.New("rctl: racct disabled")}}
	p := newTest(t, "jail:memory=64m,network=bridge", r)
	_, err := p.Create(context.Background(), platform.Spec{Name: "x"})
	if err == nil || !strings.Contains(err.Error(), "racct disabled") {
		t.Fatalf("Create = %v, want the rctl error", err)
	}
	w := r.words()
	if last := w[len(w)-1]; !strings.HasPrefix(last, "jail -r isob-x") && !strings.HasPrefix(last, "rctl -r") {
		t.Errorf("a failed create must remove the jail: %q", w)
	}
	ents, _ := os.ReadDir(p.env.StateDir)
	if len(ents) != 0 {
		t.Errorf("state dir not empty after a failed create: %v", ents)
	}
	if len(p.used) != 0 {
		t.Errorf("address still leased: %v", p.used)
	}
}

func TestOptionsAndAvailability(t *testing.T) {
	for _, bad := range []string{"jail:network=nat", "jail:subnet=10.0.0.0/31", "jail:subnet=fd00::/64", "jail:iface=a b"} {
		o, err := platform.ParseOptions(bad, Factory.Extra...)
		if err != nil {
			continue
		}
		if _, err := newPlatform(o, platform.Env{}, &recorder{}, "freebsd"); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	o, _ := platform.ParseOptions("jail", Factory.Extra...)
	p, err := newPlatform(o, platform.Env{}, &recorder{}, "linux")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Available(context.Background()); err == nil || !strings.Contains(err.Error(), "host=ssh://") {
		t.Errorf("on Linux: %v, want a pointer to host=ssh://", err)
	}
	o, _ = platform.ParseOptions("jail:cpus=1", Factory.Extra...)
	p, _ = newPlatform(o, platform.Env{}, &recorder{out: map[string]string{"sysctl -n": "0\n"}}, "freebsd")
	if err := p.Available(context.Background()); err == nil || !strings.Contains(err.Error(), "kern.racct.enable=1") {
		t.Errorf("limits without racct: %v", err)
	}
}
