package tooladapt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/par"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/tools/iperf2"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/hostside"
)

// Names of the iperf 2 workload and its hidden halves.
const (
	Iperf2       = "tool:iperf2"
	Iperf2Server = "_iperf2-server"
	Iperf2Client = "_iperf2-client"
)

// NetDefs are the host-driven tool workloads (iperf 2's one server and N
// clients in instances) with their hidden in-guest halves; register all of
// them (the agent needs the hidden ones).
func NetDefs() []workload.Def {
	return []workload.Def{Iperf2Def, Iperf2ServerDef, Iperf2ClientDef}
}

func iperf2Timeout(p workload.Params) time.Duration { return p.Duration("duration") + 3*time.Minute }

// Iperf2Def is study 000's network test as its paper ran it: one instance
// runs iperf 2's server, N instances each run an iperf 2 client against it
// at once (section 7.2.4), every socket with the paper's 64 KByte window.
// Each client instance reports its throughput; the cell's aggregate is
// their sum, the server's total.
var Iperf2Def = workload.Def{
	Needs: workload.Needs{Network: true, HostTools: onNative("iperf", "iperf")},
	Name:  Iperf2,
	Help:  "external iperf 2 (study 000, figure 7): one server instance, N client instances sending to it at once, each with window WINDOW (the paper's 64 KByte); Gbit/s per client, summed over the clients",
	Params: []workload.Param{
		{Name: "window", Kind: workload.Size, Default: "64k", Min: 0, Max: 64 << 20, Help: "TCP window of server and clients (iperf -w); 0: the kernel's autotuning"},
		{Name: "parallel", Kind: workload.Int, Default: "1", Min: 1, Max: 128, Help: "streams per client (-P)"},
		{Name: "port", Kind: workload.Int, Default: "0", Min: 0, Max: 65535, Help: "server port; 0 picks a free one"},
		{Name: "duration", Kind: workload.Duration, Default: "10s", Min: 1, Max: 86400, Help: "how long the clients send (whole seconds)"},
	},
	Host:    runIperf2,
	Timeout: iperf2Timeout,
	// the clients' duration, plus creating N+1 instances and starting
	// the server
	Estimate: workload.DurationPlus(5 * time.Second),
}

// halfWindow is the window parameter of both hidden halves.
var halfWindow = workload.Param{Name: "window", Kind: workload.Size, Default: "64k", Min: 0, Max: 64 << 20, Help: "TCP window (-w); 0: the kernel's"}

// Iperf2ServerDef is the hidden server half: iperf -s on the instance's
// address, serving until the host closes the agent's input.
var Iperf2ServerDef = workload.Def{
	Name:     Iperf2Server,
	Internal: true,
	Help:     "internal: iperf 2's server in the server instance",
	Params: []workload.Param{
		{Name: "bind", Kind: workload.ListenIP, Default: "127.0.0.1", Help: "address to listen on: the instance's own"},
		{Name: "port", Kind: workload.Int, Default: "5001", Min: 1, Max: 65535, Help: "port"},
		halfWindow,
		{Name: "timeout", Kind: workload.Duration, Default: "1h", Min: 1, Max: 86400, Help: "stop serving after this long even if the host never says so"},
	},
	Agent: runIperf2Server,
}

// Iperf2ClientDef is the hidden client half: iperf connects when it
// starts, so the client starts at the barrier and its report covers its
// connection and its run.
var Iperf2ClientDef = workload.Def{
	Name:     Iperf2Client,
	Internal: true,
	Help:     "internal: an iperf 2 client in a client instance",
	Params: []workload.Param{
		{Name: "server", Kind: workload.String, Default: "127.0.0.1", Help: "server address"},
		{Name: "port", Kind: workload.Int, Default: "5001", Min: 1, Max: 65535, Help: "server port"},
		halfWindow,
		{Name: "parallel", Kind: workload.Int, Default: "1", Min: 1, Max: 128, Help: "streams (-P)"},
		{Name: "duration", Kind: workload.Duration, Default: "10s", Min: 1, Max: 86400, Help: "how long to send"},
	},
	Check: checkServer,
	Agent: runIperf2Client,
}

func runIperf2Server(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	bin, err := toolPath(iperf2.Binary)
	if err != nil {
		return nil, err
	}
	port := p.Int("port")
	srv, err := startServer(ctx, bin, iperf2.Server{Bind: p.Str("bind"), Port: port, Window: p.Size("window")}.Args(), tcpListening(port))
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	if err := barrier(ready); err != nil {
		return nil, err
	}
	// After "go" the host sends nothing more: the end of the input means
	// the clients are done (or the host is gone).
	eof := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(eof) }()
	select {
	case <-eof:
		return nil, nil
	case <-srv.done:
		return nil, fmt.Errorf("iperf server exited while serving: %s", tail(srv.out.String()))
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(p.Duration("timeout")):
		return nil, fmt.Errorf("iperf server: the host did not end the run within %s", p.Duration("timeout"))
	}
}

func runIperf2Client(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	bin, dir, err := toolInScratch(iperf2.Binary)
	if err != nil {
		return nil, err
	}
	host, port := p.Str("server"), p.Int("port")
	args := iperf2.Client{Server: host, Port: port, Duration: p.Duration("duration"), Window: p.Size("window"),
		Parallel: p.Int("parallel"), Interval: 1}.Args()
	if err := barrier(ready); err != nil {
		return nil, err
	}
	// The bytes are counted as each interval's report arrives (every
	// second, -i 1), so that N clients' throughput is read over the window
	// in which all of them were sending (agenthost.Group.ApplyWindow), as
	// the built-in workloads' rates are: started one after another on a
	// loaded host, clients that each report their own run would sum to
	// more than the link carried while all of them shared it.
	c := workload.NewCounter()
	stop := workload.Track(ctx, c, workload.Rate{Metric: "throughput", Scale: 8 / 1e9})
	defer stop()
	ends := map[string]float64{} // per stream, the end of its last counted interval
	var added int64
	count := func(line string) {
		iv, ok := iperf2.ParseInterval(line)
		if !ok || iv.ID == "SUM" || math.Abs(iv.Start-ends[iv.ID]) > 1e-6 || iv.End <= iv.Start {
			return
		}
		ends[iv.ID] = iv.End
		if k := int64(iv.Bytes); k > 0 {
			c.Add(k)
			added += k
		}
	}
	// iperf 2 reports a failed connection on its standard error and
	// exits 0: the report is read from both.
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	stdout := &lineWriter{each: count}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	out := stdout.buf.String()
	if runErr != nil {
		return nil, fmt.Errorf("iperf client to %s: %w: %s", hostPort(host, port), runErr, tail(strings.TrimSpace(stderr.String()+out)))
	}
	rep, err := iperf2.ParseReport(strings.NewReader(out + "\n" + stderr.String()))
	if err != nil {
		return nil, fmt.Errorf("iperf client to %s: %w", hostPort(host, port), err)
	}
	ms, err := rep.Metrics()
	if err != nil {
		return nil, fmt.Errorf("iperf client to %s: %w", hostPort(host, port), err)
	}
	// the count ends at the whole run's bytes
	if rest := int64(rep.Bytes()) - added; rest > 0 {
		c.Add(rest)
	}
	return ms, nil
}

// tail is the end of a tool's output, short enough for an error.
func tail(s string) string {
	if len(s) > maxStderr {
		return "..." + s[len(s)-maxStderr:]
	}
	return s
}

// iperf2Run is one repetition of tool:iperf2: its instances, closed at
// the end whatever happened.
type iperf2Run struct {
	p   workload.Params
	env workload.HostEnv
	*workload.Instances
}

func runIperf2(ctx context.Context, p workload.Params, env workload.HostEnv) ([]workload.InstanceResult, error) {
	return workload.WithInstances(ctx, env, "iperf2", func(ctx context.Context, g *workload.Instances) ([]workload.InstanceResult, error) {
		return (&iperf2Run{p: p, env: env, Instances: g}).do(ctx)
	})
}

func (r *iperf2Run) do(ctx context.Context) ([]workload.InstanceResult, error) {
	n := r.env.Instances
	if n < 1 {
		return nil, errors.New("iperf2: need at least one client instance")
	}
	port, err := hostside.Port(r.p.Int("port"))
	if err != nil {
		return nil, fmt.Errorf("iperf2: %w", err)
	}
	// The server and the N clients, created together (untimed).
	clients := make([]platform.Instance, n)
	var srv platform.Instance
	if err := par.Each(n+1, func(i int) error {
		if i == n {
			in, err := r.Create(ctx, "server", port)
			srv = in
			return err
		}
		in, err := r.Create(ctx, "client")
		clients[i] = in
		return err
	}); err != nil {
		return nil, err
	}
	addr, err := hostside.Address(ctx, srv, "iperf2", "server", "iperf needs bridge, nat or host")
	if err != nil {
		return nil, err
	}
	window := r.p.Str("window")
	sp := spec.Canonical(map[string]string{"bind": addr, "port": strconv.Itoa(port), "window": window,
		"timeout": (iperf2Timeout(r.p) + time.Minute).String()})
	sess := agenthost.Start(ctx, srv, Iperf2Server, sp)
	defer sess.Abort()
	if err := hostside.Begin(ctx, sess); err != nil {
		return nil, fmt.Errorf("iperf2: server instance: %w", err)
	}
	cp := spec.Canonical(map[string]string{"server": addr, "port": strconv.Itoa(port), "window": window,
		"parallel": r.p.Str("parallel"), "duration": r.p.Str("duration")})
	g := agenthost.StartGroup(ctx, clients, Iperf2Client, cp)
	if _, err := g.Barrier(ctx); err != nil {
		g.Abort()
		return nil, fmt.Errorf("iperf2: client %w", err)
	}
	ms, ctags, err := g.Results(ctx)
	if err != nil {
		g.Abort()
		return nil, fmt.Errorf("iperf2: client %w", err)
	}
	// every client's throughput over the window in which all of them
	// were sending (what each reported over its own run stays in its
	// tags as throughput_own)
	cw, err := g.ApplyWindow(ms, ctags)
	if err != nil {
		return nil, fmt.Errorf("iperf2: %w", err)
	}
	if cw != nil && r.env.Window != nil {
		r.env.Window(*cw)
	}
	// The clients are done: end the server and hear how it went.
	sess.Abort()
	if _, _, err := sess.Result(ctx); err != nil {
		return nil, fmt.Errorf("iperf2: server instance: %w", err)
	}
	win := "kernel"
	if w := r.p.Size("window"); w > 0 {
		win = iperf2.Window(w)
	}
	tags := map[string]string{"server": "instance", "client": "instance", "window": win}
	if nw := srv.Facts(ctx)["network"]; nw != "" {
		tags["network"] = nw
	}
	results := make([]workload.InstanceResult, n)
	for i := range ms {
		t := maps.Clone(tags)
		maps.Copy(t, ctags[i])
		results[i] = workload.InstanceResult{Instance: i, Metrics: ms[i], Tags: t}
	}
	return results, nil
}
