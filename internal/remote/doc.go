// Package remote runs platforms on other machines over SSH. The host copies
// its own static binary to the remote machine (cached there by digest),
// starts "isobench platformd SPEC" in an SSH session, and talks to it over
// the session's stdin and stdout with package platformd's protocol: a
// yamux session whose streams each carry one call (create, exec, copy-in,
// address...) as frames. The host side is a platform.Platform, so the
// runner drives a remote docker exactly as a local one; every address an
// instance reports is meaningful on the remote machine, and the host
// reaches it through a stream the remote side dials (Client.DialContext,
// and Published ports forwarded to the host's loopback).
//
// What that means for workloads:
//   - Agent workloads (cpu, memory, disk...) run on the remote machine
//     exactly as locally; only the barrier's "go" crosses the connection,
//     and their metrics are measured inside the instances.
//   - Host-driven timings (startup's create/start/startup_ms) are taken on
//     this host, so on a remote platform they include the connection's
//     latency (a round trip per call: well under a millisecond on a LAN,
//     about 1 ms on the loaded test namespaces). Phases are stamped when
//     their frame arrives here.
//   - Network workloads run with client=instance,server=instance: clients
//     and server are instances on the remote machine, and only the stop
//     message goes through a forwarded port. A client or server in isobench
//     on the host (client=host, server=host) is refused by the run: it
//     would be this machine, measuring the SSH connection.
//   - lifecycle (footprint, density) reads the engine's processes in /proc
//     here, so remote instances do not offer platform.Footprinter.
//
// Nothing is trusted on first use: host keys are checked against
// known_hosts, and an unknown host is an error that says how to add it.
// When the connection ends (the host died, the network went away, this
// process was killed), platformd closes every instance it made and exits.
package remote
