package hostnet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// ResetTimeWait destroys the TIME_WAIT sockets in this process's network
// namespace that have one of eps as either end: the connections a
// workload's clients made to its server, which the kernel would otherwise
// keep for 60 s (TCP_TIMEWAIT_LEN), and which the runner's settler
// (hoststate) would wait for before the next repetition. That wait, not
// the sockets, is what this saves: five back-to-back runs of ab at 8,000
// users against Apache on loopback slowed down alike with and without the
// reset (0.9 s to 41 s, then failures; the accept queue's overflows, not
// TIME_WAIT, drove it). Only sockets with an endpoint in eps are touched:
// never another program's. It uses ss(8)'s --kill (the kernel's
// SOCK_DESTROY, CONFIG_INET_DIAG_DESTROY) and returns how many it
// destroyed; an error says why not all could be, and then the settler
// waits for them to expire instead.
func ResetTimeWait(ctx context.Context, eps ...netip.AddrPort) (int, error) {
	var terms []string
	for _, ep := range eps {
		if !ep.IsValid() {
			continue
		}
		a := netip.AddrPortFrom(ep.Addr().Unmap(), ep.Port()).String() // [v6]:port
		terms = append(terms, "src "+a, "dst "+a)
	}
	if len(terms) == 0 {
		return 0, nil
	}
	if _, err := exec.LookPath("ss"); err != nil {
		return 0, errors.New("hostnet: resetting TIME_WAIT sockets needs ss (apt-get install iproute2)")
	}
	filter := "( " + strings.Join(terms, " or ") + " )"
	count := func(kill bool) (int, error) {
		argv := []string{"-H", "-t", "-a", "-n"}
		if kill {
			argv = append(argv, "-K")
		}
		argv = append(argv, "state", "time-wait", filter)
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "ss", argv...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return 0, fmt.Errorf("hostnet: ss %s: %s: %w", strings.Join(argv, " "), strings.TrimSpace(stderr.String()), err)
		}
		n := 0
		for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
			if strings.TrimSpace(sc.Text()) != "" {
				n++
			}
		}
		return n, nil
	}
	// with --kill, ss lists the sockets it destroyed; what is left is
	// what the kernel refused
	killed, err := count(true)
	if err != nil {
		return 0, err
	}
	left, err := count(false)
	if err != nil {
		return killed, err
	}
	if left > 0 {
		return killed, fmt.Errorf("hostnet: %d of %d TIME_WAIT sockets could not be destroyed (the kernel needs CONFIG_INET_DIAG_DESTROY, and root)", left, killed+left)
	}
	return killed, nil
}
