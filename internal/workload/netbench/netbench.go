// Package netbench measures TCP networking between a server and clients
// placed on the host or in instances: tcp-stream (bulk throughput, like
// iperf3), tcp-rr (request/response with one transaction outstanding per
// stream, like netperf TCP_RR) and tcp-crr (connect, request, response,
// close, like netperf TCP_CRR).
//
// Both ends are this package's code, so host and guest ends are the same
// program: in an instance they run as the hidden agent workloads
// _net-server and _net-client; on the host they run in-process. The
// workloads themselves are host-driven: they create the server instance,
// the client instances, release the clients through a barrier and stop the
// server. Only loopback and the instances' own (private) addresses, or the
// host's address on the instances' bridge, are ever connected to.
package netbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/par"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/hostside"
)

// Names of the hidden in-guest halves.
const (
	ServerName = "_net-server"
	ClientName = "_net-client"
)

// Placements.
const (
	OnHost     = "host"
	OnInstance = "instance"
)

func placementParams() []workload.Param {
	return []workload.Param{
		{Name: "server", Kind: workload.Enum, Enum: []string{OnInstance, OnHost}, Default: OnInstance, Help: "where the server runs: in an instance, or in isobench on the host"},
		{Name: "client", Kind: workload.Enum, Enum: []string{OnHost, OnInstance}, Default: OnHost, Help: "where the clients run: N goroutines on the host, or N instances"},
		{Name: "streams", Kind: workload.Int, Default: "1", Min: 1, Max: 1024, Help: "connections per client"},
		{Name: "duration", Kind: workload.Duration, Default: "10s", Min: 0.1, Max: 86400, Help: "how long the clients run"},
		{Name: "port", Kind: workload.Int, Default: "0", Min: 0, Max: 65535, Help: "server port; 0 picks a free one"},
		{Name: "client-cpu", Kind: workload.Int, Default: "-1", Min: -1, Max: 4095, Help: "pin the client threads to this CPU (netperf -T); -1: the scheduler decides, and then tcp-rr/tcp-crr are not comparable with netperf or sockperf (isobench's Go ends often share a CPU where a C tool's do not: 5x sockperf's rate unpinned on a VM, within 10% pinned; see docs/fidelity.md): pin both ends to compare"},
		{Name: "server-cpu", Kind: workload.Int, Default: "-1", Min: -1, Max: 4095, Help: "pin the server threads to this CPU; -1: the scheduler decides (pin both ends to compare with another tool or host)"},
	}
}

func sizeParams() []workload.Param {
	return []workload.Param{
		{Name: "req-size", Kind: workload.Size, Default: "100", Min: 1, Max: maxMsg, Help: "request bytes"},
		{Name: "resp-size", Kind: workload.Size, Default: "100", Min: 1, Max: maxMsg, Help: "response bytes"},
	}
}

func checkPlacement(p workload.Params) error {
	if p.Str("server") == OnHost && p.Str("client") == OnHost {
		return errors.New("server=host with client=host involves no instance; put the server or the clients in instances")
	}
	return nil
}

func timeout(p workload.Params) time.Duration { return p.Duration("duration") + 3*time.Minute }

// Defs are the network workloads, the hidden in-guest halves included;
// register all of them (the agent needs the hidden ones).
func Defs() []workload.Def {
	return []workload.Def{TCPStream, TCPRR, TCPCRR, Server, Client}
}

// tcpDef is a network workload of mode: a server and clients placed by
// placementParams, with params besides.
func tcpDef(name, mode, help string, params ...workload.Param) workload.Def {
	return workload.Def{
		Needs:    workload.Needs{Network: true},
		Name:     name,
		Help:     help,
		Params:   append(placementParams(), params...),
		Check:    checkPlacement,
		Host:     hostRun(mode),
		Timeout:  timeout,
		Estimate: workload.DurationPlus(500 * time.Millisecond),
	}
}

// TCPStream is bulk TCP throughput.
var TCPStream = tcpDef("tcp-stream", ModeStream,
	"bulk TCP throughput between a server and N clients, Gbit/s: the bytes the receiving end counted, over the time from the client's start to the receiver's count after the client's last write (iperf3: the receiver's bytes over its own -t); kernel default socket buffers, one blocking write of msg-size after another per stream, Nagle off (iperf3 leaves it on), both ends off Go's netpoller; placement server=instance|host, client=host|instance. Against iperf3 pinned alike, both count what the link carried (0.99-1.00 of an iptables byte counter, runc and QEMU), and where the sender's CPU is the limit the rate is the client's own: per-round ratios to iperf3 spread 0.5-1.4 on this host's loopback and bridges, and under an emulated CPU (QEMU/TCG) this Go client moves 0.6-0.7 of iperf3's rate; compare platforms with one tool (bench/fidelity-net.sh, docs/fidelity.md)",
	workload.Param{Name: "msg-size", Kind: workload.Size, Default: "128k", Min: 1, Max: maxMsg, Help: "bytes per write"},
	workload.Param{Name: "direction", Kind: workload.Enum, Enum: []string{"upload", "download"}, Default: "upload", Help: "upload: clients send; download: the server sends"},
)

// TCPRR is TCP request/response latency and rate.
var TCPRR = tcpDef("tcp-rr", ModeRR,
	"TCP request/response, one outstanding per stream (netperf TCP_RR): transactions/s and latency p50/p99/avg (us), each transaction timed by the client around one blocking write and read; against sockperf ping-pong pinned alike (bench/fidelity-net.sh) its rate and median round trip agree within the host's spread on loopback, across the Docker bridge and from a runc container to the host (rate 0.84-1.04 in 5-8 rounds), and under an emulated CPU (QEMU/TCG) its rate reads 0.64-0.72 of sockperf's (docs/fidelity.md)",
	sizeParams()...)

// TCPCRR is TCP connect/request/response/close rate.
var TCPCRR = tcpDef("tcp-crr", ModeCRR,
	"TCP connect/request/response/close per stream (netperf TCP_CRR): connections/s and latency (us)",
	sizeParams()...)

// Server is the in-guest server: it listens on bind:port, reports ready,
// and serves until a client sends stop (or its timeout passes).
var Server = workload.Def{
	Name:     ServerName,
	Internal: true,
	Help:     "internal: the network workloads' server end",
	Params: []workload.Param{
		{Name: "bind", Kind: workload.ListenIP, Default: "127.0.0.1", Help: "address to listen on: the instance's own address (never every interface)"},
		{Name: "port", Kind: workload.Int, Default: "5201", Min: 1, Max: 65535, Help: "port to listen on"},
		{Name: "timeout", Kind: workload.Duration, Default: "1h", Min: 1, Max: 86400, Help: "stop serving after this long even without a stop"},
		{Name: "watch-stdin", Kind: workload.Bool, Default: "false", Help: "also stop when the agent's standard input closes (the host went away); only for an agent in its own process"},
		{Name: "cpu", Kind: workload.Int, Default: "-1", Min: -1, Max: 4095, Help: "pin the serving threads to this CPU; -1: no pinning"},
		{Name: "shared-cpu", Kind: workload.Bool, Default: "false", Help: "the client is pinned to the same CPU (the loops then never yield)"},
	},
	Agent: serveAgent,
}

// Client is the in-guest client: it connects (untimed), waits for the
// barrier, runs for duration and reports its metrics.
var Client = workload.Def{
	Name:     ClientName,
	Internal: true,
	Help:     "internal: the network workloads' client end",
	Params: []workload.Param{
		{Name: "addr", Kind: workload.String, Default: "127.0.0.1", Help: "server address"},
		{Name: "port", Kind: workload.Int, Default: "5201", Min: 1, Max: 65535, Help: "server port"},
		{Name: "mode", Kind: workload.Enum, Enum: []string{ModeStream, ModeRR, ModeCRR}, Default: ModeStream, Help: "what to measure"},
		{Name: "direction", Kind: workload.Enum, Enum: []string{"upload", "download"}, Default: "upload", Help: "stream direction"},
		{Name: "streams", Kind: workload.Int, Default: "1", Min: 1, Max: 1024, Help: "connections"},
		{Name: "msg-size", Kind: workload.Size, Default: "128k", Min: 1, Max: maxMsg, Help: "stream write size"},
		{Name: "req-size", Kind: workload.Size, Default: "100", Min: 1, Max: maxMsg, Help: "rr/crr request bytes"},
		{Name: "resp-size", Kind: workload.Size, Default: "100", Min: 1, Max: maxMsg, Help: "rr/crr response bytes"},
		{Name: "duration", Kind: workload.Duration, Default: "10s", Min: 0.1, Max: 86400, Help: "how long to run"},
		{Name: "cpu", Kind: workload.Int, Default: "-1", Min: -1, Max: 4095, Help: "pin the client threads to this CPU; -1: no pinning"},
		{Name: "shared-cpu", Kind: workload.Bool, Default: "false", Help: "the server is pinned to the same CPU (the loops then never yield)"},
	},
	Agent: clientAgent,
}

func serveAgent(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	addr := net.JoinHostPort(p.Str("bind"), strconv.Itoa(p.Int("port")))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("netbench server: %w", err)
	}
	s := newServer(ln)
	s.cpu = p.Int("cpu")
	s.noYield = p.Bool("shared-cpu")
	defer s.stop()
	if err := ready(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.Duration("timeout"))
	defer cancel()
	if p.Bool("watch-stdin") {
		// after "go" the host sends nothing more; end of input means the
		// session was closed or the host is gone
		go func() {
			io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
	}
	if err := s.Serve(ctx); err != nil {
		return nil, err
	}
	return []sample.Metric{
		{Name: "server_connections", Value: float64(s.conns.Load()), Unit: "connections", Better: sample.Higher, Agg: sample.None},
	}, nil
}

// configFrom reads a client configuration from _net-client parameters.
func configFrom(p workload.Params) clientConfig {
	cfg := clientConfig{
		addr:      net.JoinHostPort(p.Str("addr"), strconv.Itoa(p.Int("port"))),
		mode:      p.Str("mode"),
		download:  p.Str("direction") == "download",
		streams:   p.Int("streams"),
		msg:       int(p.Size("msg-size")),
		resp:      int(p.Size("resp-size")),
		duration:  p.Duration("duration"),
		dialLimit: 30 * time.Second,
		cpu:       p.Int("cpu"),
		noYield:   p.Bool("shared-cpu"),
	}
	if cfg.mode != ModeStream {
		cfg.msg = int(p.Size("req-size"))
	}
	return cfg
}

func clientAgent(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	cfg := configFrom(p)
	c, err := prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if err := ready(); err != nil {
		return nil, err
	}
	r, err := c.run(ctx)
	if err != nil {
		return nil, err
	}
	return metrics(cfg.mode, r)
}

// clientParams are the _net-client parameters for a host-driven run.
func clientParams(mode string, p workload.Params, addr string, port int) map[string]string {
	m := map[string]string{
		"addr":     addr,
		"port":     strconv.Itoa(port),
		"mode":     mode,
		"streams":  p.Str("streams"),
		"duration": p.Str("duration"),
		"cpu":      p.Str("client-cpu"),
	}
	if sharedCPU(p) {
		m["shared-cpu"] = "true"
	}
	if mode == ModeStream {
		m["msg-size"] = p.Str("msg-size")
		m["direction"] = p.Str("direction")
	} else {
		m["req-size"] = p.Str("req-size")
		m["resp-size"] = p.Str("resp-size")
	}
	return m
}

// sharedCPU reports whether both ends are pinned to one CPU.
func sharedCPU(p workload.Params) bool {
	return p.Int("client-cpu") >= 0 && p.Int("client-cpu") == p.Int("server-cpu")
}

// hostAddrFacing returns the host's own address on the network that
// reaches instAddr: loopback for loopback, else the address of the host
// interface whose subnet contains instAddr (the bridge's gateway).
func hostAddrFacing(instAddr string) (string, error) {
	ip := net.ParseIP(instAddr)
	if ip == nil {
		return "", fmt.Errorf("netbench: instance address %q is not an IP", instAddr)
	}
	if ip.IsLoopback() {
		return "127.0.0.1", nil
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("netbench: listing host interfaces: %w", err)
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if ok && n.Contains(ip) && !n.IP.Equal(ip) {
				return n.IP.String(), nil
			}
		}
	}
	return "", fmt.Errorf("netbench: no host interface is on the network of instance address %s; the host cannot serve it (use server=instance)", instAddr)
}

// run state of one host-driven repetition.
type run struct {
	mode string
	p    workload.Params
	env  workload.HostEnv
	*workload.Instances
}

// checkAddr refuses anything but loopback and private addresses.
func checkAddr(addr string) error { return hostside.CheckAddr("netbench", addr) }

// address asks an instance for its address and checks it is one we may use.
func address(ctx context.Context, in platform.Instance, role string) (string, error) {
	return hostside.Address(ctx, in, "netbench", role, "network workloads need bridge or host")
}

func hostRun(mode string) workload.HostFunc {
	return func(ctx context.Context, p workload.Params, env workload.HostEnv) ([]workload.InstanceResult, error) {
		if err := checkPlacement(p); err != nil {
			return nil, err
		}
		return workload.WithInstances(ctx, env, "netbench", func(ctx context.Context, g *workload.Instances) ([]workload.InstanceResult, error) {
			return (&run{mode: mode, p: p, env: env, Instances: g}).do(ctx)
		})
	}
}

func (r *run) do(ctx context.Context) ([]workload.InstanceResult, error) {
	n := r.env.Instances
	if n < 1 {
		return nil, errors.New("netbench: need at least one client")
	}
	port, err := hostside.Port(r.p.Int("port"))
	if err != nil {
		return nil, err
	}
	tags := map[string]string{"server": r.p.Str("server"), "client": r.p.Str("client")}

	// Client instances first when the host serves them: the host listens
	// on its address facing them.
	var clients []platform.Instance
	if r.p.Str("client") == OnInstance {
		clients = make([]platform.Instance, n)
		if err := par.Each(n, func(i int) error {
			in, err := r.Create(ctx, "client")
			clients[i] = in
			return err
		}); err != nil {
			return nil, err
		}
		tags["network"] = clients[0].Facts(ctx)["network"]
	}

	// serverAddr is where instances reach the server; hostServerAddr is
	// where the host does (a published port with network=nat)
	var serverAddr, hostServerAddr string
	var stopServer func(context.Context) error
	if r.p.Str("server") == OnInstance {
		srv, err := r.Create(ctx, "server", port)
		if err != nil {
			return nil, err
		}
		facts := srv.Facts(ctx)
		tags["network"] = facts["network"]
		if np := facts["nat_path"]; np != "" {
			tags["nat_path"] = np
		}
		addr, err := address(ctx, srv, "server")
		if err != nil {
			return nil, err
		}
		// the host dials the published port where the engine publishes
		// one (network=nat), else the instance's address
		hostDial, err := platform.Endpoint(ctx, srv, port)
		if err != nil {
			return nil, fmt.Errorf("netbench: server instance endpoint: %w", err)
		}
		if h, _, err := net.SplitHostPort(hostDial); err != nil {
			return nil, fmt.Errorf("netbench: server endpoint %q: %w", hostDial, err)
		} else if err := checkAddr(h); err != nil {
			return nil, err
		}
		params := spec.Canonical(map[string]string{"bind": addr, "port": strconv.Itoa(port), "timeout": (timeout(r.p) + time.Minute).String(), "watch-stdin": "true", "cpu": r.p.Str("server-cpu"), "shared-cpu": strconv.FormatBool(sharedCPU(r.p))})
		sess := agenthost.Start(ctx, srv, ServerName, params)
		if err := hostside.Begin(ctx, sess); err != nil {
			return nil, fmt.Errorf("netbench: server instance: %w", err)
		}
		serverAddr = net.JoinHostPort(addr, strconv.Itoa(port))
		hostServerAddr = hostDial
		stopServer = func(ctx context.Context) error {
			if err := sendStop(ctx, hostDial); err != nil {
				sess.Abort()
				return err
			}
			if _, _, err := sess.Result(ctx); err != nil {
				return fmt.Errorf("netbench: server instance: %w", err)
			}
			return nil
		}
	} else {
		addr, err := address(ctx, clients[0], "client")
		if err != nil {
			return nil, err
		}
		bind, err := hostAddrFacing(addr)
		if err != nil {
			return nil, err
		}
		for _, c := range clients[1:] {
			a, err := address(ctx, c, "client")
			if err != nil {
				return nil, err
			}
			if b, err := hostAddrFacing(a); err != nil || b != bind {
				return nil, fmt.Errorf("netbench: client instances are on different networks (%s, %s); the host serves one", addr, a)
			}
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("netbench: host server: %w", err)
		}
		s := newServer(ln)
		s.cpu = r.p.Int("server-cpu")
		s.noYield = sharedCPU(r.p)
		sctx, scancel := context.WithCancel(ctx)
		served := make(chan error, 1)
		go func() { served <- s.Serve(sctx) }()
		defer scancel()
		serverAddr = ln.Addr().String()
		hostServerAddr = serverAddr
		stopServer = func(context.Context) error {
			s.stop()
			return <-served
		}
	}
	if tags["network"] == "" {
		tags["network"] = "unknown"
	}
	dial := serverAddr
	if r.p.Str("client") == OnHost {
		dial = hostServerAddr
	}
	tags["path"] = "direct"
	if dial != serverAddr {
		tags["path"] = "published-port"
	}
	host, portStr, _ := net.SplitHostPort(dial)
	cp := clientParams(r.mode, r.p, host, atoi(portStr))

	var results []workload.InstanceResult
	if r.p.Str("client") == OnInstance {
		results, err = r.instanceClients(ctx, clients, cp, tags)
	} else {
		results, err = r.hostClients(ctx, cp, tags)
	}
	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if serr := stopServer(stopCtx); err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	return results, nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// hostClients runs env.Instances in-process clients, connected first and
// started together.
func (r *run) hostClients(ctx context.Context, cp map[string]string, tags map[string]string) ([]workload.InstanceResult, error) {
	params, err := Client.Resolve(cp)
	if err != nil {
		return nil, err
	}
	cfg := configFrom(params)
	n := r.env.Instances
	cs := make([]*client, n)
	defer func() {
		for _, c := range cs {
			if c != nil {
				c.close()
			}
		}
	}()
	if err := par.Each(n, func(i int) error {
		c, err := prepare(ctx, cfg)
		cs[i] = c
		return err
	}); err != nil {
		return nil, err
	}
	return workload.Together(n, func(i int) (workload.InstanceResult, error) {
		res, err := cs[i].run(ctx)
		if err != nil {
			return workload.InstanceResult{}, fmt.Errorf("client %d: %w", i, err)
		}
		ms, err := metrics(cfg.mode, res)
		if err != nil {
			return workload.InstanceResult{}, fmt.Errorf("client %d: %w", i, err)
		}
		return workload.InstanceResult{Instance: i, Metrics: ms, Tags: maps.Clone(tags)}, nil
	})
}

// instanceClients runs _net-client in every client instance, released
// through a barrier.
func (r *run) instanceClients(ctx context.Context, clients []platform.Instance, cp map[string]string, tags map[string]string) ([]workload.InstanceResult, error) {
	n := len(clients)
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := agenthost.StartGroup(ectx, clients, ClientName, spec.Canonical(cp))
	if _, err := g.Barrier(ectx); err != nil {
		g.Abort()
		return nil, fmt.Errorf("client %w", err)
	}
	ms, _, err := g.Results(ectx)
	if err != nil {
		g.Abort()
		return nil, fmt.Errorf("client %w", err)
	}
	results := make([]workload.InstanceResult, n)
	for i := range ms {
		results[i] = workload.InstanceResult{Instance: i, Metrics: ms[i], Tags: maps.Clone(tags)}
	}
	return results, nil
}
