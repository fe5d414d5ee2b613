package lxd

import (
	"testing"
)

func TestPayloadCgroup(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/sys/fs/cgroup/memory/lxc.payload.isob-x1", "/sys/fs/cgroup/memory/lxc.payload.isob-x1"},
		{"/sys/fs/cgroup/memory/lxc.payload.isob-x1/init.scope", "/sys/fs/cgroup/memory/lxc.payload.isob-x1"},
		{"/sys/fs/cgroup/lxc.payload.isob-x1/system.slice/cron.service", "/sys/fs/cgroup/lxc.payload.isob-x1"},
		// another container's name that begins the same is not this one
		{"/sys/fs/cgroup/memory/lxc.payload.isob-x12/init.scope", "/sys/fs/cgroup/memory/lxc.payload.isob-x12/init.scope"},
	} {
		if got := payloadCgroup(c.path, "isob-x1"); got != c.want {
			t.Errorf("payloadCgroup(%q) = %q, want %q", c.path, got, c.want)
		}
	}
}

func TestIsMonitor(t *testing.T) {
	for _, c := range []struct {
		cmdline string
		want    bool
	}{
		{"[lxc monitor] /var/lib/lxd/containers isob-x1\x00", true},
		{"[lxc\x00monitor]\x00/var/snap/lxd/common/lxd/containers\x00isob-x1\x00", true},
		{"[lxc monitor] /var/lib/lxd/containers isob-x12\x00", false},
		{"lxd\x00--group\x00lxd\x00", false},
		{"/usr/local/bin/isobench\x00agent\x00idle\x00isob-x1\x00", false},
	} {
		if got := isMonitor([]byte(c.cmdline), "isob-x1"); got != c.want {
			t.Errorf("isMonitor(%q) = %v, want %v", c.cmdline, got, c.want)
		}
	}
}
