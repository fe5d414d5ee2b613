package qemu

import (
	"bytes"
	"context"
	"os"
	"time"
)

// stallSigns are what a Linux guest prints on its console when it stops
// making progress: the soft-lockup watchdog (a CPU stuck for twice
// watchdog_thresh, 20 s by default), an RCU stall, a panic. A TCG guest
// on a loaded host once hung that way 1.8 s into boot (CPU#1 soft lockup
// in swapper/0:1, then RCU stalls) and was only given up on when the
// boot's 5-minute timeout ran out.
var stallSigns = [][]byte{
	[]byte("soft lockup - CPU#"),
	[]byte("self-detected stall on CPU"),
	[]byte("detected stalls on CPUs/tasks"),
	[]byte("Kernel panic - not syncing"),
}

// consoleStall returns the first console line that shows a stall, without
// its trailing space, or "" when there is none.
func consoleStall(console []byte) string {
	for _, line := range bytes.Split(console, []byte("\n")) {
		for _, sign := range stallSigns {
			if bytes.Contains(line, sign) {
				return string(bytes.TrimSpace(line))
			}
		}
	}
	return ""
}

// watchConsole reads the console log at path every interval until ctx
// ends, and sends the first stalled line (consoleStall) on the channel it
// returns; it sends nothing while the guest shows no stall.
func watchConsole(ctx context.Context, path string, every time.Duration) <-chan string {
	out := make(chan string, 1)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			c, err := os.ReadFile(path)
			if err != nil {
				continue // not written yet
			}
			if line := consoleStall(c); line != "" {
				out <- line
				return
			}
		}
	}()
	return out
}
