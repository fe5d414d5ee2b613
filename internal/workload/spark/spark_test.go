package spark

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"hash/crc32"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func TestWordsDeterministicAndCounted(t *testing.T) {
	var a, b bytes.Buffer
	ta, err := GenWords(&a, 64<<10, 7)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := GenWords(&b, 64<<10, 7)
	if !bytes.Equal(a.Bytes(), b.Bytes()) || ta != tb {
		t.Fatal("the same seed gave different text")
	}
	var c bytes.Buffer
	GenWords(&c, 64<<10, 8)
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("another seed gave the same text")
	}
	if ta.Bytes != int64(a.Len()) || ta.Bytes < 64<<10 || ta.Bytes > 64<<10+256 {
		t.Fatalf("%d bytes reported, %d written, want just over %d", ta.Bytes, a.Len(), 64<<10)
	}
	// Count independently.
	counts := map[string]int64{}
	var total int64
	for _, w := range strings.Fields(a.String()) {
		counts[w]++
		total++
	}
	top, topN := "", int64(0)
	for w, n := range counts {
		if n > topN || (n == topN && w < top) {
			top, topN = w, n
		}
	}
	if total != ta.Total || int64(len(counts)) != ta.Distinct || top != ta.TopWord || topN != ta.TopCount {
		t.Fatalf("truth %+v, counted total %d distinct %d top %q x%d", ta, total, len(counts), top, topN)
	}
	// Zipf: the top word is far more frequent than a uniform draw would make it.
	if float64(ta.TopCount) < 10*float64(ta.Total)/float64(ta.Distinct) {
		t.Errorf("top word %d of %d words over %d distinct: not skewed", ta.TopCount, ta.Total, ta.Distinct)
	}
}

func TestWordsUnique(t *testing.T) {
	seen := map[string]int{}
	for i := 0; i < wordVocab; i++ {
		w := Word(i)
		if j, dup := seen[w]; dup {
			t.Fatalf("Word(%d) = Word(%d) = %q", i, j, w)
		}
		seen[w] = i
	}
}

func TestRecordsShape(t *testing.T) {
	var a, b bytes.Buffer
	ta, err := GenRecords(&a, 10_000, 3)
	if err != nil {
		t.Fatal(err)
	}
	GenRecords(&b, 10_000, 3)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("not deterministic")
	}
	if ta.Records != 100 || ta.Bytes != 10_000 || a.Len() != 10_000 {
		t.Fatalf("truth %+v, %d bytes", ta, a.Len())
	}
	var sum uint64
	for i := 0; i < 100; i++ {
		rec := a.Bytes()[i*RecordSize : (i+1)*RecordSize]
		if rec[98] != '\r' || rec[99] != '\n' || bytes.ContainsAny(rec[:98], "\r\n") {
			t.Fatalf("record %d: %q", i, rec)
		}
		id, err := strconv.ParseUint(string(rec[12:44]), 16, 64)
		if err != nil || id != uint64(i) {
			t.Fatalf("record %d has row id %q", i, rec[12:44])
		}
		sum += recordHash(rec[:98])
	}
	if sum != ta.Checksum {
		t.Fatal("checksum differs")
	}
}

func TestPageRankReference(t *testing.T) {
	// A 3-cycle: every rank stays 1.
	g := &Graph{N: 3, Off: []int64{0, 1, 2, 3}, Dst: []int32{1, 2, 0}}
	for _, r := range PageRank(g, 5) {
		if math.Abs(r-1) > 1e-12 {
			t.Fatalf("cycle ranks %v", PageRank(g, 5))
		}
	}
	// 0->1, 0->2, 1->2, 2->0, one iteration by hand:
	// r0 = .15+.85*1 = 1, r1 = .15+.85*.5 = .575, r2 = .15+.85*1.5 = 1.425
	g = &Graph{N: 3, Off: []int64{0, 2, 3, 4}, Dst: []int32{1, 2, 2, 0}}
	want := []float64{1, 0.575, 1.425}
	for i, r := range PageRank(g, 1) {
		if math.Abs(r-want[i]) > 1e-12 {
			t.Fatalf("ranks %v, want %v", PageRank(g, 1), want)
		}
	}
}

func TestGraph(t *testing.T) {
	var buf bytes.Buffer
	tr, err := GenRanks(&buf, 200_000, 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Bytes < 150_000 || tr.Bytes > 260_000 || tr.Bytes != int64(buf.Len()) {
		t.Fatalf("%d bytes for 200000", tr.Bytes)
	}
	g := GenGraph(int(tr.Nodes), 5)
	in := make([]int, g.N)
	for v := 0; v < g.N; v++ {
		out := g.Dst[g.Off[v]:g.Off[v+1]]
		if len(out) == 0 {
			t.Fatalf("node %d has no out-link", v)
		}
		seen := map[int32]bool{}
		for _, d := range out {
			if seen[d] || int(d) == v {
				t.Fatalf("node %d: duplicate or self link to %d", v, d)
			}
			seen[d] = true
			in[d]++
		}
	}
	for v, n := range in {
		if n == 0 {
			t.Fatalf("node %d has no in-link", v)
		}
	}
	sum := 0.0
	for _, r := range PageRank(g, 3) {
		sum += r
	}
	if math.Abs(sum-float64(g.N)) > 1e-6*float64(g.N) {
		t.Fatalf("ranks sum to %v, want %d", sum, g.N)
	}
	if int64(bytes.Count(buf.Bytes(), []byte("\n"))) != tr.Edges {
		t.Fatal("edge lines differ from the edge count")
	}
}

func TestPoints(t *testing.T) {
	var buf bytes.Buffer
	tr, err := GenPoints(&buf, 100_000, 9, 4)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Bytes != int64(buf.Len()) || tr.Bytes < 100_000 {
		t.Fatalf("%d bytes", tr.Bytes)
	}
	if len(tr.Means) != 4 || tr.Sep < kmeansMinSep {
		t.Fatalf("%d means, separation %v", len(tr.Means), tr.Sep)
	}
	// Recompute the means from the text.
	sums := make([][]float64, 4)
	for i := range sums {
		sums[i] = make([]float64, kmeansDims)
	}
	sc := bufio.NewScanner(&buf)
	n := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != kmeansDims {
			t.Fatalf("line %d has %d fields", n, len(f))
		}
		for d, s := range f {
			v, _ := strconv.ParseFloat(s, 64)
			sums[n%4][d] += v
		}
		n++
	}
	if int64(n) != tr.Points {
		t.Fatalf("%d points, truth says %d", n, tr.Points)
	}
	for c := range sums {
		for d := range sums[c] {
			m := sums[c][d] / float64((n-c+3)/4)
			if math.Abs(m-tr.Means[c][d]) > 1e-9 {
				t.Fatalf("cluster %d dim %d: mean %v, truth %v", c, d, m, tr.Means[c][d])
			}
		}
	}
}

func TestPrepareCaches(t *testing.T) {
	dir := t.TempDir()
	p, err := Def.Resolve(map[string]string{"job": "terasort", "size": "50000"})
	if err != nil {
		t.Fatal(err)
	}
	j, err := Prepare(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(j.Input)
	if j.Bytes != 50_000 || st.Size() != 50_000 {
		t.Fatalf("%d bytes", j.Bytes)
	}
	// Unchanged parameters: the same file, not rewritten.
	j2, err := Prepare(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(j2.Input)
	if j2.Input != j.Input || !os.SameFile(st, st2) || !st2.ModTime().Equal(st.ModTime()) || string(j2.Truth) != string(j.Truth) {
		t.Fatal("the input was generated again")
	}
	// Other parameters: a new input, the old one removed.
	p3, _ := Def.Resolve(map[string]string{"job": "terasort", "size": "60000"})
	j3, err := Prepare(dir, p3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(j.Input); !os.IsNotExist(err) || j3.Bytes != 60_000 {
		t.Fatalf("old input left (%v) or wrong size %d", err, j3.Bytes)
	}
}

func TestParams(t *testing.T) {
	p, err := Def.Resolve(map[string]string{"job": "kmeans"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Int("iterations") != 5 || p.Size("size") != 32<<20 {
		t.Fatalf("kmeans defaults: %v", p)
	}
	p, _ = Def.Resolve(map[string]string{"job": "pagerank", "iterations": "7"})
	if p.Int("iterations") != 7 {
		t.Fatalf("%v", p)
	}
	if _, err := Def.Resolve(map[string]string{"job": "grep"}); err == nil {
		t.Fatal("accepted job=grep")
	}
}

// Verification must reject wrong answers.
func TestVerifyRejects(t *testing.T) {
	truth, _ := json.Marshal(WordTruth{Total: 10, Distinct: 3, TopWord: "ba", TopCount: 5})
	good := []byte(`{"total":10,"distinct":3,"top_word":"ba","top_count":5}`)
	if err := verifyWords(truth, good); err != nil {
		t.Fatal(err)
	}
	if err := verifyWords(truth, []byte(`{"total":9,"distinct":3,"top_word":"ba","top_count":5}`)); err == nil {
		t.Fatal("a lost word passed")
	}
	// An unsorted TeraSort output.
	dir := t.TempDir()
	var in bytes.Buffer
	st, _ := GenRecords(&in, 1000, 1)
	st2, _ := json.Marshal(st)
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(in.String(), "\r\n", "\n")), "\n")
	os.WriteFile(filepath.Join(dir, "part-00000"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	if err := verifySort(st2, dir); err == nil || !strings.Contains(err.Error(), "sorts before") {
		t.Fatalf("unsorted output: %v", err)
	}
	// K-means with two clusters merged.
	kt, _ := json.Marshal(KMeansTruth{Points: 2, Means: [][]float64{make([]float64, kmeansDims), append(make([]float64, kmeansDims-1), 30)}})
	mid := append(make([]float64, kmeansDims-1), 15)
	ks, _ := json.Marshal(map[string]any{"points": 2, "centres": [][]float64{mid, make([]float64, kmeansDims)}})
	if err := verifyKMeans(kt, ks); err == nil {
		t.Fatal("a merged centre passed")
	}
}

// runHost runs one job with the host's Spark, skipping without it.
func runHost(t *testing.T, params map[string]string) (Job, Result) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Spark")
	}
	in, err := Find(t.Context())
	if err != nil {
		t.Skip(err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("no java: apt-get install openjdk-17-jre-headless")
	}
	p, err := Def.Resolve(params)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	j, err := Prepare(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), Def.Timeout(p))
	defer cancel()
	res, err := Run(ctx, Submit{Install: in, Master: "local[2]", Memory: 1 << 30, Scratch: dir}, j, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes in %.2fs (job %.2fs): %s", j.Name, j.Bytes, res.Seconds, res.JobSeconds, truncate(res.Summary))
	return j, res
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

func TestWordCountOnSpark(t *testing.T) {
	j, res := runHost(t, map[string]string{"job": "wordcount", "size": "2m"})
	if err := Verify(j, res); err != nil {
		t.Fatal(err)
	}
	var tr WordTruth
	json.Unmarshal(j.Truth, &tr)
	var s map[string]any
	json.Unmarshal(res.Summary, &s)
	if s["total"].(float64) != float64(tr.Total) || tr.Total == 0 {
		t.Fatalf("summary %v, truth %+v", s, tr)
	}
	for _, m := range Metrics(j, res) {
		if err := m.Validate(); err != nil || !(m.Value > 0) {
			t.Errorf("metric %+v: %v", m, err)
		}
	}
}

func TestTeraSortOnSpark(t *testing.T) {
	j, res := runHost(t, map[string]string{"job": "terasort", "size": "2m"})
	if err := Verify(j, res); err != nil {
		t.Fatal(err)
	}
	// Break the output: a lost record must fail verification.
	parts, _ := filepath.Glob(filepath.Join(res.Output, "part-*"))
	b, _ := os.ReadFile(parts[len(parts)-1])
	os.WriteFile(parts[len(parts)-1], b[:len(b)-(RecordSize-1)], 0o644)
	if err := Verify(j, res); err == nil {
		t.Fatal("an output with a record lost passed")
	}
}

func TestPageRankOnSpark(t *testing.T) {
	// A tiny graph: every rank is compared with the reference.
	j, res := runHost(t, map[string]string{"job": "pagerank", "size": "4k", "iterations": "4"})
	var tr RankTruth
	json.Unmarshal(j.Truth, &tr)
	if tr.Ranks == nil || tr.Nodes > smallGraph {
		t.Fatalf("not a small graph: %d nodes", tr.Nodes)
	}
	if err := Verify(j, res); err != nil {
		t.Fatal(err)
	}
}

func TestKMeansOnSpark(t *testing.T) {
	j, res := runHost(t, map[string]string{"job": "kmeans", "size": "1m", "k": "5"})
	if err := Verify(j, res); err != nil {
		t.Fatal(err)
	}
}

func TestVerifySortSummary(t *testing.T) {
	var in bytes.Buffer
	st, _ := GenRecords(&in, 1000, 1)
	truth, _ := json.Marshal(st)
	recs := strings.Split(strings.TrimSpace(strings.ReplaceAll(in.String(), "\r\n", "\n")), "\n")
	sortRecs := append([]string(nil), recs...)
	sort.Slice(sortRecs, func(a, b int) bool { return sortRecs[a][:10] < sortRecs[b][:10] })
	summary := func(parts ...[]string) []byte {
		var v []map[string]any
		for i, p := range parts {
			var sum uint64
			for _, r := range p {
				sum += uint64(crc32.ChecksumIEEE([]byte(r)))
			}
			m := map[string]any{"part": i, "records": len(p), "checksum": sum, "ordered": true, "bad_length": 0}
			if len(p) > 0 {
				m["first"], m["last"] = p[0][:10], p[len(p)-1][:10]
			}
			v = append(v, m)
		}
		b, _ := json.Marshal(map[string]any{"validate": v})
		return b
	}
	if err := verifySortSummary(truth, summary(sortRecs[:4], nil, sortRecs[4:])); err != nil {
		t.Fatal(err)
	}
	if err := verifySortSummary(truth, summary(sortRecs[4:], sortRecs[:4])); err == nil {
		t.Fatal("partitions in the wrong order passed")
	}
	if err := verifySortSummary(truth, summary(sortRecs[1:])); err == nil {
		t.Fatal("a lost record passed")
	}
}

// The cluster passes its parameters on to its in-guest halves: they must
// accept them.
func TestClusterParamsReachHalves(t *testing.T) {
	p, err := ClusterDef.Resolve(map[string]string{"job": "pagerank", "cluster": "3", "executor-memory": "512m"})
	if err != nil {
		t.Fatal(err)
	}
	prep := p.Raw()
	delete(prep, "cluster")
	delete(prep, "executor-memory")
	if _, err := prepareDef.Resolve(prep); err != nil {
		t.Fatal(err)
	}
	drv := p.Raw()
	delete(drv, "cluster")
	drv["master"], drv["driver-host"] = "spark://10.0.0.1:7077", "10.0.0.1"
	dp, err := driverDef.Resolve(drv)
	if err != nil {
		t.Fatal(err)
	}
	if dp.Int("iterations") != 3 || dp.Size("executor-memory") != 512<<20 {
		t.Fatalf("driver params %v", dp)
	}
}

// A cluster of instances with their own addresses uses Spark's usual
// ports; one of instances sharing an address (native) gives every daemon
// a port of its own; mixed or missing addresses are refused.
func TestClusterPorts(t *testing.T) {
	own, err := clusterPorts([]string{"10.199.0.2", "10.199.0.3", "10.199.0.4"})
	if err != nil || own.shared || own.master != masterPort || own.masterUI != masterUIPort || len(own.workerUI) != 2 || own.workerUI[1] != workerUIPort {
		t.Fatalf("own addresses: %+v, %v", own, err)
	}
	sh, err := clusterPorts([]string{"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1"})
	if err != nil || !sh.shared || len(sh.workerUI) != 3 {
		t.Fatalf("shared address: %+v, %v", sh, err)
	}
	seen := map[int]bool{}
	for _, p := range append([]int{sh.master, sh.masterUI}, sh.workerUI...) {
		if p <= 0 || seen[p] {
			t.Fatalf("shared address: port %d zero or used twice in %+v", p, sh)
		}
		seen[p] = true
	}
	for _, bad := range [][]string{{"10.199.0.2", "10.199.0.2", "10.199.0.3"}, {"10.199.0.2", ""}, {"none", "none"}} {
		if _, err := clusterPorts(bad); err == nil {
			t.Errorf("addresses %q accepted", bad)
		}
	}
}
