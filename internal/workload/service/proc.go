package service

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/sample"
)

// Proc is a server process started by StartProc: service's servers and
// transfer's.
type Proc struct {
	cmd   *exec.Cmd
	log   *os.File
	grace time.Duration
	once  sync.Once
	// Done is closed when the process has exited, with Err its status.
	Done chan struct{}
	Err  error
}

// StartProc starts bin with args in dir as a server: its output appended
// to the file logPath, in a process group of its own that the kernel kills
// when isobench dies. Stop gives it grace to exit on SIGTERM. Errors start
// with who ("service: " opening the log) and who and what ("service nginx:
// " starting bin).
func StartProc(who, what, bin string, args []string, dir, logPath string, grace time.Duration) (*Proc, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", who, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("%s %s: %w", who, what, err)
	}
	p := &Proc{cmd: cmd, log: lf, grace: grace, Done: make(chan struct{})}
	go func() { p.Err = cmd.Wait(); close(p.Done) }()
	return p, nil
}

// Stop ends the server's process group, once: SIGTERM, SIGKILL after the
// grace period, and SIGKILL for workers left in the group; then it closes
// the log.
func (p *Proc) Stop() {
	p.once.Do(func() {
		pg := -p.cmd.Process.Pid
		syscall.Kill(pg, syscall.SIGTERM)
		select {
		case <-p.Done:
		case <-time.After(p.grace):
			syscall.Kill(pg, syscall.SIGKILL)
			<-p.Done
		}
		syscall.Kill(pg, syscall.SIGKILL) // workers left in the group
		p.log.Close()
	})
}

// Serve waits until stop is closed or ctx ends (true) or, first, the
// server exits (false).
func (p *Proc) Serve(ctx context.Context, stop <-chan struct{}) bool {
	select {
	case <-stop:
	case <-ctx.Done():
	case <-p.Done:
		return false
	}
	return true
}

// ProbeAddr is where a server bound to bind answers port inside its
// instance: bind, or loopback for every interface ("0.0.0.0", "").
func ProbeAddr(bind string, port int) string {
	if bind == "0.0.0.0" || bind == "" {
		bind = "127.0.0.1"
	}
	return net.JoinHostPort(bind, strconv.Itoa(port))
}

// StartMetrics are a server's ReadyMetric, readyMs from its start to its
// first good answer, and its untimed setup before that.
func StartMetrics(readyMs float64, setup time.Duration) []sample.Metric {
	return []sample.Metric{{Name: ReadyMetric, Value: readyMs, Unit: "ms", Better: sample.Lower, Agg: sample.None}, Setup(setup)}
}
