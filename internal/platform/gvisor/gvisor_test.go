package gvisor

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local"
	"github.com/isobench/isobench/internal/platform/local/localtest"
)

func newPlatform(t *testing.T, opts, agent, state string) *Platform {
	o, err := platform.ParseOptions(opts, Factory.Extra...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(t.Context(), o, platform.Env{AgentBinary: agent, StateDir: state, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// skipUnavailable skips (or fails, when required) before building the agent.
func skipUnavailable(t *testing.T) {
	if err := newPlatform(t, "gvisor", "-", t.TempDir()).Available(t.Context()); err != nil {
		conformance.SkipUnlessRequired(t, "gvisor", err)
	}
}

// TestConformance runs the shared platform suite against runsc.
//
// network=none is offered but the suite's check of it lists
// /sys/class/net, which gVisor's sysfs does not have; TestNetworkNone
// checks that mode through /proc/net/dev instead.
func TestConformance(t *testing.T) {
	skipUnavailable(t)
	localtest.Conformance(t, Factory, conformance.Opts{NoNetworks: []string{platform.NetNone}})
}

// interfaces lists the interface names in /proc/net/dev inside inst.
func interfaces(t *testing.T, inst platform.Instance) []string {
	var out strings.Builder
	if err := inst.Exec(t.Context(), []string{"cat", "/proc/net/dev"}, platform.ExecIO{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(out.String(), "\n") {
		if name, _, ok := strings.Cut(l, ":"); ok {
			names = append(names, strings.TrimSpace(name))
		}
	}
	slices.Sort(names)
	return names
}

// TestNetworkNone checks network=none, bridge and the default (bridge, so
// network workloads run) through /proc/net/dev: only lo, no address with
// none; lo and eth0 on the bridge.
func TestNetworkNone(t *testing.T) {
	skipUnavailable(t)
	agent := conformance.BuildAgent(t)
	state := local.TestStateDir()
	p := newPlatform(t, "gvisor", agent, state)
	before, err := localtest.Leftovers(t.Context(), Factory, state)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{platform.NetDefault, platform.NetNone, platform.NetBridge} {
		inst, err := p.Create(t.Context(), platform.Spec{Image: "minimal", Network: mode})
		if err != nil {
			t.Fatal(err)
		}
		addr, err := inst.Address(t.Context())
		got := interfaces(t, inst)
		want := []string{"lo"}
		if mode == platform.NetBridge || mode == platform.NetDefault {
			want = []string{"eth0", "lo"}
			if err != nil || addr == "" {
				t.Errorf("bridge Address = %q, %v", addr, err)
			}
		} else if err != nil || addr != "" {
			t.Errorf("network=%q Address = %q, %v; want \"\", nil", mode, addr, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("network=%q: interfaces %q, want %q", mode, got, want)
		}
		if f := inst.Facts(t.Context()); f["network"] == "" || f["gvisor_network"] == "" {
			t.Errorf("facts %v", f)
		}
		if err := inst.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	after, err := localtest.Leftovers(t.Context(), Factory, state)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Errorf("leftovers changed: before %q after %q", before, after)
	}
}

// TestStartup times create → agent hello → exit, for the report.
func TestStartup(t *testing.T) {
	skipUnavailable(t)
	localtest.Startup(t, Factory, conformance.BuildAgent(t))
}

func TestOptions(t *testing.T) {
	env := platform.Env{AgentBinary: "/a", StateDir: t.TempDir()}
	reg := platform.NewRegistry(Factory)
	for _, bad := range []string{"gvisor:platform=xen", "gvisor:network=weird"} {
		f, o, err := reg.Parse(bad)
		if err == nil {
			_, err = f.New(t.Context(), o, env)
		}
		if err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	f, o, err := reg.Parse("gvisor:platform=ptrace,network=bridge,cpus=1")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := f.New(t.Context(), o, env)
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Platform)
	argv := strings.Join(p.command("sandbox", "list"), " ")
	if !strings.Contains(argv, "--platform=ptrace") || !strings.Contains(argv, "--network=sandbox") {
		t.Errorf("runsc argv %q", argv)
	}
	var v map[string]map[string]map[string]string
	if err := json.Unmarshal([]byte(DockerRuntimeJSON), &v); err != nil || v["runtimes"]["runsc"]["path"] == "" {
		t.Errorf("DockerRuntimeJSON %s: %v", DockerRuntimeJSON, err)
	}
}
