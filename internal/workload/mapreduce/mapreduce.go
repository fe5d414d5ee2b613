// Package mapreduce runs study 003's figure 9 with Hadoop itself:
// HiBench's WordCount and TeraSort as Hadoop 3.3.6 MapReduce jobs in local
// mode, in every instance, over input generated there, each job's output
// verified and its time read from its own log.
//
// Hadoop's jars come from Maven Central, fetched once into the host's
// local Maven repository (internal/maven) and copied into each instance
// untimed; the JVM is the spark image's Java 17 (natively, the host's
// java). The workload is host-driven so it can copy the jars in; the job
// itself runs in the hidden agent half _mapreduce.
package mapreduce

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/agenthost"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/maven"
	"github.com/isobench/isobench/internal/par"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/tools/hadoop"
	"github.com/isobench/isobench/internal/workload"
)

// Names of the workload and its hidden half.
const (
	Name    = "mapreduce"
	JobName = "_mapreduce"
)

// Jobs are the HiBench jobs figure 9 runs.
var Jobs = []string{"wordcount", "terasort"}

// Defs are the workload and its hidden half; register both.
func Defs() []workload.Def { return []workload.Def{Def, JobDef} }

func commonParams() []workload.Param {
	return []workload.Param{
		{Name: "job", Kind: workload.Enum, Enum: Jobs, Default: "wordcount", Help: "HiBench's job: wordcount (text) or terasort (TeraGen's 100-byte records)"},
		{Name: "size", Kind: workload.Size, Default: "64m", Min: 1 << 10, Max: 1 << 40, Help: "input bytes per instance (study 003: 10g)"},
		{Name: "reducers", Kind: workload.Int, Default: "1", Min: 1, Max: 64, Help: "reduce tasks (mapreduce.job.reduces)"},
		{Name: "seed", Kind: workload.Int, Default: "1", Min: 0, Max: 1 << 62, Help: "seed of the generated text (wordcount)"},
	}
}

func timeout(p workload.Params) time.Duration {
	return 10*time.Minute + time.Duration(p.Size("size")/(1<<20))*time.Second
}

// Def is the host-driven workload.
var Def = workload.Def{
	Name: Name,
	// Maven (a Java program) fetches Hadoop's jars on the host, whatever
	// the platform; native runs the job with the host's java too
	Needs: workload.Needs{Image: image.Spark, HostTools: func(workload.Params, bool) []workload.Tool {
		return []workload.Tool{workload.Need("java", "default-jre-headless"), workload.Need("mvn", "maven")}
	}},
	Help:   "Hadoop " + hadoop.Version + " MapReduce (study 003, figure 9: HiBench's wordcount and terasort) in local mode in every instance: a JVM (the spark image's Java 17; natively the host's) and Hadoop's jars from Maven (fetched once into the local Maven repository, copied in untimed), input generated in the instance (terasort: by TeraGen), output verified; job_duration from the job's own log",
	Params: commonParams(),
	Host:   hostRun,
	// copying ~64 MB of jars into each instance, TeraGen's and the job's
	// JVMs (~3 s each here), then ~20 MB/s on a loaded 2-core host for
	// generating and for the job
	Estimate: func(p workload.Params) time.Duration {
		return workload.Seconds(10 + 2*float64(p.Size("size"))/20e6)
	},
	FixedWork: func(workload.Params) bool { return true },
	Timeout:   timeout,
}

// JobDef is the hidden half: the job in one instance.
var JobDef = workload.Def{
	Name:     JobName,
	Internal: true,
	Help:     "internal: one MapReduce job in this instance",
	Params: append(commonParams(),
		workload.Param{Name: "home", Kind: workload.String, Default: "", Help: "where the host copied Hadoop's jars (lib/), their order (classpath.txt) and conf/log4j.properties"},
	),
	Check: func(p workload.Params) error {
		if h := p.Str("home"); h != "" && (!path.IsAbs(h) || path.Clean(h) != h || strings.ContainsAny(h, ",:")) {
			return fmt.Errorf("home %q: want a clean absolute path", h)
		}
		return nil
	},
	Agent: runJob,
}

// jars resolves Hadoop's class path on the host (Maven's local repository,
// fetched once).
func jars(ctx context.Context) ([]string, error) {
	dir, err := os.MkdirTemp("", "isobench-mapreduce-mvn-")
	if err != nil {
		return nil, fmt.Errorf("mapreduce: %w", err)
	}
	defer os.RemoveAll(dir)
	var as []maven.Artifact
	for _, a := range hadoop.Artifacts {
		as = append(as, maven.Artifact(a))
	}
	js, err := maven.Repo{}.Classpath(ctx, dir, as...)
	if err != nil {
		return nil, fmt.Errorf("mapreduce: Hadoop's jars: %w", err)
	}
	seen := map[string]string{}
	for _, j := range js {
		if o, dup := seen[filepath.Base(j)]; dup {
			return nil, fmt.Errorf("mapreduce: two jars named %s (%s, %s)", filepath.Base(j), o, j)
		}
		seen[filepath.Base(j)] = j
	}
	return js, nil
}

func hostRun(ctx context.Context, p workload.Params, env workload.HostEnv) ([]workload.InstanceResult, error) {
	n := env.Instances
	if n < 1 {
		return nil, errors.New("mapreduce: need at least one instance")
	}
	js, err := jars(ctx)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "isobench-mapreduce-")
	if err != nil {
		return nil, fmt.Errorf("mapreduce: %w", err)
	}
	defer os.RemoveAll(tmp)
	conf, order := filepath.Join(tmp, "log4j.properties"), filepath.Join(tmp, "classpath.txt")
	var names []string
	for _, j := range js {
		names = append(names, filepath.Base(j))
	}
	if err := errors.Join(os.WriteFile(conf, []byte(hadoop.Log4jProperties), 0o644),
		os.WriteFile(order, []byte(strings.Join(names, "\n")+"\n"), 0o644)); err != nil {
		return nil, fmt.Errorf("mapreduce: %w", err)
	}
	if pr, ok := env.Platform.(platform.Preparer); ok {
		if err := pr.Prepare(ctx, image.Spark); err != nil {
			return nil, fmt.Errorf("mapreduce: preparing the spark image (its Java): %w", err)
		}
	}
	insts := make([]platform.Instance, n)
	homes := make([]string, n)
	var mu sync.Mutex
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		mu.Lock()
		defer mu.Unlock()
		par.Each(n, func(i int) error {
			if insts[i] != nil {
				insts[i].Close(cctx)
			}
			return nil
		})
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := par.Each(n, func(i int) error {
		s := env.Base
		s.Name = env.NewName()
		s.Image = image.Spark
		in, err := env.Platform.Create(ctx, s)
		mu.Lock()
		insts[i] = in
		mu.Unlock()
		if err != nil {
			return fmt.Errorf("mapreduce: create instance %d: %w", i, err)
		}
		// Hadoop's jars, untimed
		home := "/tmp/isobench-mapreduce-" + s.Name
		homes[i] = home
		copies := [][2]string{{conf, home + "/conf/log4j.properties"}, {order, home + "/classpath.txt"}}
		for _, j := range js {
			copies = append(copies, [2]string{j, home + "/lib/" + filepath.Base(j)})
		}
		for _, c := range copies {
			if err := in.CopyIn(ctx, c[0], c[1], 0o644); err != nil {
				return fmt.Errorf("mapreduce: copying %s into instance %d: %w", filepath.Base(c[0]), i, err)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	ms := make([][]sample.Metric, n)
	// each instance's own home: one session per instance, released together
	sessions := make([]*agenthost.Session, n)
	for i, in := range insts {
		raw := p.Raw()
		raw["home"] = homes[i]
		sessions[i] = agenthost.Start(ctx, in, JobName, spec.Canonical(raw))
	}
	abort := func() {
		for _, s := range sessions {
			s.Abort()
		}
	}
	if err := par.Each(n, func(i int) error { return sessions[i].WaitReady(ctx) }); err != nil {
		abort()
		return nil, fmt.Errorf("mapreduce: preparing the input: %w", err)
	}
	for _, s := range sessions {
		if err := s.Release(); err != nil {
			abort()
			return nil, fmt.Errorf("mapreduce: %w", err)
		}
	}
	if err := par.Each(n, func(i int) error { return sessions[i].WaitStarted(ctx) }); err != nil {
		abort()
		return nil, fmt.Errorf("mapreduce: %w", err)
	}
	if err := par.Each(n, func(i int) error {
		m, _, err := sessions[i].Result(ctx)
		if err != nil {
			return fmt.Errorf("instance %d: %w", i, err)
		}
		ms[i] = m
		return nil
	}); err != nil {
		abort()
		return nil, fmt.Errorf("mapreduce: %w", err)
	}
	tags := map[string]string{"job": p.Str("job"), "tool": "hadoop-" + hadoop.Version, "mode": "local"}
	res := make([]workload.InstanceResult, n)
	for i := range ms {
		res[i] = workload.InstanceResult{Instance: i, Metrics: ms[i], Tags: maps.Clone(tags)}
	}
	return res, nil
}

// java finds the JVM in the instance.
func java() (string, error) {
	if p, err := exec.LookPath("java"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/java", "/usr/local/bin/java"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if m, _ := filepath.Glob("/usr/lib/jvm/*/bin/java"); len(m) > 0 {
		sort.Strings(m)
		return m[len(m)-1], nil
	}
	return "", errors.New("mapreduce: no java in this instance (use the spark image, or install a JRE natively)")
}

// classpath is home's log configuration and jars in Maven's order.
func classpath(home string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(home, "classpath.txt"))
	if err != nil {
		return nil, fmt.Errorf("mapreduce: Hadoop's jars were not copied in: %w", err)
	}
	cp := []string{filepath.Join(home, "conf")}
	for _, n := range strings.Fields(string(b)) {
		cp = append(cp, filepath.Join(home, "lib", n))
	}
	return cp, nil
}

// runHadoop runs one example job in dir and returns its report; a job
// that fails is an error in Hadoop's words.
func runHadoop(ctx context.Context, javaBin, dir string, job hadoop.Job) (hadoop.Report, time.Duration, error) {
	args, err := job.JavaArgs()
	if err != nil {
		return hadoop.Report{}, 0, err
	}
	cmd := exec.CommandContext(ctx, javaBin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	t0 := time.Now()
	runErr := cmd.Run()
	wall := time.Since(t0)
	if ctx.Err() != nil {
		return hadoop.Report{}, 0, ctx.Err()
	}
	rep, err := hadoop.Parse(bytes.NewReader(out.Bytes()))
	if err != nil {
		return hadoop.Report{}, 0, fmt.Errorf("%s: %w", job.Program, err)
	}
	if runErr != nil {
		return hadoop.Report{}, 0, fmt.Errorf("%s: java exited %w after the job completed", job.Program, runErr)
	}
	return rep, wall, nil
}

func runJob(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	if p.Str("home") == "" {
		return nil, errors.New("mapreduce: no home with Hadoop's jars (the host copies them in)")
	}
	javaBin, err := java()
	if err != nil {
		return nil, err
	}
	cp, err := classpath(p.Str("home"))
	if err != nil {
		return nil, err
	}
	scratch, err := workload.Scratch()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(scratch, "mapreduce-")
	if err != nil {
		return nil, fmt.Errorf("mapreduce: %w", err)
	}
	defer os.RemoveAll(work)
	size := p.Size("size")
	in, out := filepath.Join(work, "in"), filepath.Join(work, "out")
	var verify func() error
	var inBytes int64
	switch p.Str("job") {
	case "wordcount":
		want, n, err := writeText(filepath.Join(in, "part-0"), size, uint64(p.Int("seed")))
		if err != nil {
			return nil, err
		}
		inBytes = n
		verify = func() error { return checkCounts(out, want) }
	case "terasort":
		rows := max(1, size/100)
		if _, _, err := runHadoop(ctx, javaBin, work, hadoop.Job{Classpath: cp, Program: "teragen", Args: []string{strconv.FormatInt(rows, 10), in}}); err != nil {
			return nil, fmt.Errorf("mapreduce: generating the input: %w", err)
		}
		sum, err := recordSum(in, false)
		if err != nil {
			return nil, err
		}
		if sum.n != rows {
			return nil, fmt.Errorf("mapreduce: teragen wrote %d records, asked %d", sum.n, rows)
		}
		inBytes = rows * 100
		verify = func() error {
			got, err := recordSum(out, true)
			if err != nil {
				return err
			}
			if got != sum {
				return fmt.Errorf("mapreduce: terasort's output is not its input sorted: %d records (checksum %x), want %d (%x)", got.n, got.crc, sum.n, sum.crc)
			}
			return nil
		}
	}
	if err := ready(); err != nil {
		return nil, err
	}
	rep, wall, err := runHadoop(ctx, javaBin, work, hadoop.Job{Classpath: cp, Program: p.Str("job"), Args: []string{in, out}, Reducers: p.Int("reducers")})
	if err != nil {
		return nil, fmt.Errorf("mapreduce: %w", err)
	}
	if err := verify(); err != nil {
		return nil, err
	}
	secs := rep.Duration().Seconds()
	if !(secs > 0) {
		return nil, fmt.Errorf("mapreduce: job %s took no measurable time in its log", rep.JobID)
	}
	return []sample.Metric{
		{Name: "job_duration", Value: secs, Unit: "s", Better: sample.Lower, Agg: sample.Max},
		{Name: "throughput", Value: float64(inBytes) / 1e6 / secs, Unit: "MB/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "wall_time", Value: wall.Seconds(), Unit: "s", Better: sample.Lower, Agg: sample.Max},
		{Name: "input_bytes", Value: float64(inBytes), Unit: "B", Better: sample.Higher, Agg: sample.None},
	}, nil
}

// writeText writes about size bytes of lines of words drawn from a fixed
// vocabulary with a seeded generator, and returns how often each word
// occurs and the bytes written.
func writeText(file string, size int64, seed uint64) (map[string]int64, int64, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, 0, fmt.Errorf("mapreduce: %w", err)
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, 0, fmt.Errorf("mapreduce: %w", err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(seed, 0x150b))
	counts := map[string]int64{}
	var n int64
	for n < size {
		words := 8 + r.IntN(8)
		for k := 0; k < words; k++ {
			word := "w" + strconv.Itoa(r.IntN(5000))
			counts[word]++
			sep := " "
			if k == words-1 {
				sep = "\n"
			}
			m, _ := w.WriteString(word + sep)
			n += int64(m)
		}
	}
	if err := w.Flush(); err != nil {
		return nil, 0, fmt.Errorf("mapreduce: %w", err)
	}
	return counts, n, f.Close()
}

// partFiles are a job's output files in order.
func partFiles(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "_SUCCESS")); err != nil {
		return nil, fmt.Errorf("mapreduce: the job left no _SUCCESS in its output: %w", err)
	}
	m, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil || len(m) == 0 {
		return nil, fmt.Errorf("mapreduce: the job wrote no part files in %s", dir)
	}
	sort.Strings(m)
	return m, nil
}

// checkCounts compares wordcount's output with the counts written.
func checkCounts(dir string, want map[string]int64) error {
	parts, err := partFiles(dir)
	if err != nil {
		return err
	}
	got := map[string]int64{}
	for _, pf := range parts {
		f, err := os.Open(pf)
		if err != nil {
			return fmt.Errorf("mapreduce: %w", err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			w, c, ok := strings.Cut(sc.Text(), "\t")
			v, err := strconv.ParseInt(c, 10, 64)
			if !ok || err != nil {
				f.Close()
				return fmt.Errorf("mapreduce: wordcount output line %q is not WORD<TAB>COUNT", sc.Text())
			}
			got[w] += v
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("mapreduce: %w", err)
		}
	}
	if !maps.Equal(got, want) {
		for w, c := range want {
			if got[w] != c {
				return fmt.Errorf("mapreduce: wordcount counted %q %d times, the input has it %d times (%d words out, %d in)", w, got[w], c, len(got), len(want))
			}
		}
		return fmt.Errorf("mapreduce: wordcount output has %d words, the input %d", len(got), len(want))
	}
	return nil
}

// records is a multiset summary of TeraSort records: their count and the
// sum of their CRC-32s (order-independent).
type records struct {
	n   int64
	crc uint64
}

// recordSum reads the 100-byte records of a job's part files; sorted
// requires their 10-byte keys in order across the files.
func recordSum(dir string, sorted bool) (records, error) {
	parts, err := partFiles(dir)
	if err != nil {
		return records{}, err
	}
	var s records
	var prev []byte
	rec := make([]byte, 100)
	for _, pf := range parts {
		f, err := os.Open(pf)
		if err != nil {
			return records{}, fmt.Errorf("mapreduce: %w", err)
		}
		r := bufio.NewReaderSize(f, 1<<20)
		for {
			_, err := io.ReadFull(r, rec)
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return records{}, fmt.Errorf("mapreduce: %s: not whole 100-byte records: %w", filepath.Base(pf), err)
			}
			if sorted && prev != nil && bytes.Compare(prev, rec[:10]) > 0 {
				f.Close()
				return records{}, fmt.Errorf("mapreduce: terasort's output is out of order at record %d of %s", s.n+1, filepath.Base(pf))
			}
			prev = append(prev[:0], rec[:10]...)
			s.n++
			s.crc += uint64(crc32.ChecksumIEEE(rec))
		}
		f.Close()
	}
	return s, nil
}
