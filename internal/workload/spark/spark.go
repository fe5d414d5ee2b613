// Package spark is HiBench's data-processing micro benchmarks on Apache
// Spark (study 003, figures 9-10): WordCount, TeraSort, PageRank and
// K-means. Spark runs in local mode (local[executors*cores]) from the
// pyspark package with a Java runtime; inside instances they come from
// the spark image profile (internal/image/spark.go).
//
// As HiBench's prepare step, the agent generates the job's input in the
// instance's scratch directory from a seed (untimed, kept between
// repetitions while the parameters are unchanged), then times one
// spark-submit of an embedded PySpark script. The job's output is checked
// against what the generator knows (word counts, sort order and record
// checksum, the reference PageRank, the clusters' means): a wrong answer
// is a failed repetition, never a number.
package spark

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

//go:embed job.py
var jobScript []byte

// Jobs are the HiBench jobs this workload runs.
var Jobs = []string{"wordcount", "terasort", "pagerank", "kmeans"}

// PaperSizes are study 003's input sizes (HiBench "huge"-like profiles):
// what --scale paper means for each job.
var PaperSizes = map[string]string{"wordcount": "10g", "terasort": "10g", "pagerank": "512m", "kmeans": "4g"}

// HomeEnv names the Spark installation (a pyspark package directory or a
// Spark distribution) when it is not found on its own.
const HomeEnv = "SPARK_HOME"

// ImagePySpark is where the spark image profile installs pyspark (the
// directory holding the pyspark and py4j packages).
const ImagePySpark = image.SparkPySparkDir

// hostTools is spark's Needs.HostTools: nothing on the host unless it is
// the instance (native), then Java and Spark: spark-submit, or python3's
// pyspark module (the run uses it when there is no spark-submit).
func hostTools(_ workload.Params, native bool) []workload.Tool {
	if !native {
		return nil
	}
	return []workload.Tool{
		workload.Need("java", "openjdk-17-jre-headless"),
		{Bin: "spark-submit", Install: "pip install pyspark", Alt: []workload.Tool{{Bin: "pyspark", Module: true, Install: "pip install pyspark"}}},
	}
}

// Def is the spark workload.
var Def = workload.Def{
	Name:  "spark",
	Needs: workload.Needs{HostTools: hostTools, Image: image.Spark},
	Estimate: func(p workload.Params) time.Duration {
		// JVM start and the job over its input at ~20 MB/s on 2 cores
		return workload.Seconds(15 + float64(p.Size("size"))/20e6)
	},
	Help: "HiBench on Spark (study 003): wordcount, terasort, pagerank or kmeans in local mode on generated input (untimed, cached); job duration and throughput, output verified; runs in the spark image whatever --image (native: the host's java and pyspark). Study sizes: wordcount/terasort 10g, pagerank 512m, kmeans 4g",
	Params: []workload.Param{
		{Name: "job", Kind: workload.Enum, Default: "wordcount", Enum: Jobs, Help: "HiBench job"},
		{Name: "size", Kind: workload.Size, Default: "32m", Min: 1 << 10, Max: 1 << 40, Help: "input size in bytes (study 003: 10g wordcount/terasort, 512m pagerank, 4g kmeans)"},
		{Name: "executors", Kind: workload.Int, Default: "1", Min: 1, Max: 256, Help: "executors (local mode: multiplies the worker threads)"},
		{Name: "cores", Kind: workload.Int, Default: "2", Min: 1, Max: 256, Help: "cores per executor (local mode runs local[executors*cores])"},
		{Name: "memory", Kind: workload.Size, Default: "1g", Min: 256 << 20, Max: 1 << 40, Help: "driver (and in local mode executor) memory"},
		{Name: "iterations", Kind: workload.Int, Default: "", Computed: "5 for kmeans, else 3, as HiBench", Min: 1, Max: 1000, Help: "pagerank and kmeans iterations"},
		{Name: "k", Kind: workload.Int, Default: "10", Min: 1, Max: 1000, Help: "kmeans clusters"},
		{Name: "seed", Kind: workload.Int, Default: "19", Min: 0, Help: "input generator seed"},
	},
	Derive: func(p workload.Params) map[string]string {
		if p.Str("job") == "kmeans" {
			return map[string]string{"iterations": "5"}
		}
		return map[string]string{"iterations": "3"}
	},
	Agent: run,
	Timeout: func(p workload.Params) time.Duration {
		// Generation plus the job: a few MB/s at worst, plus JVM start.
		return 3*time.Minute + time.Duration(p.Size("size")/(1<<20))*4*time.Second
	},
}

// Install is a Spark installation ready to submit jobs.
type Install struct {
	SparkSubmit string   // path of bin/spark-submit
	Env         []string // extra environment (SPARK_HOME, PYTHONPATH, ...)
}

// Find locates spark-submit: $SPARK_HOME, the spark image's pyspark, or
// the pyspark package of the python3 on PATH.
func Find(ctx context.Context) (Install, error) {
	var tried []string
	try := func(home, pyPath string) (Install, bool) {
		ss := filepath.Join(home, "bin", "spark-submit")
		tried = append(tried, ss)
		if st, err := os.Stat(ss); err != nil || st.IsDir() {
			return Install{}, false
		}
		env := []string{HomeEnv + "=" + home, "PYSPARK_PYTHON=python3", "PYSPARK_DRIVER_PYTHON=python3"}
		if pyPath != "" {
			pp := pyPath
			if old := os.Getenv("PYTHONPATH"); old != "" {
				pp += string(os.PathListSeparator) + old
			}
			env = append(env, "PYTHONPATH="+pp)
		}
		return Install{SparkSubmit: ss, Env: env}, true
	}
	if h := os.Getenv(HomeEnv); h != "" {
		if in, ok := try(h, ""); ok {
			return in, nil
		}
	}
	if in, ok := try(filepath.Join(ImagePySpark, "pyspark"), ImagePySpark); ok {
		return in, nil
	}
	out, err := exec.CommandContext(ctx, "python3", "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))").Output()
	if err == nil {
		if in, ok := try(strings.TrimSpace(string(out)), ""); ok {
			return in, nil
		}
	}
	return Install{}, fmt.Errorf("spark: no spark-submit (tried %s; python3's pyspark: %v): in instances use --image spark; natively install java 17 and pyspark ('apt-get install openjdk-17-jre-headless', 'pip install pyspark numpy') or set %s", strings.Join(tried, ", "), err, HomeEnv)
}

// Job is one prepared job: its input on disk and the truth about it.
type Job struct {
	Name  string
	Input string // the input file
	Bytes int64  // its size
	Truth json.RawMessage
	Opts  []string // key=value options for job.py
}

// Prepare generates the input of job into dir/spark-data (or reuses it
// when the same parameters generated it before) and removes inputs of
// other parameters.
func Prepare(dir string, p workload.Params) (Job, error) {
	job := p.Str("job")
	seed := uint64(p.Int("seed"))
	size := p.Size("size")
	iters := p.Int("iterations")
	k := p.Int("k")
	key := fmt.Sprintf("%s-%d-%d-v%s", job, size, seed, genVersion)
	var opts []string
	switch job {
	case "pagerank":
		key += fmt.Sprintf("-i%d", iters)
		opts = []string{"iterations=" + strconv.Itoa(iters), "top=" + strconv.Itoa(rankTop), "small=" + strconv.Itoa(smallGraph)}
	case "kmeans":
		key += fmt.Sprintf("-k%d", k)
		opts = []string{"k=" + strconv.Itoa(k), "iterations=" + strconv.Itoa(iters), "seed=" + strconv.FormatUint(seed, 10)}
	}
	root := filepath.Join(dir, "spark-data")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Job{}, fmt.Errorf("spark: %w", err)
	}
	// Free the space of inputs of other parameters.
	if ents, err := os.ReadDir(root); err == nil {
		for _, e := range ents {
			if e.Name() != key {
				os.RemoveAll(filepath.Join(root, e.Name()))
			}
		}
	}
	d := filepath.Join(root, key)
	j := Job{Name: job, Input: filepath.Join(d, "input.txt"), Opts: opts}
	truthFile := filepath.Join(d, "truth.json")
	if b, err := os.ReadFile(truthFile); err == nil {
		if st, err := os.Stat(j.Input); err == nil {
			var t struct {
				Bytes int64 `json:"bytes"`
			}
			if json.Unmarshal(b, &t) == nil && t.Bytes == st.Size() {
				j.Bytes, j.Truth = t.Bytes, b
				return j, nil
			}
		}
	}
	os.RemoveAll(d)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return Job{}, fmt.Errorf("spark: %w", err)
	}
	f, err := os.Create(j.Input)
	if err != nil {
		return Job{}, fmt.Errorf("spark: %w", err)
	}
	var truth any
	var n int64
	switch job {
	case "wordcount":
		t, e := GenWords(f, size, seed)
		truth, n, err = t, t.Bytes, e
	case "terasort":
		t, e := GenRecords(f, size, seed)
		truth, n, err = t, t.Bytes, e
	case "pagerank":
		t, e := GenRanks(f, size, seed, iters)
		truth, n, err = t, t.Bytes, e
	case "kmeans":
		t, e := GenPoints(f, size, seed, k)
		truth, n, err = t, t.Bytes, e
	default:
		err = fmt.Errorf("unknown job %q", job)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Job{}, fmt.Errorf("spark: generating the %s input: %w", job, err)
	}
	b, err := json.Marshal(truth)
	if err != nil {
		return Job{}, fmt.Errorf("spark: %w", err)
	}
	if err := os.WriteFile(truthFile+".tmp", b, 0o644); err != nil {
		return Job{}, fmt.Errorf("spark: %w", err)
	}
	if err := os.Rename(truthFile+".tmp", truthFile); err != nil {
		return Job{}, fmt.Errorf("spark: %w", err)
	}
	j.Bytes, j.Truth = n, b
	return j, nil
}

// Submit is how one job is submitted.
type Submit struct {
	Install Install
	Master  string // e.g. local[2] or spark://host:7077
	Memory  int64  // driver memory in bytes
	// ExecutorCores and ExecutorMemory apply to a standalone cluster.
	ExecutorCores  int
	ExecutorMemory int64
	Scratch        string // where the script, output and Spark's files go
	ConfExtra      []string
}

// Result is what one timed run measured and reported.
type Result struct {
	Seconds    float64         // spark-submit's wall time
	JobSeconds float64         // the job alone (after the SparkContext started)
	Summary    json.RawMessage // job.py's JSON summary
	Output     string          // the job's output directory
}

// Run submits j and waits for it; ready, when set, is called right before
// the timed part.
func Run(ctx context.Context, s Submit, j Job, ready func() error) (Result, error) {
	script := filepath.Join(s.Scratch, "isobench-spark-job.py")
	if err := os.WriteFile(script, jobScript, 0o644); err != nil {
		return Result{}, fmt.Errorf("spark: %w", err)
	}
	out := filepath.Join(s.Scratch, "spark-out")
	result := filepath.Join(s.Scratch, "spark-result.json")
	local := filepath.Join(s.Scratch, "spark-local")
	for _, p := range []string{out, result, local} {
		if err := os.RemoveAll(p); err != nil {
			return Result{}, fmt.Errorf("spark: %w", err)
		}
	}
	if err := os.MkdirAll(local, 0o755); err != nil {
		return Result{}, fmt.Errorf("spark: %w", err)
	}
	mem := strconv.FormatInt(max(1, s.Memory>>20), 10) + "m"
	args := []string{
		"--master", s.Master,
		"--driver-memory", mem,
		"--conf", "spark.ui.enabled=false",
		"--conf", "spark.ui.showConsoleProgress=false",
		"--conf", "spark.local.dir=" + local,
		"--conf", "spark.python.worker.reuse=true",
	}
	if !strings.HasPrefix(s.Master, "spark://") {
		// Local mode: everything on loopback, whatever the instance's
		// network and host name.
		args = append(args, "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1")
	} else {
		// A cluster's executors must reach the driver: its address is
		// given in ConfExtra (spark.driver.host).
		if s.ExecutorCores > 0 {
			args = append(args, "--executor-cores", strconv.Itoa(s.ExecutorCores))
		}
		if s.ExecutorMemory > 0 {
			args = append(args, "--executor-memory", strconv.FormatInt(max(1, s.ExecutorMemory>>20), 10)+"m")
		}
	}
	for _, c := range s.ConfExtra {
		args = append(args, "--conf", c)
	}
	args = append(args, script, j.Name, "file://"+j.Input, "file://"+out, result)
	args = append(args, j.Opts...)
	cmd := exec.CommandContext(ctx, s.Install.SparkSubmit, args...)
	cmd.Env = append(os.Environ(), s.Install.Env...)
	if strings.HasPrefix(s.Master, "local") {
		cmd.Env = append(cmd.Env, "SPARK_LOCAL_IP=127.0.0.1")
	}
	cmd.Dir = s.Scratch
	var tail tailWriter
	cmd.Stdout, cmd.Stderr = &tail, &tail
	cmd.WaitDelay = 10 * time.Second
	if ready != nil {
		if err := ready(); err != nil {
			return Result{}, err
		}
	}
	start := time.Now()
	err := cmd.Run()
	secs := time.Since(start).Seconds()
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, fmt.Errorf("spark %s: %w", j.Name, ctx.Err())
		}
		return Result{}, fmt.Errorf("spark %s: spark-submit: %w: %s", j.Name, err, tail.String())
	}
	b, err := os.ReadFile(result)
	if err != nil {
		return Result{}, fmt.Errorf("spark %s: the job wrote no result (%w): %s", j.Name, err, tail.String())
	}
	var js struct {
		JobSeconds      float64 `json:"job_seconds"`
		ValidateSeconds float64 `json:"validate_seconds"`
	}
	if err := json.Unmarshal(b, &js); err != nil {
		return Result{}, fmt.Errorf("spark %s: bad result %s: %w", j.Name, b, err)
	}
	// A cluster's TeraSort summarises its output in the job, untimed.
	return Result{Seconds: secs - js.ValidateSeconds, JobSeconds: js.JobSeconds, Summary: b, Output: out}, nil
}

// tailWriter keeps the last few KB written to it (spark-submit's log).
type tailWriter struct{ b []byte }

func (t *tailWriter) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 16<<10 {
		t.b = t.b[len(t.b)-(16<<10):]
	}
	return len(p), nil
}

// String returns the last lines, preferring those that name an error.
func (t *tailWriter) String() string {
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	var errs []string
	for _, l := range lines {
		if strings.Contains(l, "Error") || strings.Contains(l, "Exception") || strings.Contains(l, "error:") {
			errs = append(errs, strings.TrimSpace(l))
		}
	}
	if len(errs) > 6 {
		errs = errs[len(errs)-6:]
	}
	if len(lines) > 6 {
		lines = lines[len(lines)-6:]
	}
	return strings.Join(append(errs, lines...), " | ")
}

func run(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	threads := p.Int("executors") * p.Int("cores")
	return submitJob(ctx, p, ready, Submit{Master: fmt.Sprintf("local[%d]", threads), Memory: p.Size("memory")})
}

// submitJob prepares the job's input (untimed), runs it as s says, and
// checks its output.
func submitJob(ctx context.Context, p workload.Params, ready workload.Barrier, s Submit) ([]sample.Metric, error) {
	in, err := Find(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := workload.Scratch()
	if err != nil {
		return nil, err
	}
	j, err := Prepare(dir, p)
	if err != nil {
		return nil, err
	}
	s.Install, s.Scratch = in, dir
	if strings.HasPrefix(s.Master, "spark://") && j.Name == "terasort" {
		j.Opts = append(j.Opts, "validate=1")
	}
	res, err := Run(ctx, s, j, ready)
	if err != nil {
		return nil, err
	}
	if err := Verify(j, res); err != nil {
		return nil, err
	}
	return Metrics(j, res), nil
}

// Metrics are what HiBench reports: the duration and the throughput.
func Metrics(j Job, r Result) []sample.Metric {
	return []sample.Metric{
		{Name: "duration", Value: r.Seconds, Unit: "s", Better: sample.Lower, Agg: sample.Max},
		{Name: "throughput", Value: float64(j.Bytes) / r.Seconds, Unit: "B/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "job_duration", Value: r.JobSeconds, Unit: "s", Better: sample.Lower, Agg: sample.Max},
	}
}

// Verify checks the job's output against the generator's truth.
func Verify(j Job, r Result) error {
	var err error
	switch j.Name {
	case "wordcount":
		err = verifyWords(j.Truth, r.Summary)
	case "terasort":
		if bytes.Contains(r.Summary, []byte(`"validate"`)) {
			err = verifySortSummary(j.Truth, r.Summary)
		} else {
			err = verifySort(j.Truth, r.Output)
		}
	case "pagerank":
		err = verifyRanks(j.Truth, r.Summary)
	case "kmeans":
		err = verifyKMeans(j.Truth, r.Summary)
	default:
		err = fmt.Errorf("unknown job")
	}
	if err != nil {
		return fmt.Errorf("spark %s: wrong output: %w", j.Name, err)
	}
	return nil
}

func verifyWords(truth, summary []byte) error {
	var t WordTruth
	var s struct {
		Total    int64  `json:"total"`
		Distinct int64  `json:"distinct"`
		TopWord  string `json:"top_word"`
		TopCount int64  `json:"top_count"`
	}
	if err := json.Unmarshal(truth, &t); err != nil {
		return err
	}
	if err := json.Unmarshal(summary, &s); err != nil {
		return err
	}
	if s.Total != t.Total || s.Distinct != t.Distinct || s.TopWord != t.TopWord || s.TopCount != t.TopCount {
		return fmt.Errorf("counted %d words (%d distinct, top %q x%d), generated %d (%d distinct, top %q x%d)",
			s.Total, s.Distinct, s.TopWord, s.TopCount, t.Total, t.Distinct, t.TopWord, t.TopCount)
	}
	return nil
}

// verifySort reads the sorted output (part files in order) and checks
// that the keys never decrease and that it holds exactly the input's
// records (count and order-free checksum), as TeraValidate does.
func verifySort(truth []byte, out string) error {
	var t SortTruth
	if err := json.Unmarshal(truth, &t); err != nil {
		return err
	}
	parts, err := filepath.Glob(filepath.Join(out, "part-*"))
	if err != nil || len(parts) == 0 {
		return fmt.Errorf("no output parts in %s", out)
	}
	// part-00000, part-00001...: lexical order is partition order.
	var n int64
	var sum uint64
	var prev []byte
	for _, part := range parts {
		b, err := os.ReadFile(part)
		if err != nil {
			return err
		}
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				i = len(b)
			}
			rec := b[:i]
			if len(rec) != RecordSize-2 {
				return fmt.Errorf("record %d in %s is %d bytes, want %d", n, filepath.Base(part), len(rec), RecordSize-2)
			}
			if prev != nil && bytes.Compare(rec[:10], prev) < 0 {
				return fmt.Errorf("record %d (key %q) sorts before the previous one (key %q)", n, rec[:10], prev)
			}
			prev = append(prev[:0], rec[:10]...)
			sum += recordHash(rec)
			n++
			if i == len(b) {
				break
			}
			b = b[i+1:]
		}
	}
	if n != t.Records || sum != t.Checksum {
		return fmt.Errorf("%d records with checksum %x, generated %d with %x", n, sum, t.Records, t.Checksum)
	}
	return nil
}

// verifySortSummary checks a sort from the job's own per-partition
// summaries (a cluster's output is spread over its workers' disks): every
// partition sorted and in order after the previous one, the records' count
// and checksum those of the input.
func verifySortSummary(truth, summary []byte) error {
	var t SortTruth
	var s struct {
		Validate []struct {
			Part      int     `json:"part"`
			Records   int64   `json:"records"`
			Checksum  uint64  `json:"checksum"`
			First     *string `json:"first"`
			Last      *string `json:"last"`
			Ordered   bool    `json:"ordered"`
			BadLength int64   `json:"bad_length"`
		} `json:"validate"`
	}
	if err := json.Unmarshal(truth, &t); err != nil {
		return err
	}
	if err := json.Unmarshal(summary, &s); err != nil {
		return err
	}
	var n int64
	var sum uint64
	prev := ""
	for i, v := range s.Validate {
		if v.Part != i {
			return fmt.Errorf("partition summaries out of order: %d at %d", v.Part, i)
		}
		if !v.Ordered || v.BadLength != 0 {
			return fmt.Errorf("partition %d: sorted %v, %d records of the wrong length", i, v.Ordered, v.BadLength)
		}
		if v.Records > 0 {
			if v.First == nil || v.Last == nil || *v.First < prev {
				return fmt.Errorf("partition %d starts before the previous one ends (%q)", i, prev)
			}
			prev = *v.Last
		}
		n += v.Records
		sum += v.Checksum
	}
	if n != t.Records || sum != t.Checksum {
		return fmt.Errorf("%d records with checksum %x, generated %d with %x", n, sum, t.Records, t.Checksum)
	}
	return nil
}

// rankTol is the relative difference allowed between Spark's ranks and
// the reference (floating-point sums in another order).
const rankTol = 1e-9

func near(a, b, tol float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	m := max(1, a, -a, b, -b)
	return d <= tol*m
}

func verifyRanks(truth, summary []byte) error {
	var t RankTruth
	var s struct {
		Nodes int64        `json:"nodes"`
		Sum   float64      `json:"sum"`
		Top   [][2]float64 `json:"top"`
		Ranks [][2]float64 `json:"ranks"`
	}
	if err := json.Unmarshal(truth, &t); err != nil {
		return err
	}
	if err := json.Unmarshal(summary, &s); err != nil {
		return err
	}
	if s.Nodes != t.Nodes {
		return fmt.Errorf("%d ranked nodes, the graph has %d", s.Nodes, t.Nodes)
	}
	// Every node has an in-link and an out-link: no rank leaks, the sum
	// stays the node count.
	if !near(s.Sum, float64(t.Nodes), 1e-6) {
		return fmt.Errorf("the ranks sum to %v, want %d (the node count)", s.Sum, t.Nodes)
	}
	if len(s.Top) != len(t.Top) {
		return fmt.Errorf("%d top ranks, want %d", len(s.Top), len(t.Top))
	}
	for i, nr := range t.Top {
		// Nodes of equal rank may come in either order: compare ranks,
		// and nodes where the rank is unique.
		if !near(s.Top[i][1], nr.Rank, rankTol) {
			return fmt.Errorf("rank %d: %v (node %v), the reference has %v (node %d)", i+1, s.Top[i][1], s.Top[i][0], nr.Rank, nr.Node)
		}
	}
	if t.Ranks != nil {
		if len(s.Ranks) != len(t.Ranks) {
			return fmt.Errorf("%d ranks listed, want %d", len(s.Ranks), len(t.Ranks))
		}
		for i, vr := range s.Ranks {
			if int(vr[0]) != i || !near(vr[1], t.Ranks[i], rankTol) {
				return fmt.Errorf("node %v has rank %v, the reference gives node %d %v", vr[0], vr[1], i, t.Ranks[i])
			}
		}
	}
	return nil
}

// kmeansTol is how far (Euclidean) a found centre may be from its
// cluster's mean: the means of the written points are the exact answer of
// converged Lloyd iterations on separable clusters.
const kmeansTol = 1e-3

func verifyKMeans(truth, summary []byte) error {
	var t KMeansTruth
	var s struct {
		Centres [][]float64 `json:"centres"`
		Points  int64       `json:"points"`
	}
	if err := json.Unmarshal(truth, &t); err != nil {
		return err
	}
	if err := json.Unmarshal(summary, &s); err != nil {
		return err
	}
	if s.Points != t.Points {
		return fmt.Errorf("%d points read, generated %d", s.Points, t.Points)
	}
	if len(s.Centres) != len(t.Means) {
		return fmt.Errorf("%d centres, want %d", len(s.Centres), len(t.Means))
	}
	used := make([]bool, len(t.Means))
	for _, c := range s.Centres {
		if len(c) != kmeansDims {
			return fmt.Errorf("a centre has %d dimensions, want %d", len(c), kmeansDims)
		}
		best, bd := -1, 0.0
		for i, m := range t.Means {
			if d := dist(c, m); best < 0 || d < bd {
				best, bd = i, d
			}
		}
		if used[best] || bd > kmeansTol {
			return fmt.Errorf("a centre is %.4g from the nearest cluster mean (cluster %d, already matched: %v): clusters were merged or split", bd, best, used[best])
		}
		used[best] = true
	}
	return nil
}
