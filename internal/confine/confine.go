// Package confine is Docker's default confinement of a workload process,
// as one definition every platform applies or compares with: its
// capability set, its seccomp profile (moby's default, compiled here to a
// classic BPF filter for the engines that cannot take an OCI profile), the
// devices it may use, and a probe that measures all of these, and the
// memory and swap limits, from inside an instance.
//
// Engines that take an OCI config (runc, crun, gVisor, Docker, Podman)
// get Docker's profile as OCI JSON. The others (LXC, LXD, systemd-nspawn)
// run each workload under "isobench agent confine", which, inside the
// instance and just before it execs the workload, installs the same
// profile compiled by Compile and drops the capability bounding set to
// DockerCaps: the filter and the capabilities a process of a Docker
// container has, whatever the engine gave its init.
package confine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DockerCaps is Docker's default capability set (moby's
// oci/caps.DefaultCapabilities); runc and crun start from it too.
var DockerCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// capNumbers are the capabilities' numbers (linux/capability.h), up to
// CAP_CHECKPOINT_RESTORE.
var capNumbers = map[string]int{
	"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
	"CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
	"CAP_LINUX_IMMUTABLE": 9, "CAP_NET_BIND_SERVICE": 10, "CAP_NET_BROADCAST": 11,
	"CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14, "CAP_IPC_OWNER": 15,
	"CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_CHROOT": 18, "CAP_SYS_PTRACE": 19,
	"CAP_SYS_PACCT": 20, "CAP_SYS_ADMIN": 21, "CAP_SYS_BOOT": 22, "CAP_SYS_NICE": 23,
	"CAP_SYS_RESOURCE": 24, "CAP_SYS_TIME": 25, "CAP_SYS_TTY_CONFIG": 26, "CAP_MKNOD": 27,
	"CAP_LEASE": 28, "CAP_AUDIT_WRITE": 29, "CAP_AUDIT_CONTROL": 30, "CAP_SETFCAP": 31,
	"CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33, "CAP_SYSLOG": 34, "CAP_WAKE_ALARM": 35,
	"CAP_BLOCK_SUSPEND": 36, "CAP_AUDIT_READ": 37, "CAP_PERFMON": 38, "CAP_BPF": 39,
	"CAP_CHECKPOINT_RESTORE": 40,
}

// CapMask is the bit mask of the named capabilities ("CAP_CHOWN" or
// "chown").
func CapMask(names []string) (uint64, error) {
	var m uint64
	for _, n := range names {
		k := strings.ToUpper(n)
		if !strings.HasPrefix(k, "CAP_") {
			k = "CAP_" + k
		}
		bit, ok := capNumbers[k]
		if !ok {
			return 0, fmt.Errorf("unknown capability %q", n)
		}
		m |= 1 << bit
	}
	return m, nil
}

// DockerCapBits is DockerCaps as a bit mask (a unit test checks that they
// agree).
const DockerCapBits = 0xa80425fb

// DockerCapMask is DockerCaps as /proc/PID/status shows a capability set
// (CapEff, CapBnd): 00000000a80425fb.
func DockerCapMask() string { return HexMask(DockerCapBits) }

// HexMask formats a capability mask as /proc/PID/status does.
func HexMask(m uint64) string { return fmt.Sprintf("%016x", m) }

// CapNames lists the capabilities in mask, lower case without "cap_" (as
// lxc.cap.keep and nspawn's --capability take them), in number order.
func CapNames(mask uint64) []string {
	var out []string
	for n, bit := range capNumbers {
		if mask&(1<<bit) != 0 {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return capNumbers[a] - capNumbers[b] })
	for i, n := range out {
		out[i] = strings.ToLower(strings.TrimPrefix(n, "CAP_"))
	}
	return out
}

// DeviceRule is one cgroup v1 devices rule ("c 1:3 rwm"; "*" for any
// major or minor).
type DeviceRule struct {
	Type         byte   // 'c', 'b' or 'a'
	Major, Minor int64  // -1 is "*"
	Access       string // some of "rwm"
}

func (r DeviceRule) String() string {
	num := func(n int64) string {
		if n < 0 {
			return "*"
		}
		return strconv.FormatInt(n, 10)
	}
	if r.Type == 'a' {
		return "a"
	}
	return fmt.Sprintf("%c %s:%s %s", r.Type, num(r.Major), num(r.Minor), r.Access)
}

// DockerDevices are the devices a Docker container may use, after a
// deny-all: mknod of any device node (but not its use), and read, write
// and mknod of null, zero, full, random, urandom, tty, console, ptmx, the
// pseudo-terminals and tun, as runc gives Docker's containers (what
// devices.list says inside one, runc 1.1).
var DockerDevices = []DeviceRule{
	{'c', -1, -1, "m"}, {'b', -1, -1, "m"},
	{'c', 1, 3, "rwm"}, {'c', 1, 5, "rwm"}, {'c', 1, 7, "rwm"}, {'c', 1, 8, "rwm"}, {'c', 1, 9, "rwm"},
	{'c', 5, 0, "rwm"}, {'c', 5, 1, "rwm"}, {'c', 5, 2, "rwm"}, {'c', 10, 200, "rwm"}, {'c', 136, -1, "rwm"},
}

// DockerDevicesList is DockerDevices as a sorted, comma-separated list
// (the devices fact; what devices.list says inside a Docker container).
func DockerDevicesList() string { return DevicesList(DockerDevices) }

// DevicesList renders rules as a sorted, comma-separated list.
func DevicesList(rules []DeviceRule) string {
	var s []string
	for _, r := range rules {
		s = append(s, r.String())
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}

// NormalizeDevices turns a devices.list (one rule a line) into the
// sorted, comma-separated form of DevicesList.
func NormalizeDevices(list string) string {
	var rules []string
	for _, l := range strings.Split(list, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			rules = append(rules, l)
		}
	}
	slices.Sort(rules)
	return strings.Join(rules, ",")
}

// DockerSeccompProbe is what Probe's seccomp_probe says under Docker's
// default filter, for a process without CAP_SYS_ADMIN.
const DockerSeccompProbe = "clone3=ENOSYS keyctl=EPERM personality=EPERM"
