// Package fsbench is the in-guest file-system workload "fs": it reproduces
// FileBench's fileserver, webserver, varmail and randomfileaccess
// personalities (workloads/*.f of filebench/filebench) in Go. Each
// personality defines its filesets (a directory tree of files with
// gamma-distributed sizes, partly preallocated before the run) and the list
// of flowops every thread repeats; nthreads goroutines run that list for
// runtime and the workload reports FileBench's summary (ops/s, MB/s, ms/op)
// plus per-flowop counts and latencies.
package fsbench

import (
	"github.com/isobench/isobench/internal/hist"

	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/workload"
)

// Personalities, as named by FileBench.
const (
	FileServer       = "fileserver"
	WebServer        = "webserver"
	VarMail          = "varmail"
	RandomFileAccess = "randomfileaccess"
)

// personality holds the defaults of one FileBench personality: nfiles,
// meandirwidth, meanfilesize and nthreads from study 001's table III (which
// match the .f files), iosize and meanappendsize from the .f files.
type personality struct {
	nfiles, dirwidth, nthreads int
	filesize                   string
	iosize, appendsize         string
}

var personalities = map[string]personality{
	FileServer:       {nfiles: 10000, dirwidth: 20, filesize: "128k", nthreads: 50, iosize: "1m", appendsize: "16k"},
	WebServer:        {nfiles: 1000, dirwidth: 20, filesize: "16k", nthreads: 100, iosize: "1m", appendsize: "16k"},
	VarMail:          {nfiles: 1000, dirwidth: 1000000, filesize: "16k", nthreads: 16, iosize: "1m", appendsize: "16k"},
	RandomFileAccess: {nfiles: 10000, dirwidth: 20, filesize: "random", nthreads: 5, iosize: "random", appendsize: "16k"},
}

// Limits beyond which a parameter is surely a typo (and would exhaust memory).
const (
	maxFiles   = 50_000_000
	maxThreads = 10_000
	maxIOSize  = 64 << 20
)

// Def is the fs workload.
var Def = workload.Def{
	Name:     "fs",
	Estimate: func(p workload.Params) time.Duration { return p.Duration("runtime") + 3*time.Second },
	Help: "FileBench personalities (fileserver, webserver, varmail, randomfileaccess) on a fileset in the scratch directory; " +
		"ops/s, MB/s (MiB/s, as FileBench), ms/op and per-flowop counts and latencies. " +
		"nfiles, meandirwidth, meanfilesize, nthreads, iosize and meanappendsize left empty take the personality's default " +
		"(fileserver 10000/20/128k/50, webserver 1000/20/16k/100, varmail 1000/1000000/16k/16, randomfileaccess 10000/20/random/5; " +
		"iosize 1m and meanappendsize 16k everywhere except randomfileaccess, whose reads use FileBench's $rdiosize table " +
		"(85% 8k, 15% 8k-64k) and whose appends draw their bound from a gamma of mean meanappendsize, min 512, as $wrtiosize)",
	Derive: derive,
	Params: []workload.Param{
		{Name: "personality", Kind: workload.Enum, Default: FileServer, Enum: []string{FileServer, WebServer, VarMail, RandomFileAccess},
			Help: "FileBench personality whose filesets and flowops to run"},
		{Name: "nfiles", Kind: workload.String, Default: "", Computed: "from the personality", Help: "files in the main fileset"},
		{Name: "meandirwidth", Kind: workload.String, Default: "", Computed: "from the personality", Help: "mean entries per directory, at least 2"},
		{Name: "meanfilesize", Kind: workload.String, Default: "", Computed: "from the personality",
			Help: "mean file size (gamma, shape 1.5) or \"random\" for randomfileaccess's tabular $filesize"},
		{Name: "nthreads", Kind: workload.String, Default: "", Computed: "from the personality", Help: "worker threads"},
		{Name: "iosize", Kind: workload.String, Default: "", Computed: "from the personality",
			Help: "read/write chunk of readwholefile and writewholefile, at most 64m"},
		{Name: "meanappendsize", Kind: workload.String, Default: "", Computed: "from the personality",
			Help: "appendfilerand appends a uniform size below this"},
		{Name: "runtime", Kind: workload.Duration, Default: "60s", Min: 0.01, Max: 86400, Help: "how long the threads run"},
	},
	Check: func(p workload.Params) error {
		_, err := ConfigFrom(p)
		return err
	},
	Agent: run,
	Timeout: func(p workload.Params) time.Duration {
		c, err := ConfigFrom(p)
		if err != nil {
			return 0
		}
		return c.Runtime + 2*time.Minute + c.setupEstimate()
	},
}

// Config is a fully resolved parameter set.
type Config struct {
	Personality    string
	NFiles         int
	MeanDirWidth   int
	MeanFileSize   int64 // < 0: randomfileaccess's tabular sizes
	NThreads       int
	IOSize         int64 // 0: randomfileaccess's tabular read sizes
	MeanAppendSize int64
	Runtime        time.Duration
}

// ConfigFrom resolves personality defaults and validates every value,
// reporting all problems in one error.
func ConfigFrom(p workload.Params) (Config, error) {
	name := p.Str("personality")
	def, ok := personalities[name]
	if !ok {
		return Config{}, fmt.Errorf("unknown personality %q", name)
	}
	c := Config{Personality: name, Runtime: p.Duration("runtime")}
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	val := func(param, fallback string) string {
		if v := strings.TrimSpace(p.Str(param)); v != "" {
			return v
		}
		return fallback
	}
	count := func(param, fallback string, lo, hi int) int {
		v := val(param, fallback)
		n, err := strconv.Atoi(v)
		if err != nil {
			bad("%s=%q is not a whole number", param, v)
			return 0
		}
		if n < lo || n > hi {
			bad("%s=%d must be between %d and %d", param, n, lo, hi)
		}
		return n
	}
	size := func(param, fallback string, lo, hi int64, random bool) int64 {
		v := val(param, fallback)
		if strings.EqualFold(v, "random") {
			if random {
				return -1
			}
			bad("%s=random is not allowed", param)
			return 0
		}
		n, err := spec.ParseSize(v)
		if err != nil {
			bad("%s=%q is not a size such as 16k or 1m", param, v)
			return 0
		}
		if n < lo || n > hi {
			bad("%s=%s must be between %d and %d bytes", param, v, lo, hi)
		}
		return n
	}
	c.NFiles = count("nfiles", strconv.Itoa(def.nfiles), 1, maxFiles)
	c.MeanDirWidth = count("meandirwidth", strconv.Itoa(def.dirwidth), 2, math.MaxInt32)
	c.NThreads = count("nthreads", strconv.Itoa(def.nthreads), 1, maxThreads)
	c.MeanFileSize = size("meanfilesize", def.filesize, 0, 1<<40, true)
	c.IOSize = size("iosize", def.iosize, 1, maxIOSize, name == RandomFileAccess)
	if c.IOSize < 0 {
		c.IOSize = 0
	}
	c.MeanAppendSize = size("meanappendsize", def.appendsize, 1, maxIOSize, false)
	if c.Personality == RandomFileAccess && c.MeanAppendSize > 0 && c.MeanAppendSize <= 512 {
		bad("meanappendsize=%d must exceed the 512-byte minimum of randomfileaccess's write size", c.MeanAppendSize)
	}
	if c.Runtime <= 0 {
		bad("runtime must be positive")
	}
	if len(problems) > 0 {
		return Config{}, fmt.Errorf("fs %s: invalid parameters: %s", name, strings.Join(problems, "; "))
	}
	return c, nil
}

// meanSize is the expected size of one file.
func (c Config) meanSize() float64 {
	if c.MeanFileSize < 0 {
		return randomFileSizes().Mean()
	}
	return float64(c.MeanFileSize)
}

// setupEstimate bounds the untimed preallocation time, assuming a slow
// 10 MB/s and 2 ms per file.
func (c Config) setupEstimate() time.Duration {
	bytes := float64(c.NFiles) * c.meanSize()
	return time.Duration(bytes/10e6*float64(time.Second)) + time.Duration(c.NFiles)*2*time.Millisecond
}

// filesetDef is one `define fileset` of a personality.
type filesetDef struct {
	name     string
	entries  int
	prealloc int
	readonly bool
}

// plan is a personality turned into filesets and a thread flow.
type plan struct {
	sets []filesetDef
	flow []flowop
}

func (c Config) plan() plan {
	fixed := func(n int64) func(*thread) int64 { return func(*thread) int64 { return n } }
	io, app := fixed(c.IOSize), fixed(c.MeanAppendSize)
	op := func(k opKind, set, fd int, size func(*thread) int64) flowop {
		return flowop{kind: k, set: set, fd: fd, iosize: size}
	}
	switch c.Personality {
	case WebServer:
		p := plan{sets: []filesetDef{
			{name: "bigfileset", entries: c.NFiles, prealloc: 100, readonly: true},
			{name: "logfiles", entries: 1, prealloc: 100},
		}}
		for i := 0; i < 10; i++ {
			p.flow = append(p.flow,
				op(opOpenFile, 0, 1, nil),
				op(opReadWholeFile, 0, 1, io),
				op(opCloseFile, 0, 1, nil))
		}
		p.flow = append(p.flow, op(opAppendFileRand, 1, 2, app))
		return p
	case VarMail:
		return plan{
			sets: []filesetDef{{name: "bigfileset", entries: c.NFiles, prealloc: 80}},
			flow: []flowop{
				op(opDeleteFile, 0, 0, nil),
				op(opCreateFile, 0, 1, nil),
				op(opAppendFileRand, 0, 1, app),
				op(opFsync, 0, 1, nil),
				op(opCloseFile, 0, 1, nil),
				op(opOpenFile, 0, 1, nil),
				op(opReadWholeFile, 0, 1, io),
				op(opAppendFileRand, 0, 1, app),
				op(opFsync, 0, 1, nil),
				op(opCloseFile, 0, 1, nil),
				op(opOpenFile, 0, 1, nil),
				op(opReadWholeFile, 0, 1, io),
				op(opCloseFile, 0, 1, nil),
			},
		}
	case RandomFileAccess:
		read := io
		if c.IOSize == 0 {
			table := randomReadSizes()
			read = func(t *thread) int64 { return table.Draw(t.r) }
		}
		mean := float64(c.MeanAppendSize)
		write := func(t *thread) int64 { return int64(gammaRandvar(t.r, DefaultGamma, mean, 512, 512)) }
		open := func(fd int) flowop { return flowop{kind: opOpenFile, set: 0, fd: fd, indexed: true} }
		return plan{
			sets: []filesetDef{{name: "bigfileset", entries: c.NFiles, prealloc: 100}},
			flow: []flowop{
				open(1), open(2), open(3),
				op(opAppendFileRand, 0, 1, write),
				op(opCloseFile, 0, 1, nil),
				op(opReadWholeFile, 0, 2, read),
				op(opReadWholeFile, 0, 3, read),
				op(opCloseFile, 0, 2, nil),
				op(opCloseFile, 0, 3, nil),
			},
		}
	default: // FileServer
		return plan{
			sets: []filesetDef{{name: "bigfileset", entries: c.NFiles, prealloc: 80}},
			flow: []flowop{
				op(opCreateFile, 0, 1, nil),
				op(opWriteWholeFile, 0, 1, io),
				op(opCloseFile, 0, 1, nil),
				op(opOpenFile, 0, 1, nil),
				op(opAppendFileRand, 0, 1, app),
				op(opCloseFile, 0, 1, nil),
				op(opOpenFile, 0, 1, nil),
				op(opReadWholeFile, 0, 1, io),
				op(opCloseFile, 0, 1, nil),
				op(opDeleteFile, 0, 0, nil),
				op(opStatFile, 0, 0, nil),
			},
		}
	}
}

// fileIndex is randomfileaccess's $fileidx (gamma, gamma=100 i.e. shape
// 0.1, no mean so mean 0.1, min 0) turned into an index the way
// flowoplib_pickfile does: value * (entries/2), modulo entries.
func fileIndex(t *thread, fs *Fileset) int {
	n := fs.NumFiles()
	x := Gamma(t.r, 0.1, 1)
	i := int(x*float64(n/2)) % n
	if i < 0 {
		i = 0
	}
	return i
}

func newRand() *rand.Rand { return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())) }

func run(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	c, err := ConfigFrom(p)
	if err != nil {
		return nil, err
	}
	scratch, err := workload.Scratch()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(scratch, "fsbench-")
	if err != nil {
		return nil, fmt.Errorf("fs: %w", err)
	}
	defer os.RemoveAll(dir)
	return Run(ctx, c, dir, ready)
}

// Run builds the filesets of c under dir (which the caller removes), calls
// ready, runs the threads for c.Runtime and returns the metrics.
func Run(ctx context.Context, c Config, dir string, ready workload.Barrier) ([]sample.Metric, error) {
	r := newRand()
	pl := c.plan()
	sizeFn := func(r *rand.Rand) int64 { return GammaSize(r, c.MeanFileSize) }
	if c.MeanFileSize < 0 {
		table := randomFileSizes()
		sizeFn = table.Draw
	}
	wlen := max(int64(allocBlock), c.IOSize)
	wbuf := make([]byte, wlen)
	for i := 0; i < len(wbuf); i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < len(wbuf); j++ {
			wbuf[i+j] = byte(v >> (8 * j))
		}
	}
	sets := make([]*Fileset, len(pl.sets))
	for i, d := range pl.sets {
		fs, err := PopulateFileset(r, dir, d.name, d.entries, c.MeanDirWidth, sizeFn)
		if err != nil {
			return nil, fmt.Errorf("fs: %w", err)
		}
		fs.readonly = d.readonly
		if err := fs.Create(ctx, r, d.prealloc, wbuf); err != nil {
			return nil, fmt.Errorf("fs: %w", err)
		}
		sets[i] = fs
	}
	if err := ready(); err != nil {
		return nil, err
	}

	threads := make([]*thread, c.NThreads)
	for i := range threads {
		threads[i] = &thread{id: i, r: newRand(), sets: sets, flow: pl.flow, wbuf: wbuf, idx: fileIndex}
	}
	start := time.Now()
	deadline := start.Add(c.Runtime)
	for _, t := range threads {
		t.deadline = deadline
	}
	errs := make([]error, len(threads))
	var wg sync.WaitGroup
	for i, t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = t.run(ctx)
		}()
	}
	wg.Wait()
	// Ops are counted up to the deadline only, so the rate is over runtime.
	elapsed := c.Runtime
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fs %s: %w", c.Personality, err)
	}
	return summarize(pl.flow, threads, elapsed)
}

// summarize merges the threads' statistics into FileBench's IO summary and
// per-flowop figures.
func summarize(flow []flowop, threads []*thread, elapsed time.Duration) ([]sample.Metric, error) {
	var per [numOps]hist.Histogram
	var total hist.Histogram
	var rbytes, wbytes, pickFailures int64
	for _, t := range threads {
		for k, h := range t.stats.hist {
			if h != nil {
				per[k].Merge(h)
				total.Merge(h)
			}
		}
		rbytes += t.stats.rbytes
		wbytes += t.stats.wbytes
		pickFailures += t.stats.pickFailures
	}
	if total.Count() == 0 {
		return nil, fmt.Errorf("fs: no operation completed in %v (%d picks found no suitable file)", elapsed.Round(time.Millisecond), pickFailures)
	}
	secs := elapsed.Seconds()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	m := []sample.Metric{
		{Name: "ops_per_sec", Value: float64(total.Count()) / secs, Unit: "ops/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "mb_per_sec", Value: float64(rbytes+wbytes) / (1 << 20) / secs, Unit: "MB/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "read_mb_per_sec", Value: float64(rbytes) / (1 << 20) / secs, Unit: "MB/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "write_mb_per_sec", Value: float64(wbytes) / (1 << 20) / secs, Unit: "MB/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "latency_mean", Value: ms(total.Mean()), Unit: "ms", Better: sample.Lower, Agg: sample.Mean},
		{Name: "pick_failures", Value: float64(pickFailures), Unit: "ops", Better: sample.Lower, Agg: sample.Sum},
	}
	var used [numOps]bool
	for _, op := range flow {
		used[op.kind] = true
	}
	for k := opKind(0); k < numOps; k++ {
		if !used[k] {
			continue
		}
		h := &per[k]
		m = append(m, sample.Metric{Name: "op_count_" + k.String(), Value: float64(h.Count()), Unit: "ops", Better: sample.Higher, Agg: sample.Sum})
		if h.Count() > 0 {
			m = append(m,
				sample.Metric{Name: "latency_mean_" + k.String(), Value: ms(h.Mean()), Unit: "ms", Better: sample.Lower, Agg: sample.Mean},
				sample.Metric{Name: "latency_p99_" + k.String(), Value: ms(h.Percentile(99)), Unit: "ms", Better: sample.Lower, Agg: sample.Max},
			)
		}
	}
	return m, nil
}

// derive fills the personality's defaults into parameters left empty, so
// the stored parameter string says what really ran.
func derive(p workload.Params) map[string]string {
	per, ok := personalities[p.Str("personality")]
	if !ok {
		return nil
	}
	return map[string]string{
		"nfiles":         strconv.Itoa(per.nfiles),
		"meandirwidth":   strconv.Itoa(per.dirwidth),
		"meanfilesize":   per.filesize,
		"nthreads":       strconv.Itoa(per.nthreads),
		"iosize":         per.iosize,
		"meanappendsize": per.appendsize,
	}
}
