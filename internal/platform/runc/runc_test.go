package runc

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/confine"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local/localtest"
)

func conformanceFor(t *testing.T, f platform.Factory) {
	localtest.Conformance(t, f, conformance.Opts{})
}

// TestConformanceRunc runs the shared platform suite against runc.
func TestConformanceRunc(t *testing.T) { conformanceFor(t, RuncFactory) }

// TestConformanceCrun runs the shared platform suite against crun.
func TestConformanceCrun(t *testing.T) { conformanceFor(t, CrunFactory) }

// TestStartup times create → agent hello → exit, for the report.
func TestStartup(t *testing.T) {
	agent := conformance.BuildAgent(t)
	for _, f := range []platform.Factory{RuncFactory, CrunFactory} {
		t.Run(f.Name, func(t *testing.T) { localtest.Startup(t, f, agent) })
	}
}

func TestOCIConfig(t *testing.T) {
	s := platform.Spec{CPUs: 1.5, Memory: 256 << 20, Main: []string{platform.AgentPlaceholder, "agent", "hello"}}
	c, err := ociConfig(s, bundleConfig{id: "isob-rabc", rootfs: "/x/rootfs", volume: "/x/volume", netnsPath: "/run/netns/isob-rabc", seccomp: true})
	if err != nil {
		t.Fatal(err)
	}
	if cpu := c.Linux.Resources.CPU; cpu == nil || cpu.Quota == nil || *cpu.Quota != 150000 || cpu.Period == nil || *cpu.Period != 100000 {
		t.Errorf("cpu %+v", c.Linux.Resources.CPU)
	}
	if mem := c.Linux.Resources.Memory; mem == nil || mem.Limit == nil || *mem.Limit != 256<<20 {
		t.Errorf("memory %+v", c.Linux.Resources.Memory)
	} else if cgroup.SwapAccounting() && (mem.Swap == nil || *mem.Swap != *mem.Limit) {
		t.Errorf("memory+swap %v, want the memory limit (no swap beyond it, as Docker)", mem.Swap)
	} else if !cgroup.SwapAccounting() && cgroup.Version() == 1 && (mem.Swappiness == nil || *mem.Swappiness != 0) {
		t.Errorf("no swap accounting, and swappiness %v, want 0", mem.Swappiness)
	}
	if d := c.Linux.Resources.Devices; len(d) != 1+len(confine.DockerDevices) || d[0].Allow || d[0].Access != "rwm" ||
		!d[1].Allow || d[1].Type != "c" || d[1].Major != nil || d[1].Access != "m" {
		t.Errorf("devices %+v, want deny all, then Docker's", d)
	}
	if c.Process.NoNewPrivileges {
		t.Error("no_new_privs set; Docker sets it only when asked")
	}
	if c.Linux.CgroupsPath != "/isobench/isob-rabc" || c.Root.Path != "/x/rootfs" || c.Process.Terminal {
		t.Errorf("config %+v", c)
	}
	if strings.Join(c.Process.Args, " ") != "/usr/local/bin/isobench agent hello" {
		t.Errorf("args %q", c.Process.Args)
	}
	if !slices.Contains(c.Process.Env, "ISOBENCH_SCRATCH=/isobench-scratch") {
		t.Errorf("env %q", c.Process.Env)
	}
	var netns string
	for _, n := range c.Linux.Namespaces {
		if n.Type == "network" {
			netns = n.Path
		}
	}
	if netns != "/run/netns/isob-rabc" {
		t.Errorf("namespaces %+v", c.Linux.Namespaces)
	}
	last := c.Mounts[len(c.Mounts)-1]
	if last.Destination != guestenv.ScratchDir || last.Source != "/x/volume" || last.Type != "bind" {
		t.Errorf("volume mount %+v", last)
	}
	b, err := json.Marshal(c)
	if err != nil || !strings.Contains(string(b), `"ociVersion":"1.0.2"`) {
		t.Errorf("json %s, %v", b, err)
	}
	// Docker's default profile: an allowlist (EPERM by default) that
	// allows read but not, without CAP_SYS_ADMIN, mount
	if sc := c.Linux.Seccomp; sc == nil || sc.DefaultAction != specs.ActErrno || !allowed(sc, "read") || allowed(sc, "mount") {
		t.Errorf("seccomp %+v", c.Linux.Seccomp)
	}
	if caps := c.Process.Capabilities; !slices.Equal(caps.Bounding, defaultCaps) || len(caps.Inheritable) != 0 || slices.Contains(caps.Effective, "CAP_SYS_ADMIN") {
		t.Errorf("capabilities %+v", caps)
	}

	c, err = ociConfig(platform.Spec{}, bundleConfig{id: "i", hostNet: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Linux.Seccomp != nil {
		t.Errorf("seccomp=unconfined bundle has a profile")
	}
	if c.Linux.Resources.CPU != nil || c.Linux.Resources.Memory != nil {
		t.Errorf("unlimited spec has resources %+v", c.Linux.Resources)
	}
	for _, n := range c.Linux.Namespaces {
		if n.Type == "network" {
			t.Errorf("host network has a network namespace")
		}
	}
	if strings.Join(c.Process.Args, " ") != "/usr/local/bin/isobench agent idle" {
		t.Errorf("idle args %q", c.Process.Args)
	}
}

// allowed reports whether the profile allows syscall name unconditionally.
func allowed(sc *specs.LinuxSeccomp, name string) bool {
	for _, r := range sc.Syscalls {
		if r.Action == specs.ActAllow && len(r.Args) == 0 && slices.Contains(r.Names, name) {
			return true
		}
	}
	return false
}

func TestNewRejects(t *testing.T) {
	env := platform.Env{AgentBinary: "/a", StateDir: filepath.Join(t.TempDir())}
	if _, err := New(t.Context(), "youki", platform.Options{}, env); err == nil {
		t.Error("unknown runtime accepted")
	}
	o := platform.Options{Base: platform.Spec{Network: "weird"}}
	if _, err := New(t.Context(), "runc", o, env); err == nil {
		t.Error("unknown network accepted")
	}
	o, _ = platform.ParseOptions("runc:seccomp=off", RuncFactory.Extra...)
	if _, err := RuncFactory.New(t.Context(), o, env); err == nil {
		t.Error("seccomp=off accepted")
	}
	reg := platform.NewRegistry(RuncFactory, CrunFactory)
	if _, o, err := reg.Parse("crun:cpus=1,network=bridge"); err != nil || o.Base.Network != "bridge" {
		t.Errorf("parse crun options: %+v, %v", o, err)
	}
}
