package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
)

// ParseInit reads a system container's option init= for engine (lxc,
// lxd): "" or "app" (an application container), "system" (the image's own
// init at PID 1).
func ParseInit(engine, v string) (bool, error) {
	switch v {
	case "", "app":
		return false, nil
	case "system":
		return true, nil
	}
	return false, fmt.Errorf("%s: init=%q must be app or system", engine, v)
}

// CheckBootable refuses to boot (when boot is set: the option named by
// option, e.g. "init=system", asks for it) an image with no init system;
// errors start with engine.
func CheckBootable(engine, option string, boot bool, s platform.Spec) error {
	if !boot {
		return nil
	}
	if err := image.CheckBootable(s.Image); err != nil {
		return fmt.Errorf("%s: %s boots the image's systemd: %w", engine, option, err)
	}
	return nil
}

// WaitBooted polls `systemctl is-system-running --wait`, run in the
// container by run with its output to out, every 100 ms until systemd says
// the boot finished, and returns its state: "running", or "degraded" (a
// unit failed). It gives up after image.BootTimeout, or when ended (nil:
// never) is closed, with an error that names the container as what (e.g.
// "lxd: system container c1") and, for ended, adds stopped().
func WaitBooted(ctx context.Context, run func(ctx context.Context, argv []string, out io.Writer), ended <-chan struct{}, what string, stopped func() string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, image.BootTimeout)
	defer cancel()
	var last string
	for {
		var out bytes.Buffer
		run(ctx, []string{"systemctl", "is-system-running", "--wait"}, &out)
		last = strings.TrimSpace(out.String())
		if i := strings.LastIndexByte(last, '\n'); i >= 0 {
			last = last[i+1:]
		}
		if last == "running" || last == "degraded" {
			return last, nil
		}
		select {
		case <-ended:
			return "", fmt.Errorf("%s stopped while booting: %s", what, stopped())
		case <-ctx.Done():
			return "", fmt.Errorf("%s did not finish booting (systemctl is-system-running said %q): %w", what, last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
			// systemd or its D-Bus socket was not up yet
		}
	}
}
