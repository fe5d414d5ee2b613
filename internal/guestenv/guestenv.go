// Package guestenv is what every instance's inside looks like to the code
// running there, whatever the platform: the directory workloads put their
// files in, the environment variable that names it, and the resolv.conf of
// an instance no DNS server can be reached from. The platforms set these up
// on the host side, and the agent, the VM guest's init and the workloads
// rely on them inside, so the package imports nothing of isobench's.
package guestenv

// NoResolver is the /etc/resolv.conf of a container or VM on the
// isobench bridge or without a network. The bridge is private, with no route out
// and no DNS server on it (isobench runs no lxc-net dnsmasq), so the
// host's nameservers, which an image tree copies at build time, cannot be
// reached from it: every lookup of a name or address not in /etc/hosts
// would wait for the resolver's timeout (glibc: 5 s a try, 2 tries), where
// a Docker container on docker0 reaches the host's nameservers through
// NAT and an lxc-net container asks dnsmasq on lxcbr0, both in
// milliseconds. Spark, for one, looks up its own address: the standalone
// cluster's jobs took 10 s longer on LXC than on Docker (runc, crun,
// nspawn and gVisor, on the same bridge, were exposed alike). The
// loopback nameserver, which nothing serves in the container, makes such
// lookups fail at once instead.
const NoResolver = "# isobench: no DNS server is reachable from this instance (the isobench bridge\n" +
	"# has no route out): lookups of names not in /etc/hosts fail at once\n" +
	"nameserver 127.0.0.1\n"

// ScratchDir is where workloads put files inside every instance; with
// storage=volume (platform.StorageVolume) a host directory is mounted there.
const ScratchDir = "/isobench-scratch"

// ScratchEnv names the environment variable through which a platform tells
// the agent where its scratch directory is (for native, a temp dir per
// instance; inside instances, ScratchDir, a volume with storage=volume).
const ScratchEnv = "ISOBENCH_SCRATCH"
