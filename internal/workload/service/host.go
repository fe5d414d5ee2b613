package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/par"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/tools/ab"
	"github.com/isobench/isobench/internal/tools/redisbench"
	"github.com/isobench/isobench/internal/tools/wrk"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/hostside"
)

// Client placements.
const (
	OnHost     = "host"
	OnInstance = "instance"
)

// Image is the image profile the service workloads need in instances.
const Image = image.Debian

// Defs are the service workloads with their hidden in-guest halves;
// register all of them (the agent needs the hidden ones).
func Defs() []workload.Def { return []workload.Def{HTTP, RedisDef, OLTP, Server, LogTail} }

func commonParams() []workload.Param {
	return []workload.Param{
		{Name: "client", Kind: workload.Enum, Enum: []string{OnHost, OnInstance}, Default: OnHost, Help: "where the load generators run: on the host (over the platform's network; the published port with network=nat) or in client instances; one client per instance count"},
		{Name: "port", Kind: workload.Int, Default: "0", Min: 0, Max: 65535, Help: "server port; 0 picks a free one"},
		{Name: "max-conns", Kind: workload.Int, Default: "0", Min: 0, Max: 1 << 20, Help: "connections the server accepts at once (nginx worker_connections, Apache MaxRequestWorkers, redis maxclients, mariadb max_connections); 0: plenty"},
	}
}

// HTTP serves a static file with nginx or Apache to ab or wrk.
var HTTP = workload.Def{
	Needs: workload.Needs{Network: true, Servers: true, HostTools: httpHostTools},
	Name:  "http",
	Estimate: func(p workload.Params) time.Duration {
		// server start, then ab's fixed requests at ~5000/s on 2 cores
		// (thousands of connections), or wrk for its duration
		if p.Str("tool") == "wrk" {
			return p.Duration("duration") + 2*time.Second
		}
		return workload.Seconds(2 + float64(p.Int("requests"))/5000)
	},
	Help: "nginx or Apache serving a static file to ab or wrk (study 004: Apache with ab at 1k-8k users): total time, requests/s, transfer rate, latency p50/p99, failed requests; uses the debian image (native: the host's nginx/apache2)",
	Params: append(commonParams(),
		workload.Param{Name: "server", Kind: workload.Enum, Enum: []string{Nginx, Apache}, Default: Nginx, Help: "web server"},
		workload.Param{Name: "tool", Kind: workload.Enum, Enum: []string{"ab", "wrk"}, Default: "ab", Help: "load generator"},
		workload.Param{Name: "users", Kind: workload.Int, Default: "100", Min: 1, Max: 100000, Help: "concurrent connections per client (ab -c, wrk -c)"},
		workload.Param{Name: "requests", Kind: workload.Int, Default: "10000", Min: 1, Max: 1 << 40, Help: "ab: requests per client (ab -n)"},
		workload.Param{Name: "duration", Kind: workload.Duration, Default: "10s", Min: 1, Max: 86400, Help: "wrk: how long each client runs (wrk -d)"},
		workload.Param{Name: "size", Kind: workload.Size, Default: "4k", Min: 0, Max: 1 << 30, Help: "bytes of the static file served"},
	),
	Check: func(p workload.Params) error {
		if p.Str("tool") == "ab" && p.Int("requests") < p.Int("users") {
			return fmt.Errorf("ab needs requests (%d) >= users (%d)", p.Int("requests"), p.Int("users"))
		}
		return nil
	},
	Host:    hostRun(httpKind),
	Timeout: func(p workload.Params) time.Duration { return p.Duration("duration") + 10*time.Minute },
}

// clientOnHost: the load generators run on the host (client=host).
func clientOnHost(p workload.Params) bool {
	c := p.Str("client")
	return c == "" || c == OnHost
}

// hostTools is a service workload's Needs.HostTools: its load generator
// when the clients run on the host, its server on native.
func hostTools(client, server workload.Tool) func(workload.Params, bool) []workload.Tool {
	return func(p workload.Params, native bool) []workload.Tool {
		var need []workload.Tool
		if clientOnHost(p) {
			need = append(need, client)
		}
		if native {
			need = append(need, server)
		}
		return need
	}
}

// httpHostTools is http's Needs.HostTools: ab or wrk when the clients run
// on the host, nginx or apache2 on native.
func httpHostTools(p workload.Params, native bool) []workload.Tool {
	client, server := workload.Need("ab", "apache2-utils"), workload.Need("nginx", "nginx")
	if p.Str("tool") == "wrk" {
		client = workload.Need("wrk", "wrk")
	}
	if p.Str("server") == Apache {
		server = workload.Need("apache2", "apache2")
	}
	return hostTools(client, server)(p, native)
}

// RedisDef runs redis-benchmark against redis-server.
var RedisDef = workload.Def{
	Needs: workload.Needs{Network: true, Servers: true, HostTools: hostTools(workload.Need("redis-benchmark", "redis-tools"), workload.Need("redis-server", "redis-server"))},
	Name:  "redis",
	Estimate: func(p workload.Params) time.Duration {
		// pipelined GET/SET at ~200k ops/s
		ops := float64(len(strings.Split(p.Str("ops"), "+")))
		return workload.Seconds(1 + ops*float64(p.Int("requests"))/200e3)
	},
	Help: "redis-server under redis-benchmark -P 16 (study 003: GET and SET at 1-16 connections): ops/s and latency p50/p99 per operation; uses the debian image (native: the host's redis-server)",
	Params: append(commonParams(),
		workload.Param{Name: "connections", Kind: workload.Int, Default: "4", Min: 1, Max: 10000, Help: "parallel connections per client (redis-benchmark -c)"},
		workload.Param{Name: "ops", Kind: workload.String, Default: "get+set", Help: "operations, '+'-separated (redis-benchmark -t), e.g. get+set"},
		workload.Param{Name: "requests", Kind: workload.Int, Default: "200000", Min: 1, Max: 1 << 40, Help: "requests per operation (redis-benchmark -n)"},
		workload.Param{Name: "pipeline", Kind: workload.Int, Default: "16", Min: 1, Max: 10000, Help: "requests in flight per connection (redis-benchmark -P)"},
		workload.Param{Name: "keyspace", Kind: workload.Int, Default: "100000", Min: 1, Max: 1 << 40, Help: "random keys (redis-benchmark -r)"},
	),
	Check: func(p workload.Params) error {
		for _, op := range strings.Split(p.Str("ops"), "+") {
			if !validOp(op) {
				return fmt.Errorf("ops=%q: %q is not a redis-benchmark test (e.g. get, set, incr, lpush)", p.Str("ops"), op)
			}
		}
		return nil
	},
	Host:    hostRun(redisKind),
	Timeout: func(workload.Params) time.Duration { return 20 * time.Minute },
}

func validOp(op string) bool {
	if op == "" {
		return false
	}
	for _, r := range op {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// OLTP runs sysbench oltp against MariaDB.
var OLTP = workload.Def{
	Needs: workload.Needs{Network: true, Servers: true, HostTools: hostTools(workload.Need("sysbench", "sysbench"), workload.Need("mariadbd", "mariadb-server"))},
	Name:  "oltp",
	Estimate: func(p workload.Params) time.Duration {
		// the table is prepared once per platform (cached): count a share
		return p.Duration("duration") + workload.Seconds(2+float64(p.Int("table-size"))/1e6*10)
	},
	Help: "MariaDB under sysbench oltp_read_only|oltp_read_write (study 003: 1M rows, 1-16 threads): tps, qps, latency p95; the table is prepared untimed, once, and reused by later repetitions; uses the debian image (native: the host's mariadb-server)",
	Params: append(commonParams(),
		workload.Param{Name: "test", Kind: workload.Enum, Enum: []string{"oltp_read_only", "oltp_read_write"}, Default: "oltp_read_only", Help: "sysbench test"},
		workload.Param{Name: "table-size", Kind: workload.Int, Default: "1000000", Min: 1, Max: 1 << 40, Help: "rows in the table"},
		workload.Param{Name: "threads", Kind: workload.Int, Default: "4", Min: 1, Max: 10000, Help: "sysbench threads per client"},
		workload.Param{Name: "duration", Kind: workload.Duration, Default: "10s", Min: 1, Max: 86400, Help: "how long each client runs"},
	),
	Host:    hostRun(oltpKind),
	Timeout: func(p workload.Params) time.Duration { return p.Duration("duration") + 30*time.Minute },
}

// kind describes one service workload to the shared lifecycle.
type kind struct {
	server func(workload.Params) string
	// clientArgv is the load generator's command line against addr; pw
	// is the server's password (redis, mariadb).
	clientArgv func(p workload.Params, host string, port int, pw string) ([]string, error)
	// stdin, when set, is what the load generator reads on its standard
	// input: the password, where the tool takes it there.
	stdin func(pw string) string
	parse func(io.Reader) ([]sample.Metric, error)
	// prepareArgv, when set, runs once before the clients, untimed.
	prepareArgv func(p workload.Params, host string, port int, pw string) ([]string, error)
	tags        func(workload.Params) map[string]string
	// deadline, when set, bounds each client run.
	deadline func(workload.Params) time.Duration
}

var httpKind = kind{
	server: func(p workload.Params) string { return p.Str("server") },
	clientArgv: func(p workload.Params, host string, port int, _ string) ([]string, error) {
		url := "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/index.html"
		if p.Str("tool") == "wrk" {
			a, err := wrk.Options{URL: url, Connections: p.Int("users"), Threads: min(p.Int("users"), runtime.NumCPU()), Duration: p.Duration("duration"), Latency: true}.Args()
			return append([]string{wrk.Binary}, a...), err
		}
		a, err := ab.Options{URL: url, Requests: p.Int("requests"), Concurrency: p.Int("users")}.Args()
		return append([]string{ab.Binary}, a...), err
	},
	tags: func(p workload.Params) map[string]string {
		return map[string]string{"server": p.Str("server"), "tool": p.Str("tool")}
	},
}

var redisKind = kind{
	server: func(workload.Params) string { return Redis },
	// redis-benchmark takes the password only in its arguments (-a): the
	// password is made for each repetition and errors never quote it
	// (redact)
	clientArgv: func(p workload.Params, host string, port int, pw string) ([]string, error) {
		a, err := redisbench.Options{Host: host, Port: port, Password: pw, Clients: p.Int("connections"), Requests: p.Int("requests"),
			Pipeline: p.Int("pipeline"), KeySpace: p.Int("keyspace"), Tests: strings.Split(p.Str("ops"), "+")}.Args()
		return append([]string{redisbench.Binary}, a...), err
	},
	parse: parseRedis,
	tags: func(workload.Params) map[string]string {
		return map[string]string{"server": Redis, "tool": "redis-benchmark"}
	},
	// redis-benchmark retries a connection forever: a deadline assuming
	// at least 2,000 requests/s ends a run that cannot connect
	deadline: func(p workload.Params) time.Duration {
		ops := len(strings.Split(p.Str("ops"), "+"))
		return time.Minute + time.Duration(p.Int("requests")*ops/2000)*time.Second
	},
}

// sysbenchConfig is the file sysbench reads on its standard input
// (--config-file): the password, which so never is in its arguments.
const sysbenchConfig = "/proc/self/fd/0"

func sysbenchArgs(p workload.Params, host string, port int, threads int, cmd string) []string {
	a := []string{"sysbench", p.Str("test"), "--config-file=" + sysbenchConfig, "--db-driver=mysql", "--mysql-host=" + host, "--mysql-port=" + strconv.Itoa(port),
		"--mysql-user=" + dbUser, "--mysql-db=" + dbName,
		"--tables=1", "--table-size=" + strconv.Itoa(p.Int("table-size")), "--threads=" + strconv.Itoa(threads)}
	if cmd == "run" {
		a = append(a, "--time="+strconv.Itoa(int(p.Duration("duration").Seconds())), "--report-interval=0", "--db-ps-mode=auto")
	}
	return append(a, cmd)
}

var oltpKind = kind{
	server: func(workload.Params) string { return MariaDB },
	clientArgv: func(p workload.Params, host string, port int, _ string) ([]string, error) {
		return sysbenchArgs(p, host, port, p.Int("threads"), "run"), nil
	},
	stdin: func(pw string) string { return "mysql-password=" + pw + "\n" },
	parse: parseOLTP,
	prepareArgv: func(p workload.Params, host string, port int, _ string) ([]string, error) {
		return sysbenchArgs(p, host, port, 1, "prepare"), nil
	},
	tags: func(p workload.Params) map[string]string {
		return map[string]string{"server": MariaDB, "tool": "sysbench", "test": p.Str("test")}
	},
}

func (k kind) parser(p workload.Params) func(io.Reader) ([]sample.Metric, error) {
	if k.parse != nil {
		return k.parse
	}
	if p.Str("tool") == "wrk" {
		return parseWrk
	}
	return parseAB
}

// run is one repetition's state.
type run struct {
	k   kind
	p   workload.Params
	env workload.HostEnv
	*workload.Instances
	// seeded: the server got an earlier repetition's prepared table
	seeded bool
	// pw is the server's password, made for this repetition
	pw string
}

func hostRun(k kind) workload.HostFunc {
	return func(ctx context.Context, p workload.Params, env workload.HostEnv) ([]workload.InstanceResult, error) {
		var err error
		if env.Base.Image, err = EnsureImage(ctx, env.Platform, env.Base.Image); err != nil {
			return nil, err
		}
		return workload.WithInstances(ctx, env, k.server(p), func(ctx context.Context, g *workload.Instances) ([]workload.InstanceResult, error) {
			return (&run{k: k, p: p, env: env, Instances: g}).do(ctx)
		})
	}
}

// checkAddr refuses anything but loopback and private addresses.
func checkAddr(addr string) error { return hostside.CheckAddr("service", addr) }

func freePort() (int, error) { return hostnet.FreePort("127.0.0.1") }

func (r *run) do(ctx context.Context) ([]workload.InstanceResult, error) {
	n := r.env.Instances
	if n < 1 {
		return nil, errors.New("service: need at least one client")
	}
	kindName := r.k.server(r.p)
	port, err := hostside.Port(r.p.Int("port"))
	if err != nil {
		return nil, err
	}
	tags := r.k.tags(r.p)
	tags["client"] = r.p.Str("client")

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
	}

	// instance_ready_ms counts from here (see ready.go)
	created := time.Now()
	var untimed time.Duration
	srv, err := r.Create(ctx, "server", port)
	if err != nil {
		return nil, err
	}
	t := time.Now()
	facts := srv.Facts(ctx) // the platform's bookkeeping (an engine's inspect): untimed
	untimed += time.Since(t)
	tags["network"] = facts["network"]
	if tags["network"] == "" {
		tags["network"] = "unknown"
	}
	if np := facts["nat_path"]; np != "" {
		tags["nat_path"] = np
	}
	addr, err := hostside.Address(ctx, srv, kindName, "server", "service workloads need bridge, nat or host")
	if err != nil {
		return nil, err
	}
	// the server listens on the instance's own address only: its address
	// on the isobench network, loopback where the instance shares the
	// host's network (native, network=host), never every interface
	bind := addr
	hostDial, err := platform.Endpoint(ctx, srv, port)
	if err != nil {
		return nil, fmt.Errorf("%s: server endpoint: %w", kindName, err)
	}
	hostHost, hostPortS, err := net.SplitHostPort(hostDial)
	if err != nil {
		return nil, fmt.Errorf("%s: server endpoint %q: %w", kindName, hostDial, err)
	}
	if err := checkAddr(hostHost); err != nil {
		return nil, err
	}
	hostPort, _ := strconv.Atoi(hostPortS)
	// the clients' connections end in TIME_WAIT in the host's network
	// namespace (native's server side too): destroyed when the repetition
	// ends, so the next starts with the host's ports as this one found
	// them, without the settler's 60 s wait; where the kernel cannot, the
	// settler waits for them (hoststate)
	defer func() {
		var eps []netip.AddrPort
		for _, ep := range []string{hostDial, net.JoinHostPort(addr, strconv.Itoa(port))} {
			if ap, err := netip.ParseAddrPort(ep); err == nil {
				eps = append(eps, ap)
			}
		}
		hostnet.ResetTimeWait(context.WithoutCancel(ctx), eps...)
	}()

	sp := map[string]string{"kind": kindName, "bind": bind, "port": strconv.Itoa(port), "max-conns": r.p.Str("max-conns")}
	if v, ok := r.p.Raw()["size"]; ok {
		sp["size"] = v
	}
	if d := ReadyTimeout(facts, defaultReadyTimeout); d != defaultReadyTimeout {
		sp["ready-timeout"] = DurationParam(d)
	}
	// oltp: the table prepared by an earlier repetition, when there is one
	// (untimed: isobench's bookkeeping, not the service's start)
	var seedFile string
	r.seeded = false
	if r.k.prepareArgv != nil {
		t = time.Now()
		if seedFile, err = r.seedFile(ctx, srv, clients); err != nil {
			return nil, fmt.Errorf("%s: %w", kindName, err)
		}
		if _, err := os.Stat(seedFile); err == nil {
			if err := importSeed(ctx, srv, seedFile); err != nil {
				return nil, fmt.Errorf("%s: %w", kindName, err)
			}
			r.seeded = true
		}
		untimed += time.Since(t)
	}
	tags["prepared"] = map[bool]string{true: "reused", false: "now"}[r.seeded]
	if r.k.prepareArgv == nil {
		delete(tags, "prepared")
	}

	if r.pw, err = NewPassword(); err != nil {
		return nil, err
	}
	sess := agenthost.StartWith(ctx, srv, ServerName, spec.Canonical(sp), agenthost.Options{Secrets: map[string]string{"password": r.pw}})
	if err := sess.WaitReady(ctx); err != nil {
		sess.Abort()
		return nil, fmt.Errorf("%s: %w", kindName, err)
	}
	hostReady := time.Since(created) - untimed
	if err := sess.Release(); err != nil {
		return nil, fmt.Errorf("%s: %w", kindName, err)
	}
	if err := sess.WaitStarted(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", kindName, err)
	}

	dialHost, dialPort := hostHost, hostPort
	tags["path"] = "direct"
	if r.p.Str("client") == OnInstance {
		dialHost, dialPort = addr, port
	} else if hostDial != net.JoinHostPort(addr, strconv.Itoa(port)) {
		tags["path"] = "published-port"
	}

	results, cerr := r.clients(ctx, clients, dialHost, dialPort, tags)
	if cerr != nil {
		// the server's side of the story
		cerr = fmt.Errorf("%s: %w; %s", kindName, cerr, r.serverLog(ctx, srv, kindName))
	}
	sess.Abort() // closes the agent's input: it stops the server and reports
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ms, _, serr := sess.Result(sctx)
	if cerr != nil {
		return nil, cerr
	}
	if serr != nil {
		return nil, fmt.Errorf("%s: %w", kindName, serr)
	}
	if seedFile != "" && !r.seeded {
		// the server stopped cleanly: keep its freshly prepared table
		if err := exportSeed(ctx, srv, seedFile); err != nil {
			return nil, fmt.Errorf("%s: %w", kindName, err)
		}
	}
	results[0].Metrics = append(results[0].Metrics, WithInstanceReady(ms, hostReady)...)
	return results, nil
}

// seedFile is where the table the prepare step makes for the server in srv
// is kept (see seed.go).
func (r *run) seedFile(ctx context.Context, srv platform.Instance, clients []platform.Instance) (string, error) {
	argv, err := r.k.prepareArgv(r.p, "", 0, "")
	if err != nil {
		return "", err
	}
	var v string
	if clients == nil {
		out, err := exec.CommandContext(ctx, argv[0], "--version").Output()
		if err != nil {
			return "", fmt.Errorf("%s --version: %w", argv[0], err)
		}
		v = string(out)
	} else if v, err = execOut(ctx, clients[0], argv[0], "--version"); err != nil {
		return "", err
	}
	key, err := seedKey(ctx, srv, argv, v)
	if err != nil {
		return "", err
	}
	return filepath.Join(SeedDir(), key+".tar"), nil
}

// serverLog fetches the last lines of the server's log from inside its
// instance.
func (r *run) serverLog(ctx context.Context, srv platform.Instance, kindName string) string {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s := agenthost.Start(lctx, srv, LogName, spec.Canonical(map[string]string{"kind": kindName}))
	err := s.WaitReady(lctx)
	s.Abort()
	if err == nil {
		return logMarker + "(none)"
	}
	msg := err.Error()
	if i := strings.Index(msg, logMarker); i >= 0 {
		return msg[i:]
	}
	return logMarker + "(unavailable: " + msg + ")"
}

// clients runs the load generator once per client, on the host or in the
// client instances, started together; the untimed prepare step first.
func (r *run) clients(ctx context.Context, clients []platform.Instance, host string, port int, tags map[string]string) ([]workload.InstanceResult, error) {
	n := r.env.Instances
	raiseNoFile()
	runTool := func(ctx context.Context, i int, argv []string) (string, error) {
		var out bytes.Buffer
		var err error
		var stdin io.Reader
		if r.k.stdin != nil {
			stdin = strings.NewReader(r.k.stdin(r.pw))
		}
		if clients == nil {
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &out, stdin
			if err = cmd.Run(); errors.Is(err, exec.ErrNotFound) {
				err = fmt.Errorf("%s is not installed on the host: %w", argv[0], err)
			}
		} else {
			err = clients[i].Exec(ctx, argv, platform.ExecIO{Stdin: stdin, Stdout: &out, Stderr: &out})
		}
		return redactString(out.String(), r.pw), redact(err, r.pw)
	}
	if r.k.prepareArgv != nil && !r.seeded {
		argv, err := r.k.prepareArgv(r.p, host, port, r.pw)
		if err != nil {
			return nil, err
		}
		if out, err := runTool(ctx, 0, argv); err != nil {
			return nil, fmt.Errorf("prepare (%s): %w: %s", strings.Join(argv[:2], " "), err, lastLines(out, 5))
		}
	}
	parse := r.k.parser(r.p)
	argv, err := r.k.clientArgv(r.p, host, port, r.pw)
	if err != nil {
		return nil, err
	}
	return workload.Together(n, func(i int) (workload.InstanceResult, error) {
		cctx := ctx
		if r.k.deadline != nil {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(ctx, r.k.deadline(r.p))
			defer cancel()
		}
		out, err := runTool(cctx, i, argv)
		if cctx.Err() != nil && ctx.Err() == nil {
			return workload.InstanceResult{}, fmt.Errorf("client %d: %s did not finish within %v (it cannot connect?): %s", i, argv[0], r.k.deadline(r.p), lastLines(out, 3))
		}
		ms, perr := parse(strings.NewReader(out))
		if perr != nil {
			if err != nil {
				perr = fmt.Errorf("%w (%v): %s", perr, err, lastLines(out, 3))
			}
			return workload.InstanceResult{}, fmt.Errorf("client %d: %w", i, perr)
		}
		if err != nil {
			return workload.InstanceResult{}, fmt.Errorf("client %d: %s: %w: %s", i, argv[0], err, lastLines(out, 3))
		}
		return workload.InstanceResult{Instance: i, Metrics: ms, Tags: maps.Clone(tags)}, nil
	})
}

// redact replaces secret in err's message (an exec error quotes the
// command line, redis-benchmark's -a): failure records keep messages.
// The error still unwraps to err.
func redact(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &redacted{msg: redactString(err.Error(), secret), err: err}
}

func redactString(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "<redacted>")
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// Kinds lists the servers StartServer knows.
var Kinds = []string{Nginx, Apache, Redis, MariaDB}

// Running is a server started by StartServer.
type Running struct {
	sess *agenthost.Session
	kind string
}

// StartServer starts kind's server in inst listening on 127.0.0.1:port
// (nothing outside the instance reaches it) and returns once it answers,
// for workloads that need a service running but drive no clients
// (footprint's service=).
func StartServer(ctx context.Context, inst platform.Instance, kind string, port int) (*Running, error) {
	sp := map[string]string{"kind": kind, "bind": "127.0.0.1", "port": strconv.Itoa(port)}
	pw, err := NewPassword() // nobody connects: a password all the same
	if err != nil {
		return nil, err
	}
	sess := agenthost.StartWith(ctx, inst, ServerName, spec.Canonical(sp), agenthost.Options{Secrets: map[string]string{"password": pw}})
	if err := hostside.Begin(ctx, sess); err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	return &Running{sess: sess, kind: kind}, nil
}

// Stop stops the server and returns its ready_ms, or why it failed (it
// died while running: with its log's last lines).
func (r *Running) Stop(ctx context.Context) ([]sample.Metric, error) {
	r.sess.Abort()
	ms, _, err := r.sess.Result(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.kind, err)
	}
	return slices.DeleteFunc(ms, func(m sample.Metric) bool { return m.Name == SetupMetric }), nil
}

// FreePort asks the kernel for a free port on the host's loopback.
func FreePort() (int, error) { return freePort() }

// Abort closes the server's session without waiting (the instance's
// closing ends it).
func (r *Running) Abort() { r.sess.Abort() }

// ImageFor is the image profile service instances use on a run whose
// profile is given: the busybox profiles (minimal, tools, or none) hold no
// servers, so those become the debian profile; any other is used as given.
func ImageFor(profile string) string {
	switch profile {
	case "", image.Minimal, image.Tools:
		return Image
	}
	return profile
}

// EnsureImage returns the image profile service instances use: the run's,
// unless it is one of the busybox profiles that hold no servers, then the
// debian profile, prepared (built or imported) on platforms that need it
// so that no image work happens inside a measured step.
func EnsureImage(ctx context.Context, p platform.Platform, profile string) (string, error) {
	profile = ImageFor(profile)
	if pr, ok := p.(platform.Preparer); ok {
		if err := pr.Prepare(ctx, profile); err != nil {
			return "", fmt.Errorf("preparing image %s: %w", profile, err)
		}
	}
	return profile, nil
}
