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
// keep for 60 s (TCP_TIMEWAIT_LEN) and which slow or break the next
// repetition's connections (on this host: 0.9 s, 2.2 s, 6.2 s, 41 s, then
// a failure, for five back-to-back runs of ab at 8,000 users against
// Apache on loopback). Only sockets with an endpoint in eps are touched:
// never another program's. It uses ss(8)'s --kill (the kernel's
// SOCK_DESTROY, CONFIG_INET_DIAG_DESTROY) and returns how many it
// destroyed; an error says why none or not all could be, and then the
// caller's settler waits for them to expire instead.
func ResetTimeWait(ctx context.Context, eps ...netip.AddrPort) (int, error) {
	var terms []string
	for _, ep := range eps {
		if !ep.IsValid() {
			continue
		}
		a := ep.Addr().Unmap().String()
		if ep.Addr().Unmap().Is6() {
			a = "[" + a + "]"
		}
		p := fmt.Sprint(ep.Port())
		terms = append(terms, "src "+a+":"+p, "dst "+a+":"+p)
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
	before, err := count(false)
	if err != nil || before == 0 {
		return 0, err
	}
	if _, err := count(true); err != nil {
		return 0, err
	}
	after, err := count(false)
	if err != nil {
		return before, err
	}
	if after > 0 {
		return before - after, fmt.Errorf("hostnet: %d of %d TIME_WAIT sockets could not be destroyed (the kernel needs CONFIG_INET_DIAG_DESTROY, and root)", after, before)
	}
	return before, nil
}
