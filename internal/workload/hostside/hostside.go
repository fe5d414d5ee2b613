// Package hostside holds the steps the host-driven workloads (netbench,
// service, tool:iperf2, spark-cluster) share when they run a server in one
// instance and clients elsewhere: the port the server listens on, the
// server instance's address and the check that it is one they may use,
// and starting the server's agent session up to its start signal.
package hostside

import (
	"context"
	"fmt"
	"net"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/platform"
)

// Port is port, or when it is 0 a port the kernel says is free on
// loopback.
func Port(port int) (int, error) {
	if port != 0 {
		return port, nil
	}
	return hostnet.FreePort("127.0.0.1")
}

// CheckAddr refuses anything but loopback and private addresses: the
// network workloads never talk to the outside world. who prefixes the
// error ("netbench").
func CheckAddr(who, addr string) error {
	ip := net.ParseIP(addr)
	if ip == nil {
		return fmt.Errorf("%s: %q is not an IP address", who, addr)
	}
	if !ip.IsLoopback() && !ip.IsPrivate() && !ip.IsLinkLocalUnicast() {
		return fmt.Errorf("%s: refusing to connect to %s: only loopback and the instances' private addresses are used", who, addr)
	}
	return nil
}

// Address asks the instance in the given role ("server") for its address
// and checks it is one the workload may use. needs ends the error of an
// instance without an address ("network workloads need bridge or host").
func Address(ctx context.Context, in platform.Instance, who, role, needs string) (string, error) {
	a, err := in.Address(ctx)
	if err != nil {
		return "", fmt.Errorf("%s: %s instance address: %w", who, role, err)
	}
	if a == "" {
		return "", fmt.Errorf("%s: the %s instance has no address (network=none?); %s", who, role, needs)
	}
	if err := CheckAddr(who, a); err != nil {
		return "", err
	}
	return a, nil
}

// Begin takes a just-started session through its start: it waits until
// the agent is ready, gives the start signal and waits until the workload
// has started. A session that fails at any step is aborted.
func Begin(ctx context.Context, sess *agenthost.Session) error {
	for _, step := range []func() error{
		func() error { return sess.WaitReady(ctx) },
		sess.Release,
		func() error { return sess.WaitStarted(ctx) },
	} {
		if err := step(); err != nil {
			sess.Abort()
			return err
		}
	}
	return nil
}
