package hostnet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ClientNet is a network namespace of its own for a workload's clients,
// on the isobench bridge behind a link shaped to a rate in both
// directions (tc tbf on each end of its veth): the client machines of a
// paper's layout, such as study 002's two clients on 100 Mbit/s Ethernet,
// instead of clients on the host reaching the instances at memory speed.
//
// The namespace lives as long as a holder process (a sleep created in it,
// killed when this process dies), so a run that crashes leaves neither the
// namespace nor its veth behind, only its bridge lease, which isobench
// clean releases as any dead process's.
type ClientNet struct {
	Addr netip.Addr // the clients' address on the bridge
	br   *Bridge
	veth string // the host end, on the bridge
	hold *exec.Cmd
}

// clientVethPrefix starts the host end of a ClientNet's veth: not the
// local platforms' VethPrefix, whose sweeps own their names.
const clientVethPrefix = "isbc"

var ratePattern = regexp.MustCompile(`^([0-9]+)(k|m|g)?bit$`)

// ParseRate reads a link rate as tc writes it: NUMBER followed by bit,
// kbit, mbit or gbit ("100mbit"), decimal prefixes; it returns bits per
// second.
func ParseRate(s string) (uint64, error) {
	m := ratePattern.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return 0, fmt.Errorf("link rate %q: want a number and bit, kbit, mbit or gbit (e.g. 100mbit)", s)
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("link rate %q: want a positive number", s)
	}
	mult := map[string]uint64{"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m[2]]
	if n > 100e9/mult {
		return 0, fmt.Errorf("link rate %q: more than 100gbit", s)
	}
	return n * mult, nil
}

// NewClientNet makes a ClientNet on br for owner (named in its lease),
// its link shaped to rate bits per second (0: not shaped). On error
// nothing is left behind.
func NewClientNet(ctx context.Context, br *Bridge, owner string, rate uint64) (c *ClientNet, err error) {
	for _, tool := range []string{"ip", "nsenter", "sleep"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("client network: %s is not installed (apt-get install iproute2 util-linux coreutils)", tool)
		}
	}
	if rate > 0 {
		if _, err := exec.LookPath("tc"); err != nil {
			return nil, errors.New("client network: tc is not installed (apt-get install iproute2)")
		}
	}
	var suffix [4]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return nil, fmt.Errorf("client network: %w", err)
	}
	c = &ClientNet{br: br, veth: clientVethPrefix + hex.EncodeToString(suffix[:])}
	defer func() {
		if err != nil {
			c.Close(context.WithoutCancel(ctx))
			c = nil
		}
	}()
	// lease first, then the bridge: a live lease keeps other processes'
	// Release from deleting the bridge under us
	if c.Addr, err = br.Lease(owner, c.veth); err != nil {
		return c, err
	}
	if err = br.Ensure(ctx); err != nil {
		return c, err
	}
	c.hold = exec.Command("sleep", "infinity")
	if c.hold.SysProcAttr, err = holderAttr(); err != nil {
		c.hold = nil
		return c, err
	}
	if err = c.hold.Start(); err != nil {
		c.hold = nil
		return c, fmt.Errorf("client network: starting the namespace's holder: %w", err)
	}
	pid := strconv.Itoa(c.hold.Process.Pid)
	pfx := netip.PrefixFrom(c.Addr, br.Prefix.Bits()).String()
	steps := [][]string{
		{"ip", "link", "add", c.veth, "type", "veth", "peer", "name", "eth0", "netns", pid},
		{"ip", "link", "set", c.veth, "master", br.Name},
		{"ip", "link", "set", c.veth, "up"},
		c.inside("ip", "link", "set", "lo", "up"),
		c.inside("ip", "addr", "add", pfx, "dev", "eth0"),
		c.inside("ip", "link", "set", "eth0", "up"),
		c.inside("ip", "route", "add", "default", "via", br.Gateway().String()),
	}
	if rate > 0 {
		tbf := tbfArgs(rate)
		steps = append(steps,
			append([]string{"tc", "qdisc", "add", "dev", c.veth, "root"}, tbf...),              // to the clients
			c.inside(append([]string{"tc", "qdisc", "add", "dev", "eth0", "root"}, tbf...)...)) // from them
	}
	for _, s := range steps {
		if err := command(ctx, s...); err != nil {
			return c, fmt.Errorf("client network: %w", err)
		}
	}
	return c, nil
}

// tbfArgs shape a link to rate bits per second: a bucket of 10 ms of the
// rate (at least 64 KiB, so a GSO packet fits) and up to 100 ms queued.
func tbfArgs(rate uint64) []string {
	burst := max(rate/8/100, 64<<10)
	return []string{"tbf", "rate", strconv.FormatUint(rate, 10) + "bit", "burst", strconv.FormatUint(burst, 10), "latency", "100ms"}
}

// inside is argv run in the namespace.
func (c *ClientNet) inside(argv ...string) []string {
	pid := 0
	if c.hold != nil && c.hold.Process != nil {
		pid = c.hold.Process.Pid
	}
	return append([]string{"nsenter", "-t", strconv.Itoa(pid), "-n", "--"}, argv...)
}

// Command is argv run in the namespace (its network only: the host's
// files, users and processes are the same).
func (c *ClientNet) Command(ctx context.Context, argv ...string) *exec.Cmd {
	a := c.inside(argv...)
	return exec.CommandContext(ctx, a[0], a[1:]...)
}

// Close kills the holder, which takes the namespace and the veth with it,
// and releases the lease. A second call does nothing.
func (c *ClientNet) Close(ctx context.Context) error {
	if c == nil {
		return nil
	}
	var errs []error
	if c.hold != nil {
		c.hold.Process.Kill()
		c.hold.Wait()
		c.hold = nil
		// the veth goes with the namespace, asynchronously
		for i := 0; i < 100 && len(Links(c.veth)) > 0; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if len(Links(c.veth)) > 0 {
			errs = append(errs, DeleteLink(ctx, c.veth))
		}
	}
	if c.Addr.IsValid() {
		if err := c.br.Release(ctx, c.Addr); err != nil {
			errs = append(errs, err)
		}
		c.Addr = netip.Addr{}
	}
	return errors.Join(errs...)
}

// Gateway is the host's address on the clients' bridge: where they reach
// servers in the host's own network (native's).
func (c *ClientNet) Gateway() netip.Addr { return c.br.Gateway() }
