package study

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/stream"
)

// Job is one expanded workload of a plan (one value of a sweep).
type Job struct {
	Spec     string // as written in the study (with the sweep)
	Workload string
	Params   workload.Params
	Sweep    []string
	PerRep   time.Duration // estimated time of one repetition at one instance
}

// Plan is what a study will run: jobs × instance counts × platforms ×
// (warm-up + measured) repetitions, and an estimate of the time.
type Plan struct {
	File      File
	Jobs      []Job
	Cells     int // jobs × instance counts
	Runs      int // repetitions over all cells and platforms (warm-ups included)
	Reps      int // measured repetitions per cell and platform (the cap with auto)
	Estimate  time.Duration
	Available []string // pending workloads this binary has after all
}

// instanceCost is a rough time to create, start and remove one instance.
var instanceCost = map[string]time.Duration{
	"native": 50 * time.Millisecond, "runc": 300 * time.Millisecond, "crun": 250 * time.Millisecond,
	"docker": 700 * time.Millisecond, "podman": 900 * time.Millisecond, "lxc": 600 * time.Millisecond,
	"nspawn": 700 * time.Millisecond, "gvisor": 800 * time.Millisecond, "lxd": 2 * time.Second,
	"qemu": 6 * time.Second,
}

// cores the estimate assumes fixed work is spread over.
const cores = 2

// NewPlan expands f's workloads with reg (sweeps, defaults) and estimates
// the time.
func NewPlan(f File, reg workload.Registry) (Plan, error) {
	p := Plan{File: f}
	reps := 5
	switch {
	case f.Reps == "":
	case f.Reps == "auto":
		reps = 30
	default:
		n, err := strconv.Atoi(f.Reps)
		if err != nil || n < 1 {
			return Plan{}, fmt.Errorf("reps %q: want a whole number or auto", f.Reps)
		}
		reps = n
	}
	p.Reps = reps
	instances := f.Instances
	if len(instances) == 0 {
		instances = []int{1}
	}
	for _, w := range f.Workloads {
		sp, err := spec.Parse(w)
		if err != nil {
			return Plan{}, fmt.Errorf("workload %q: %w", w, err)
		}
		def, err := reg.Lookup(sp.Name)
		if err != nil {
			return Plan{}, err
		}
		vs, err := workload.Expand(sp.Params)
		if err != nil {
			return Plan{}, fmt.Errorf("workload %s: %w", sp.Name, err)
		}
		for _, v := range vs {
			params, err := def.Resolve(v.Raw)
			if err != nil {
				return Plan{}, err
			}
			p.Jobs = append(p.Jobs, Job{Spec: w, Workload: sp.Name, Params: params, Sweep: v.Sweep, PerRep: perRep(sp.Name, params)})
		}
	}
	p.Cells = len(p.Jobs) * len(instances)
	p.Runs = p.Cells * len(f.Platforms) * (reps + f.Warmup)
	for _, j := range p.Jobs {
		for _, n := range instances {
			// Fixed work shares the cores; timed work does not take longer.
			work := j.PerRep
			if fixedWork(j.Workload, j.Params) && n > cores {
				work = time.Duration(float64(work) * float64(n) / cores)
			}
			for _, pl := range f.Platforms {
				name, _, _ := strings.Cut(pl, ":")
				c, ok := instanceCost[name]
				if !ok {
					c = time.Second
				}
				// Instances are created concurrently, but engines
				// serialise much of it: count half of them.
				setup := time.Duration(float64(c) * math.Max(1, float64(n)/2))
				p.Estimate += time.Duration(reps+f.Warmup) * (work + setup)
			}
		}
	}
	if f.Study != nil {
		for _, e := range f.Study.Experiments {
			for _, w := range e.Pending {
				if sp, err := spec.Parse(w); err == nil {
					if _, err := reg.Lookup(sp.Name); err == nil {
						p.Available = append(p.Available, w)
					}
				}
			}
		}
	}
	return p, nil
}

func fixedWork(name string, p workload.Params) bool {
	switch name {
	case "astar", "soplex":
		return true
	case "cpu":
		return p.Int("events") > 0
	}
	return false
}

// perRep estimates one repetition of a workload at one instance, from its
// parameters (durations as given; fixed work from rates measured on a
// 2-core VM). It only has to be right within a factor of two or so.
func perRep(name string, p workload.Params) time.Duration {
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	switch name {
	case "cpu":
		if n := p.Int("events"); n > 0 {
			per := 0.32e-3 * math.Pow(float64(p.Int("max-prime"))/1e4, 1.5)
			return sec(float64(n) * per / math.Min(float64(p.Int("threads")), cores))
		}
		return p.Duration("duration")
	case "memory", "disk", "tcp-stream", "tcp-rr", "tcp-crr", "tool:sysbench-cpu", "tool:sysbench-memory", "tool:fio", "tool:iperf3", "tool:sockperf":
		d := p.Duration("duration")
		if name == "disk" {
			// laying out the files, untimed
			d += sec(float64(p.Size("size")) * float64(p.Int("jobs")) / 300e6)
		}
		return d + 500*time.Millisecond
	case "stream":
		n := float64(stream.DefaultElements)
		if v := p.Str("array-size"); v != "auto" {
			if x, err := spec.ParseSize(v); err == nil {
				n = float64(x)
			}
		} else if llc, err := stream.LastLevelCache("/sys/devices/system/cpu/cpu0/cache"); err == nil && 4*float64(llc)/8 > n {
			n = 4 * float64(llc) / 8 // STREAM's rule, as the workload applies it
		}
		// filling 3 arrays, then 4 kernels touching 2.5 arrays on average
		// per pass, at ~3 GB/s
		return sec(0.5 + 3*8*n/2e9 + float64(p.Int("passes"))*4*2.5*8*n/3e9)
	case "blockio":
		size := float64(p.Size("size"))
		if p.Str("mode") == "ionugget" {
			blocks := size / float64(p.Size("block-size"))
			return sec(blocks*5e-3 + size/float64(p.Size("read-size"))*2e-6 + 0.5)
		}
		return sec(2*size/150e6 + 0.5)
	case "fs":
		return p.Duration("runtime") + 3*time.Second
	case "startup":
		return time.Second
	case "footprint":
		d := p.Duration("window") + time.Second
		if p.Str("service") != "none" && p.Str("service") != "" {
			d += 2 * time.Second // the server starts and answers first
		}
		return d
	case "astar":
		return sec(float64(p.Int("queries")) * float64(p.Int("width")*p.Int("height")) * 9e-9)
	case "soplex":
		r := float64(p.Int("rows")) / 300
		return sec(6 * r * r * r * float64(p.Int("solves")))
	case "http":
		// server start, then ab's fixed requests at ~5000/s on 2 cores
		// (thousands of connections), or wrk for its duration
		if p.Str("tool") == "wrk" {
			return p.Duration("duration") + 2*time.Second
		}
		return sec(2 + float64(p.Int("requests"))/5000)
	case "redis":
		// pipelined GET/SET at ~200k ops/s
		ops := float64(len(strings.Split(p.Str("ops"), "+")))
		return sec(1 + ops*float64(p.Int("requests"))/200e3)
	case "oltp":
		// the table is prepared once per platform (cached): count a share
		return p.Duration("duration") + sec(2+float64(p.Int("table-size"))/1e6*10)
	case "scp", "wget", "smb", "ftp":
		// ~80 MB/s per client pair on 2 cores, a few ms per node of a
		// tree, verification, and a second for the server and each
		// neighbour to come up
		bytes, nodes := transferSize(p)
		clients := float64(max(1, p.Int("clients")))
		return sec(1 + float64(p.Int("neighbours")) + clients*(bytes/80e6+nodes*3e-3) + bytes/500e6)
	case "smtp":
		if p.Str("client") == "postal" {
			return p.Duration("duration") + 3*time.Second
		}
		// Postfix delivering into the Maildir at ~40 MB/s, ~20 ms a mail
		n := float64(p.Int("messages") * max(1, p.Int("clients")))
		return sec(3 + float64(p.Int("neighbours")) + n*(float64(p.Size("size"))/40e6+0.02))
	case "spark":
		// JVM start and the job over its input at ~20 MB/s on 2 cores
		return sec(15 + float64(p.Size("size"))/20e6)
	case "spark-cluster":
		// the master, workers and driver start, each worker's instance
		// comes up, and the job runs at ~20 MB/s on 2 cores
		return sec(25 + 2*float64(p.Int("cluster")) + float64(p.Size("size"))/20e6)
	}
	return 10 * time.Second
}

// Print writes the plan for a person: what runs, what does not and why,
// and how long it should take.
func (p Plan) Print(w io.Writer) {
	f := p.File
	if m := f.Study; m != nil {
		fmt.Fprintf(w, "study %s (%s scale): %s\n  %s\n", m.ID, m.Scale, m.Title, m.Citation)
	}
	inst := f.Instances
	if len(inst) == 0 {
		inst = []int{1}
	}
	fmt.Fprintf(w, "platforms: %s   instances: %s   baseline: %s\n", strings.Join(f.Platforms, ", "), joinInts(inst), orDash(f.Baseline))
	if m := f.Study; m != nil && m.PaperBaseline != "" {
		fmt.Fprintf(w, "  the paper's baseline: %s\n", m.PaperBaseline)
	}
	reps := "repetitions"
	if p.Reps == 1 {
		reps = "repetition"
	}
	fmt.Fprintf(w, "%d workload cells × %d instance counts = %d cells; × %d platforms × %d %s", len(p.Jobs), len(inst), p.Cells, len(f.Platforms), p.Reps, reps)
	if f.Warmup > 0 {
		fmt.Fprintf(w, " (+%d warm-up)", f.Warmup)
	}
	fmt.Fprintf(w, " = %d runs, about %s\n", p.Runs, roundEstimate(p.Estimate))
	for _, j := range p.Jobs {
		sw := ""
		if len(j.Sweep) > 0 {
			sw = "  [sweep " + strings.Join(j.Sweep, ",") + "]"
		}
		fmt.Fprintf(w, "  %s:%s  ~%s per repetition%s\n", j.Workload, j.Params, j.PerRep.Round(100*time.Millisecond), sw)
	}
	if m := f.Study; m != nil {
		for _, pl := range m.NotRun() {
			fmt.Fprintf(w, "not run here: %s: %s", pl.Paper, pl.NotRun)
			if pl.WouldRun != "" {
				fmt.Fprintf(w, " (would run with: %s)", pl.WouldRun)
			}
			fmt.Fprintln(w)
		}
		for _, e := range m.PendingExperiments() {
			fmt.Fprintf(w, "not yet runnable: %s %s: %s\n", e.ID, e.Title, e.NotRunnable)
		}
		if m.HasLedger() {
			fmt.Fprintf(w, "against the paper ('isobench study fidelity %s' says why each item differs):\n", m.ID)
			n := 0
			for _, e := range m.Experiments {
				l := m.Ledger(e, f.Reps)
				if l.Faithful() {
					n++
				}
				fmt.Fprintf(w, "  %s %s\n", e.ID, l.Line())
			}
			fmt.Fprintf(w, "faithful here: %d of %d\n", n, len(m.Experiments))
		}
		if len(p.Available) > 0 {
			fmt.Fprintf(w, "this binary now has %s: add to workloads: (see the study's pending entries) to run them\n", strings.Join(p.Available, ", "))
		}
	}
}

// transferSize is a transfer workload's data set: its bytes and its
// nodes (files and folders) from file=SIZE or tree=NODES/SIZE.
func transferSize(p workload.Params) (bytes, nodes float64) {
	if t := p.Str("tree"); t != "" {
		n, size, _ := strings.Cut(t, "/")
		nn, _ := strconv.Atoi(n)
		sz, _ := spec.ParseSize(size)
		return float64(sz), float64(nn)
	}
	if f := p.Size("file"); f > 0 {
		return float64(f), 1
	}
	return 1 << 20, 1
}

func roundEstimate(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(math.Ceil(d.Minutes())))
	}
	return fmt.Sprintf("%.1f h", d.Hours())
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
