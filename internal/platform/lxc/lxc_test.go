package lxc

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/conformance"
	"github.com/isobench/isobench/internal/platform/local/localtest"
)

// TestConformance runs the shared platform suite against LXC.
func TestConformance(t *testing.T) {
	localtest.Conformance(t, Factory, conformance.Opts{})
}

// TestStartup times create → agent hello → exit, for the report.
func TestStartup(t *testing.T) { localtest.Startup(t, Factory, conformance.BuildAgent(t)) }

func TestNewRejects(t *testing.T) { localtest.NewRejects(t, Factory) }

func TestConfig(t *testing.T) {
	s := platform.Spec{CPUs: 0.5, Memory: 128 << 20, Main: []string{platform.AgentPlaceholder, "agent", "hello"}}
	c := config(s, containerConfig{rootfs: "/st/instances/x/rootfs", volume: "/st/instances/x/volume", network: platform.NetBridge, swap: true,
		addr: netip.MustParsePrefix("10.199.0.5/24"), gateway: netip.MustParseAddr("10.199.0.1"), bridge: "isobr0", veth: "isvl12345678"})
	for _, want := range []string{
		"lxc.rootfs.path = dir:/st/instances/x/rootfs\n",
		"lxc.net.0.type = veth\n", "lxc.net.0.link = isobr0\n", "lxc.net.0.veth.pair = isvl12345678\n",
		"lxc.net.0.ipv4.address = 10.199.0.5/24\n", "lxc.net.0.ipv4.gateway = 10.199.0.1\n",
		"lxc.cgroup.cpu.cfs_quota_us = 50000\n", "lxc.cgroup.cpu.cfs_period_us = 100000\n",
		"lxc.cgroup.memory.limit_in_bytes = 134217728\n", "lxc.cgroup.memory.memsw.limit_in_bytes = 134217728\n",
		"lxc.apparmor.profile = unconfined\n",
		"lxc.environment = ISOBENCH_SCRATCH=/isobench-scratch\n",
		"lxc.mount.entry = /st/instances/x/volume isobench-scratch none bind,create=dir 0 0\n",
		"lxc.init.cmd = /usr/local/bin/isobench agent confine -- /usr/local/bin/isobench agent hello\n",
		"lxc.cap.drop = mac_admin mac_override sys_time sys_module sys_rawio\n",
		"lxc.cgroup.devices.deny = a\n", "lxc.cgroup.devices.allow = c 1:3 rwm\n", "lxc.cgroup.devices.allow = c *:* m\n",
		"lxc.cgroup.devices.allow = c 136:* rwm\n",
	} {
		if !strings.Contains(c, want) {
			t.Errorf("config lacks %q:\n%s", want, c)
		}
	}
	// no seccomp policy of LXC's: the workloads' filter is Docker's alone;
	// the memory limit comes before memsw, which may not be below it
	if strings.Contains(c, "lxc.seccomp") || strings.Index(c, "memory.limit_in_bytes") > strings.Index(c, "memsw") {
		t.Errorf("config:\n%s", c)
	}
	if c := config(s, containerConfig{network: platform.NetNone}); !strings.Contains(c, "lxc.cgroup.memory.swappiness = 0\n") || strings.Contains(c, "memsw") {
		t.Errorf("config without swap accounting:\n%s", c)
	}
	c = config(platform.Spec{CPUs: 2, Memory: 1 << 30}, containerConfig{rootfs: "/r", network: platform.NetHost, cgroupV2: true, apparmor: true})
	for _, want := range []string{"lxc.net.0.type = none\n", "lxc.cgroup2.cpu.max = 200000 100000\n", "lxc.cgroup2.memory.max = 1073741824\n",
		"lxc.init.cmd = /usr/local/bin/isobench agent confine -- /usr/local/bin/isobench agent idle\n", "lxc.cgroup2.devices.deny = a\n"} {
		if !strings.Contains(c, want) {
			t.Errorf("v2 host config lacks %q:\n%s", want, c)
		}
	}
	if strings.Contains(c, "apparmor") || strings.Contains(c, "mount.entry") {
		t.Errorf("v2 host config:\n%s", c)
	}
	if c := config(platform.Spec{}, containerConfig{network: platform.NetNone}); !strings.Contains(c, "lxc.net.0.type = empty\n") || strings.Contains(c, "lxc.cgroup.cpu") || strings.Contains(c, "lxc.cgroup.memory") {
		t.Errorf("none config:\n%s", c)
	}
}
