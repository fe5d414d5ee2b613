package tooladapt

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// toolPath finds an external tool inside the instance. Besides PATH it looks
// in the usual binary directories, because an agent started with an empty
// environment has no PATH.
func toolPath(bin string) (string, error) {
	if p, err := exec.LookPath(bin); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, bin)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in this instance: use the tools image profile (image=tools)", bin)
}

// toolInScratch finds bin in the instance and the directory it runs in,
// the instance's scratch directory.
func toolInScratch(name string) (bin, dir string, err error) {
	if bin, err = toolPath(name); err != nil {
		return "", "", err
	}
	if dir, err = workload.Scratch(); err != nil {
		return "", "", err
	}
	return bin, dir, nil
}

// toolInFreshDir finds bin in the instance and makes it a fresh directory
// to run in (see scratchDir), which cleanup removes.
func toolInFreshDir(name, prefix string) (bin, dir string, cleanup func(), err error) {
	if bin, err = toolPath(name); err != nil {
		return "", "", nil, err
	}
	if dir, cleanup, err = scratchDir(prefix); err != nil {
		return "", "", nil, err
	}
	return bin, dir, cleanup, nil
}

// timedRun waits for the start signal, then runs bin with args in dir (the
// timed part of a tool workload).
func timedRun(ctx context.Context, ready func() error, dir, bin string, args []string) ([]byte, error) {
	if err := barrier(ready); err != nil {
		return nil, err
	}
	return runTool(ctx, dir, bin, args...)
}

// parseOutput parses a tool's output, naming the tool on failure.
func parseOutput(tool string, out []byte, parse func(io.Reader) ([]sample.Metric, error)) ([]sample.Metric, error) {
	ms, err := parse(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("parsing %s output: %w", tool, err)
	}
	return ms, nil
}

// maxStderr bounds how much of a tool's error output ends up in an error.
const maxStderr = 2048

// runTool runs bin with args in dir and returns its standard output (also
// on failure, for tools that report errors there). A failure carries the
// tail of the tool's standard error (or output).
func runTool(ctx context.Context, dir, bin string, args ...string) ([]byte, error) {
	return runToolLines(ctx, dir, bin, nil, args...)
}

// runToolLines is runTool that also hands each line of the tool's standard
// output to each (when not nil) as the line arrives.
func runToolLines(ctx context.Context, dir, bin string, each func(string), args ...string) ([]byte, error) {
	return runToolOn(ctx, -1, dir, bin, each, args...)
}

// runToolOn is runToolLines with the tool bound to cpu (startOn; cpu < 0:
// not bound).
func runToolOn(ctx context.Context, cpu int, dir, bin string, each func(string), args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	stdout := &lineWriter{each: each}
	cmd.Stdout = stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	err := startOn(cmd, cpu)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.buf.String())
		}
		if len(msg) > maxStderr {
			msg = "..." + msg[len(msg)-maxStderr:]
		}
		return stdout.buf.Bytes(), fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, msg)
	}
	return stdout.buf.Bytes(), nil
}

// lineWriter keeps everything written to it in buf and passes each
// complete line (without its newline) to each, if set, as it arrives.
type lineWriter struct {
	buf  bytes.Buffer
	part []byte
	each func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if w.each == nil {
		return len(p), nil
	}
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		w.each(string(w.part[:i]))
		w.part = w.part[i+1:]
	}
	return len(p), nil
}

// server is a tool's server process started for a loopback run.
type server struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	out    *bytes.Buffer
	done   chan struct{}
}

// startServer starts bin args in the background and waits until ready
// reports true (polled), the process exits, or the wait times out.
func startServer(ctx context.Context, bin string, args []string, ready func() bool) (*server, error) {
	sctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(sctx, bin, args...)
	out := &bytes.Buffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("starting %s server: %w", filepath.Base(bin), err)
	}
	s := &server{cmd: cmd, cancel: cancel, out: out, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ready() {
			return s, nil
		}
		select {
		case <-s.done:
			cancel()
			return nil, fmt.Errorf("%s server exited before it was ready: %s", filepath.Base(bin), strings.TrimSpace(out.String()))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s server did not get ready within 10s", filepath.Base(bin))
		}
	}
}

// serverFor is the server a client workload runs against: host when it is
// set (someone else's server), else a server started with args(bind) on
// 127.0.0.1 in this instance, which stop ends.
func serverFor(ctx context.Context, host, bin string, args func(bind string) []string, ready func() bool) (addr string, stop func(), err error) {
	if host != "" {
		return host, func() {}, nil
	}
	host = "127.0.0.1"
	srv, err := startServer(ctx, bin, args(host), ready)
	if err != nil {
		return "", nil, err
	}
	return host, srv.stop, nil
}

// stop ends the server and waits for it.
func (s *server) stop() {
	s.cancel()
	<-s.done
}

// tcpListening reports whether a TCP socket listens on port on this host.
// It reads /proc/net/tcp and /proc/net/tcp6 instead of connecting: a probe
// connection would count as a (failed) test for servers such as iperf3,
// which then close and reopen their listening socket.
func tcpListening(port int) func() bool {
	return procSocket([]string{"/proc/net/tcp", "/proc/net/tcp6"}, port, "0A")
}

// udpBound reports whether a UDP socket is bound to port on this host (a
// UDP server cannot be probed without taking part in its protocol).
func udpBound(port int) func() bool {
	return procSocket([]string{"/proc/net/udp", "/proc/net/udp6"}, port, "")
}

// procSocket scans the kernel's socket tables for a local port, and when
// state is set, for that socket state (0A is TCP_LISTEN).
func procSocket(files []string, port int, state string) func() bool {
	want := fmt.Sprintf(":%04X", port)
	return func() bool {
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) > 3 && strings.HasSuffix(fields[1], want) && (state == "" || fields[3] == state) {
					return true
				}
			}
		}
		return false
	}
}

// hostPort joins host and port, bracketing IPv6 literals.
func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// barrier calls ready, wrapping its failure so it reads well in the agent's
// error.
func barrier(ready func() error) error {
	if err := ready(); err != nil {
		return fmt.Errorf("waiting for the start signal: %w", err)
	}
	return nil
}

// scratchDir makes a fresh directory for a tool's files in the instance's
// scratch directory; cleanup removes it with everything the tool left.
func scratchDir(prefix string) (dir string, cleanup func(), err error) {
	scratch, err := workload.Scratch()
	if err != nil {
		return "", nil, err
	}
	dir, err = os.MkdirTemp(scratch, prefix)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", strings.TrimSuffix(prefix, "-"), err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}
