package spark

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
)

// The generators below play HiBench's prepare step: each writes about size
// bytes of a job's input to w from a seed and returns the truth the job's
// output is checked against. The same (size, seed, shape) always yields the
// same bytes.

// genVersion changes whenever a generator's output changes, so cached
// inputs of an older generator are not reused.
const genVersion = "2"

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// WordTruth is what a WordCount over the generated text must find.
type WordTruth struct {
	Bytes    int64  `json:"bytes"`
	Total    int64  `json:"total"`    // words in the text
	Distinct int64  `json:"distinct"` // different words
	TopWord  string `json:"top_word"` // the most frequent word (ties: the smallest)
	TopCount int64  `json:"top_count"`
}

// wordVocab is the number of different words the text draws from.
const wordVocab = 20000

// Word returns the i-th word of the vocabulary: a pronounceable string
// made of consonant-vowel syllables, unique for every i.
func Word(i int) string {
	const cons, vows = "bcdfghjklmnprstvwz", "aeiou"
	b := make([]byte, 0, 12)
	n := i + 1 // bijective numbering: every i has its own syllable sequence
	for n > 0 {
		n--
		s := n % (len(cons) * len(vows))
		b = append(b, cons[s/len(vows)], vows[s%len(vows)])
		n /= len(cons) * len(vows)
	}
	return string(b)
}

// GenWords writes lines of 6..15 words drawn from a Zipf distribution
// (s=1.1) over wordVocab words until at least size bytes are written.
func GenWords(w io.Writer, size int64, seed uint64) (WordTruth, error) {
	r := rand.New(rand.NewPCG(seed, 0x77c))
	z := rand.NewZipf(r, 1.1, 1, wordVocab-1)
	words := make([]string, wordVocab)
	for i := range words {
		words[i] = Word(i)
	}
	counts := make([]int64, wordVocab)
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<16)
	var written int64
	var total int64
	line := make([]byte, 0, 256)
	for written < size {
		line = line[:0]
		n := 6 + r.IntN(10)
		for j := 0; j < n; j++ {
			k := z.Uint64()
			counts[k]++
			if j > 0 {
				line = append(line, ' ')
			}
			line = append(line, words[k]...)
		}
		line = append(line, '\n')
		total += int64(n)
		written += int64(len(line))
		if _, err := bw.Write(line); err != nil {
			return WordTruth{}, err
		}
	}
	if err := bw.Flush(); err != nil {
		return WordTruth{}, err
	}
	t := WordTruth{Bytes: cw.n, Total: total}
	for k, c := range counts {
		if c == 0 {
			continue
		}
		t.Distinct++
		if c > t.TopCount || (c == t.TopCount && words[k] < t.TopWord) {
			t.TopWord, t.TopCount = words[k], c
		}
	}
	return t, nil
}

// SortTruth is what a TeraSort of the generated records must produce.
type SortTruth struct {
	Bytes    int64  `json:"bytes"`
	Records  int64  `json:"records"`
	Checksum uint64 `json:"checksum"` // sum of the records' CRC-32s (order-free)
}

// RecordSize is the size of one TeraGen record in the input.
const RecordSize = 100

// recordHash hashes one record without its line end (CRC-32, which the
// PySpark side computes too, with zlib.crc32).
func recordHash(rec []byte) uint64 { return uint64(crc32.ChecksumIEEE(rec)) }

// GenRecords writes size/100 (at least one) TeraGen records in gensort's
// ASCII form: a 10-byte printable key, two blanks, the row id as 32 hex
// digits, two blanks, 52 filler bytes and CR LF (100 bytes).
func GenRecords(w io.Writer, size int64, seed uint64) (SortTruth, error) {
	r := rand.New(rand.NewPCG(seed, 0x7e4a))
	n := max(1, size/RecordSize)
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<16)
	t := SortTruth{Records: n}
	rec := make([]byte, RecordSize)
	var id [16]byte
	for i := int64(0); i < n; i++ {
		for j := 0; j < 10; j++ {
			rec[j] = byte(' ' + r.IntN(95)) // printable ASCII, as gensort -a
		}
		rec[10], rec[11] = ' ', ' '
		for j := range id {
			id[j] = 0
		}
		for j := 0; j < 8; j++ {
			id[15-j] = byte(i >> (8 * j))
		}
		hex.Encode(rec[12:44], id[:])
		for j := 44; j < 46; j++ {
			rec[j] = ' '
		}
		f := byte('A' + i%26)
		for j := 46; j < 98; j++ {
			rec[j] = f
		}
		rec[98], rec[99] = '\r', '\n'
		t.Checksum += recordHash(rec[:98])
		if _, err := bw.Write(rec); err != nil {
			return SortTruth{}, err
		}
	}
	if err := bw.Flush(); err != nil {
		return SortTruth{}, err
	}
	t.Bytes = cw.n
	return t, nil
}

// Graph is a directed graph in compressed rows: the out-links of node v
// are Dst[Off[v]:Off[v+1]].
type Graph struct {
	N   int
	Off []int64
	Dst []int32
}

// RankTruth is what PageRank over the generated graph must find.
type RankTruth struct {
	Bytes int64      `json:"bytes"`
	Nodes int64      `json:"nodes"`
	Edges int64      `json:"edges"`
	Top   []NodeRank `json:"top"`             // the highest ranks (reference computation)
	Ranks []float64  `json:"ranks,omitempty"` // every rank, for small graphs
}

// NodeRank is one node's rank.
type NodeRank struct {
	Node int64   `json:"node"`
	Rank float64 `json:"rank"`
}

// pageAvgDegree is the mean out-degree of the generated graph.
const pageAvgDegree = 8

// GraphNodes is how many nodes make a link graph of about size bytes
// ("src\tdst\n" lines, pageAvgDegree per node).
func GraphNodes(size int64) int {
	for d, lim := 1, int64(10); ; d, lim = d+1, lim*10 {
		// With n < 10^d, ids have at most d digits.
		if n := size / int64(pageAvgDegree*(2*d+2)); n < lim || d >= 18 {
			return int(max(2, n))
		}
	}
}

// GenGraph builds a seeded link graph of n nodes: every node links to its
// successor (so every node has an in-link and an out-link and no rank is
// lost) and to 0..2*pageAvgDegree-2 more distinct nodes, popular ones
// more often (Zipf over a seeded permutation).
func GenGraph(n int, seed uint64) *Graph {
	r := rand.New(rand.NewPCG(seed, 0x9a6e))
	perm := r.Perm(n)
	z := rand.NewZipf(r, 1.2, 4, uint64(n-1))
	g := &Graph{N: n, Off: make([]int64, n+1)}
	g.Dst = make([]int32, 0, n*pageAvgDegree)
	for v := 0; v < n; v++ {
		start := len(g.Dst)
		g.Dst = append(g.Dst, int32((v+1)%n))
		extra := r.IntN(2*pageAvgDegree - 1)
		for e, tries := 0, 0; e < extra && tries < 4*extra+8; tries++ {
			var t int
			if tries%2 == 0 {
				t = perm[z.Uint64()]
			} else {
				t = r.IntN(n)
			}
			if t == v {
				continue
			}
			dup := false
			for _, d := range g.Dst[start:] {
				if int(d) == t {
					dup = true
					break
				}
			}
			if !dup {
				g.Dst = append(g.Dst, int32(t))
				e++
			}
		}
		g.Off[v+1] = int64(len(g.Dst))
	}
	return g
}

// WriteGraph writes g as "src\tdst\n" lines.
func WriteGraph(w io.Writer, g *Graph) (int64, error) {
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<16)
	b := make([]byte, 0, 32)
	for v := 0; v < g.N; v++ {
		for _, d := range g.Dst[g.Off[v]:g.Off[v+1]] {
			b = strconv.AppendInt(b[:0], int64(v), 10)
			b = append(b, '\t')
			b = strconv.AppendInt(b, int64(d), 10)
			b = append(b, '\n')
			if _, err := bw.Write(b); err != nil {
				return 0, err
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	return cw.n, nil
}

// PageRank is the reference computation of Spark's PageRank example
// (and HiBench's): every rank starts at 1, and each iteration sets
// rank(v) = 0.15 + 0.85 * sum over u->v of rank(u)/outdeg(u).
func PageRank(g *Graph, iterations int) []float64 {
	rank := make([]float64, g.N)
	next := make([]float64, g.N)
	for i := range rank {
		rank[i] = 1
	}
	for it := 0; it < iterations; it++ {
		clear(next)
		for v := 0; v < g.N; v++ {
			out := g.Dst[g.Off[v]:g.Off[v+1]]
			if len(out) == 0 {
				continue
			}
			c := rank[v] / float64(len(out))
			for _, d := range out {
				next[d] += c
			}
		}
		for v := range next {
			next[v] = 0.15 + 0.85*next[v]
		}
		rank, next = next, rank
	}
	return rank
}

// topRanks returns the k highest ranks (ties: the smaller node first).
func topRanks(rank []float64, k int) []NodeRank {
	idx := make([]int, len(rank))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		if rank[idx[a]] != rank[idx[b]] {
			return rank[idx[a]] > rank[idx[b]]
		}
		return idx[a] < idx[b]
	})
	k = min(k, len(idx))
	top := make([]NodeRank, k)
	for i := 0; i < k; i++ {
		top[i] = NodeRank{Node: int64(idx[i]), Rank: rank[idx[i]]}
	}
	return top
}

// smallGraph is the largest graph whose every rank is checked.
const smallGraph = 1000

// rankTop is how many of the highest ranks the job reports.
const rankTop = 20

// GenRanks writes a link graph of about size bytes and the reference
// ranks after iterations.
func GenRanks(w io.Writer, size int64, seed uint64, iterations int) (RankTruth, error) {
	g := GenGraph(GraphNodes(size), seed)
	n, err := WriteGraph(w, g)
	if err != nil {
		return RankTruth{}, err
	}
	rank := PageRank(g, iterations)
	t := RankTruth{Bytes: n, Nodes: int64(g.N), Edges: int64(len(g.Dst)), Top: topRanks(rank, rankTop)}
	if g.N <= smallGraph {
		t.Ranks = rank
	}
	return t, nil
}

// KMeansTruth is what K-means over the generated points must find.
type KMeansTruth struct {
	Bytes  int64       `json:"bytes"`
	Points int64       `json:"points"`
	Means  [][]float64 `json:"means"` // each cluster's mean of the written coordinates
	Sep    float64     `json:"sep"`   // the smallest distance between two centres
}

// Shape of the K-means input: HiBench's defaults are 20 dimensions and
// unit-variance Gaussian clusters; the centres are far apart (at least
// kmeansMinSep) so the clusters are separable and the answer is known.
const (
	kmeansDims   = 20
	kmeansSpread = 100.0
	kmeansMinSep = 25.0
)

// GenPoints writes points of kmeansDims coordinates ("%.4f", blank
// separated) drawn round k seeded centres with unit variance, cluster i%k
// for point i, until at least size bytes (and at least 2 points a
// cluster) are written.
func GenPoints(w io.Writer, size int64, seed uint64, k int) (KMeansTruth, error) {
	if k < 1 {
		return KMeansTruth{}, fmt.Errorf("spark: k-means needs k >= 1, got %d", k)
	}
	r := rand.New(rand.NewPCG(seed, 0x4ea5))
	centres := make([][]float64, 0, k)
	for tries := 0; len(centres) < k; tries++ {
		if tries > 100000 {
			return KMeansTruth{}, fmt.Errorf("spark: cannot place %d separable centres", k)
		}
		c := make([]float64, kmeansDims)
		for d := range c {
			c[d] = (r.Float64()*2 - 1) * kmeansSpread
		}
		ok := true
		for _, o := range centres {
			if dist(c, o) < kmeansMinSep {
				ok = false
				break
			}
		}
		if ok {
			centres = append(centres, c)
		}
	}
	sums := make([][]float64, k)
	counts := make([]int64, k)
	for i := range sums {
		sums[i] = make([]float64, kmeansDims)
	}
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<16)
	var written, n int64
	b := make([]byte, 0, 256)
	for written < size || n < int64(2*k) {
		c := int(n % int64(k))
		b = b[:0]
		for d := 0; d < kmeansDims; d++ {
			v := math.Round((centres[c][d]+r.NormFloat64())*1e4) / 1e4
			if d > 0 {
				b = append(b, ' ')
			}
			b = strconv.AppendFloat(b, v, 'f', 4, 64)
			sums[c][d] += v
		}
		b = append(b, '\n')
		counts[c]++
		n++
		written += int64(len(b))
		if _, err := bw.Write(b); err != nil {
			return KMeansTruth{}, err
		}
	}
	if err := bw.Flush(); err != nil {
		return KMeansTruth{}, err
	}
	t := KMeansTruth{Bytes: cw.n, Points: n, Sep: math.Inf(1)}
	for i := range sums {
		m := make([]float64, kmeansDims)
		for d := range m {
			m[d] = sums[i][d] / float64(counts[i])
		}
		t.Means = append(t.Means, m)
		for _, o := range centres[:i] {
			t.Sep = min(t.Sep, dist(centres[i], o))
		}
	}
	if math.IsInf(t.Sep, 1) { // one cluster: no pair
		t.Sep = 0
	}
	return t, nil
}

func dist(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return math.Sqrt(s)
}
