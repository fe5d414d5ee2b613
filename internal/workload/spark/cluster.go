package spark

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/par"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/hostside"
)

// Names of the cluster workload and its hidden in-guest halves.
const (
	ClusterName = "spark-cluster"
	PrepareName = "_spark-prepare" // generates the input in an instance
	DriverName  = "_spark-driver"  // submits the job to a standalone master
)

// Standalone cluster ports inside the instances.
const (
	masterPort   = 7077
	masterUIPort = 8080
	workerUIPort = 8081
)

// clusterHome is Spark's home in the spark image.
const clusterHome = image.SparkPySparkDir + "/pyspark"

// clusterOf is the local-mode parameters as the cluster takes them:
// without executors (local mode's thread multiplier; the cluster has one
// executor per worker) and with cores and memory said in its terms.
func clusterOf(local []workload.Param) []workload.Param {
	var ps []workload.Param
	for _, p := range local {
		switch p.Name {
		case "executors":
			continue
		case "cores":
			p.Help = "cores of each worker (its one executor)"
		case "memory":
			p.Help = "driver memory"
		}
		ps = append(ps, p)
	}
	return ps
}

func paramsWith(extra ...workload.Param) []workload.Param {
	ps := append([]workload.Param(nil), Def.Params...)
	return append(ps, extra...)
}

// clusterParams are the cluster workload's: the job's (cores per worker,
// memory the driver's; not executors: one executor per worker), the
// worker count, and the workers' executor memory.
var clusterParams = append(clusterOf(Def.Params),
	workload.Param{Name: "cluster", Kind: workload.Int, Default: "2", Min: 1, Max: 64, Help: "workers (one instance each) besides the master and driver's instance"},
	workload.Param{Name: "executor-memory", Kind: workload.Size, Default: "1g", Min: 256 << 20, Max: 1 << 40, Help: "memory of each worker's executor"},
)

// ClusterDef is the spark-cluster workload: a Spark standalone cluster over
// cluster+1 instances (the master and the driver in the first, a worker in
// each other) running one job, as study 003 spreads HiBench over 8 nodes.
var ClusterDef = workload.Def{
	Needs: workload.Needs{Network: true, Image: image.Spark},
	Name:  ClusterName,
	Estimate: func(p workload.Params) time.Duration {
		// the master, workers and driver start, each worker's instance
		// comes up, and the job runs at ~20 MB/s on 2 cores
		return workload.Seconds(25 + 2*float64(p.Int("cluster")) + float64(p.Size("size"))/20e6)
	},
	Help:   "HiBench on a Spark standalone cluster: master and driver in one instance, a worker (one executor of cores cores) in each of cluster others; uses the spark image (native: the host's Spark, every daemon on a port of its own); job duration and throughput, output verified",
	Params: clusterParams,
	Derive: Def.Derive,
	Host:   runCluster,
	Timeout: func(p workload.Params) time.Duration {
		return Def.Timeout(p) + 5*time.Minute
	},
}

var prepareDef = workload.Def{
	Name:     PrepareName,
	Internal: true,
	Help:     "internal: generates a spark job's input in the instance's scratch directory",
	Params:   Def.Params,
	Derive:   Def.Derive,
	Agent:    prepareAgent,
	Timeout:  Def.Timeout,
}

var driverDef = workload.Def{
	Name:     DriverName,
	Internal: true,
	Help:     "internal: submits a spark job to a standalone master and checks its output",
	Params: paramsWith(
		workload.Param{Name: "master", Kind: workload.String, Help: "spark://host:port"},
		workload.Param{Name: "driver-host", Kind: workload.String, Help: "the address executors reach the driver at"},
		workload.Param{Name: "executor-memory", Kind: workload.Size, Default: "1g", Min: 256 << 20, Max: 1 << 40, Help: "executor memory"},
	),
	Derive:  Def.Derive,
	Agent:   driverAgent,
	Timeout: Def.Timeout,
}

// Defs returns the spark workloads: local mode, the standalone cluster and
// the cluster's hidden halves.
func Defs() []workload.Def { return []workload.Def{Def, ClusterDef, prepareDef, driverDef} }

func prepareAgent(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	dir, err := workload.Scratch()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	j, err := Prepare(dir, p)
	if err != nil {
		return nil, err
	}
	if err := ready(); err != nil {
		return nil, err
	}
	return []sample.Metric{
		{Name: "input_bytes", Value: float64(j.Bytes), Unit: "B", Better: sample.Higher, Agg: sample.Max},
		{Name: "prepare_time", Value: time.Since(start).Seconds(), Unit: "s", Better: sample.Lower, Agg: sample.Max},
	}, nil
}

func driverAgent(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	host := p.Str("driver-host")
	if p.Str("master") == "" || host == "" {
		return nil, errors.New("spark driver: master and driver-host are required")
	}
	return submitJob(ctx, p, ready, Submit{
		Master: p.Str("master"), Memory: p.Size("memory"),
		ExecutorCores: p.Int("cores"), ExecutorMemory: p.Size("executor-memory"),
		ConfExtra: []string{
			"spark.driver.host=" + host, "spark.driver.bindAddress=" + host,
			"spark.executorEnv.PYTHONPATH=" + image.SparkPySparkDir,
			"spark.executorEnv.PYSPARK_PYTHON=python3",
		},
	})
}

// daemonScript starts a Spark daemon in the foreground inside an instance:
// it finds Spark as Find does ($SPARK_HOME, the spark image's pyspark, or
// python3's pyspark package: a native instance uses the host's) and puts
// the worker's files in the instance's scratch directory.
const daemonScript = `h="${SPARK_HOME:-}"
[ -x "$h/bin/spark-class" ] || h=` + clusterHome + `
[ -x "$h/bin/spark-class" ] || h=$(python3 -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))') || exit 127
s="${` + guestenv.ScratchEnv + `:-` + guestenv.ScratchDir + `}"
export SPARK_HOME="$h" SPARK_NO_DAEMONIZE=1 PYSPARK_PYTHON=python3 SPARK_WORKER_DIR="$s/spark-work" SPARK_LOCAL_DIRS="$s/spark-local"
if [ -d ` + image.SparkPySparkDir + ` ]; then export PYTHONPATH=` + image.SparkPySparkDir + `; fi
exec "$h/bin/spark-class" "$@"`

// daemonArgv runs Spark daemon class with args inside an instance.
func daemonArgv(class string, args ...string) []string {
	return append([]string{"sh", "-c", daemonScript, "spark-daemon", class}, args...)
}

// daemon is a Spark master or worker running in an instance.
type daemon struct {
	name string
	out  tailWriter
	mu   sync.Mutex
	done chan error
}

func startDaemon(ctx context.Context, in platform.Instance, name string, argv []string) *daemon {
	d := &daemon{name: name, done: make(chan error, 1)}
	w := lockedWriter{mu: &d.mu, w: &d.out}
	go func() { d.done <- in.Exec(ctx, argv, platform.ExecIO{Stdout: w, Stderr: w}) }()
	return d
}

func (d *daemon) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.out.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *tailWriter
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// masterState is the part of the master's /json/ page we read.
type masterState struct {
	Status       string `json:"status"`
	AliveWorkers int    `json:"aliveworkers"`
}

// waitWorkers polls the master's status page until n workers are alive,
// a daemon exits, or ctx ends.
func waitWorkers(ctx context.Context, ui string, n int, daemons []*daemon) error {
	c := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	last := "no answer"
	for {
		for _, d := range daemons {
			select {
			case err := <-d.done:
				return fmt.Errorf("spark cluster: the %s exited (%v): %s", d.name, err, d.log())
			default:
			}
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ui+"/json/", nil)
		if resp, err := c.Do(req); err == nil {
			var st masterState
			var buf bytes.Buffer
			buf.ReadFrom(resp.Body)
			resp.Body.Close()
			if json.Unmarshal(buf.Bytes(), &st) == nil {
				if st.Status == "ALIVE" && st.AliveWorkers >= n {
					return nil
				}
				last = fmt.Sprintf("status %s, %d of %d workers alive", st.Status, st.AliveWorkers, n)
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("spark cluster: waiting for %d workers at %s: %w (last: %s)", n, ui, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func runCluster(ctx context.Context, p workload.Params, env workload.HostEnv) ([]workload.InstanceResult, error) {
	n := p.Int("cluster")
	insts := make([]platform.Instance, n+1)
	var mu sync.Mutex
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		mu.Lock()
		defer mu.Unlock()
		par.Each(len(insts), func(i int) error {
			if insts[i] != nil {
				insts[i].Close(cctx)
			}
			return nil
		})
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := par.Each(n+1, func(i int) error {
		s := env.Base
		s.Name = env.NewName()
		s.Image = image.Spark
		s.Ports = []int{masterPort, masterUIPort}
		in, err := env.Platform.Create(ctx, s)
		mu.Lock()
		insts[i] = in
		mu.Unlock()
		if err != nil {
			return fmt.Errorf("spark cluster: create instance %d: %w", i, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	addrs := make([]string, n+1)
	for i, in := range insts {
		a, err := in.Address(ctx)
		if err != nil {
			return nil, fmt.Errorf("spark cluster: instance %d address: %w", i, err)
		}
		addrs[i] = a
	}
	ports, err := clusterPorts(addrs)
	if err != nil {
		return nil, err
	}
	// HiBench's prepare: the same seeded input on every node (no shared
	// file system: each executor reads its splits from its own disk).
	prep := p.Raw()
	delete(prep, "cluster")
	delete(prep, "executor-memory")
	g := agenthost.StartGroup(ctx, insts, PrepareName, spec.Canonical(prep))
	if _, err := g.Barrier(ctx); err != nil {
		g.Abort()
		return nil, fmt.Errorf("spark cluster: preparing the input: %w", err)
	}
	if _, _, err := g.Results(ctx); err != nil {
		return nil, fmt.Errorf("spark cluster: preparing the input: %w", err)
	}
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	master := "spark://" + net.JoinHostPort(addrs[0], strconv.Itoa(ports.master))
	daemons := []*daemon{startDaemon(dctx, insts[0], "master", daemonArgv("org.apache.spark.deploy.master.Master",
		"--host", addrs[0], "--port", strconv.Itoa(ports.master), "--webui-port", strconv.Itoa(ports.masterUI)))}
	for i := 1; i <= n; i++ {
		daemons = append(daemons, startDaemon(dctx, insts[i], fmt.Sprintf("worker %d", i), daemonArgv("org.apache.spark.deploy.worker.Worker",
			"--host", addrs[i], "--cores", strconv.Itoa(p.Int("cores")),
			"--memory", strconv.FormatInt(p.Size("executor-memory")>>20, 10)+"m",
			"--webui-port", strconv.Itoa(ports.workerUI[i-1]), master)))
	}
	ui, err := platform.Endpoint(ctx, insts[0], ports.masterUI)
	if err != nil {
		return nil, fmt.Errorf("spark cluster: master UI: %w", err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Minute)
	err = waitWorkers(wctx, ui, n, daemons)
	wcancel()
	if err != nil {
		return nil, err
	}
	raw := p.Raw()
	delete(raw, "cluster")
	raw["master"] = master
	raw["driver-host"] = addrs[0]
	sess := agenthost.Start(ctx, insts[0], DriverName, spec.Canonical(raw))
	if err := hostside.Begin(ctx, sess); err != nil {
		return nil, fmt.Errorf("spark cluster: driver: %w", err)
	}
	ms, _, err := sess.Result(ctx)
	if err != nil {
		return nil, fmt.Errorf("spark cluster: driver: %w (master: %s)", err, daemons[0].log())
	}
	tags := map[string]string{"workers": strconv.Itoa(n), "network": insts[0].Facts(ctx)["network"]}
	if ports.shared {
		tags["cluster_address"] = "shared"
	}
	return []workload.InstanceResult{{Instance: 0, Metrics: ms, Tags: tags}}, nil
}

// ports are a cluster's listening ports.
type ports struct {
	master, masterUI int
	workerUI         []int // one per worker
	shared           bool  // every instance has the same address
}

// clusterPorts checks the instances' addresses and picks the daemons'
// ports. Instances with their own addresses (a bridge) use Spark's usual
// ports in each. Instances sharing one address (native, network=host) run
// the cluster on that address as processes of one machine, each daemon on
// a port of its own (the ports the workers, executors and driver pick for
// themselves are random already). Mixed or missing addresses are refused.
func clusterPorts(addrs []string) (ports, error) {
	pt := ports{master: masterPort, masterUI: masterUIPort}
	seen := map[string]bool{}
	for i, a := range addrs {
		if a == "" || net.ParseIP(a) == nil {
			return pt, fmt.Errorf("spark cluster: instance %d has no address (%q): a cluster needs a network (bridge, host or native)", i, a)
		}
		seen[a] = true
	}
	switch {
	case len(seen) == len(addrs):
		for range addrs[1:] {
			pt.workerUI = append(pt.workerUI, workerUIPort)
		}
		return pt, nil
	case len(seen) != 1:
		return pt, fmt.Errorf("spark cluster: instances %v share some addresses but not all: want one address each, or one for all", addrs)
	}
	pt.shared = true
	free := make([]int, len(addrs)+1)
	for i := range free {
		p, err := hostnet.FreePort(addrs[0], free[:i]...)
		if err != nil {
			// not an address of this machine (a remote host's): Spark's
			// usual ports, the workers' UIs on the ports after the master's
			for i := range free {
				free[i] = masterUIPort + i - 1
			}
			free[0] = masterPort
			break
		}
		free[i] = p
	}
	pt.master, pt.masterUI, pt.workerUI = free[0], free[1], free[2:]
	return pt, nil
}
