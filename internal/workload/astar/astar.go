// Package astar is an open substitute for SPEC CPU 2006 473.astar (study
// 003's integer CPU benchmark; SPEC is proprietary): A* path finding on
// generated 2D grid maps, as 473.astar's game-AI library does on its own
// maps. A seeded generator builds a map of walls (random rectangles, like
// buildings, over scattered single blocked cells) and the workload answers
// a fixed list of shortest-path queries between random open cells, so the
// work is identical on every platform and every repetition; the metric is
// the execution time of the whole list.
//
// Moves are 4-connected with unit cost and the heuristic is the Manhattan
// distance (consistent), so every path found is a shortest one.
package astar

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// Def is the astar workload.
var Def = workload.Def{
	Name: "astar",
	Estimate: func(p workload.Params) time.Duration {
		return workload.Seconds(float64(p.Int("queries")) * float64(p.Int("width")*p.Int("height")) * 9e-9)
	},
	FixedWork: func(workload.Params) bool { return true },
	Help:      "open substitute for SPEC CPU 473.astar: A* shortest paths on a generated, seeded grid map; execution time",
	Params: []workload.Param{
		{Name: "width", Kind: workload.Int, Default: "1024", Min: 2, Max: 1 << 14, Help: "map width in cells"},
		{Name: "height", Kind: workload.Int, Default: "1024", Min: 2, Max: 1 << 14, Help: "map height in cells"},
		{Name: "walls", Kind: workload.Float, Default: "0.25", Min: 0, Max: 0.6, Help: "fraction of cells blocked"},
		{Name: "queries", Kind: workload.Int, Default: "400", Min: 1, Max: 1e7, Help: "shortest-path queries answered (the work)"},
		{Name: "seed", Kind: workload.Int, Default: "473", Min: 0, Help: "map and query generator seed"},
	},
	Agent: run,
	Timeout: func(p workload.Params) time.Duration {
		// ~ a few ms per query on a 1024x1024 map; be generous.
		cells := float64(p.Int("width")) * float64(p.Int("height"))
		return time.Duration(float64(p.Int("queries"))*cells/1e5*float64(time.Millisecond)) + 2*time.Minute
	},
}

// Grid is a map: Blocked[y*W+x] is a wall.
type Grid struct {
	W, H    int
	Blocked []bool
}

// Parse reads a map drawn with '#' for walls and any other byte for open
// cells, one row per string (all rows as long as the first).
func Parse(rows ...string) (*Grid, error) {
	if len(rows) == 0 || len(rows[0]) == 0 {
		return nil, errors.New("astar: empty map")
	}
	g := &Grid{W: len(rows[0]), H: len(rows), Blocked: make([]bool, len(rows)*len(rows[0]))}
	for y, r := range rows {
		if len(r) != g.W {
			return nil, fmt.Errorf("astar: row %d has %d cells, want %d", y, len(r), g.W)
		}
		for x := 0; x < g.W; x++ {
			g.Blocked[y*g.W+x] = r[x] == '#'
		}
	}
	return g, nil
}

// Generate builds a seeded map: scattered blocked cells and rectangular
// walls until the fraction walls of cells is blocked.
func Generate(w, h int, walls float64, seed uint64) *Grid {
	g := &Grid{W: w, H: h, Blocked: make([]bool, w*h)}
	r := rand.New(rand.NewPCG(seed, 0x473))
	want := int(walls * float64(w*h))
	blocked := 0
	block := func(i int) {
		if !g.Blocked[i] {
			g.Blocked[i] = true
			blocked++
		}
	}
	// A third as noise, the rest as rectangles (thin walls and blocks).
	for blocked < want/3 {
		block(r.IntN(w * h))
	}
	for blocked < want {
		rw, rh := 1+r.IntN(max(1, w/16)), 1+r.IntN(max(1, h/16))
		if r.IntN(2) == 0 {
			rw = 1 // a thin vertical wall
		} else if r.IntN(2) == 0 {
			rh = 1 // a thin horizontal wall
		}
		x0, y0 := r.IntN(w), r.IntN(h)
		for y := y0; y < min(h, y0+rh) && blocked < want; y++ {
			for x := x0; x < min(w, x0+rw) && blocked < want; x++ {
				block(y*w + x)
			}
		}
	}
	return g
}

// Search answers shortest-path queries on one grid; it keeps its buffers
// between queries (a generation stamp instead of clearing them).
type Search struct {
	g        *Grid
	gcost    []int32
	stamp    []uint32
	closed   []uint32
	gen      uint32
	heap     []entry
	Expanded int64 // nodes taken off the open list, over all queries
}

type entry struct {
	f, g int32
	node int32
}

// NewSearch prepares a search over g.
func NewSearch(g *Grid) *Search {
	n := g.W * g.H
	return &Search{g: g, gcost: make([]int32, n), stamp: make([]uint32, n), closed: make([]uint32, n)}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Path returns the length (number of moves) of a shortest 4-connected path
// from (sx, sy) to (tx, ty), or -1 when there is none (a blocked end or a
// wall in between).
func (s *Search) Path(sx, sy, tx, ty int) int {
	g := s.g
	w := g.W
	src, dst := sy*w+sx, ty*w+tx
	if g.Blocked[src] || g.Blocked[dst] {
		return -1
	}
	s.gen++
	if s.gen == 0 { // wrapped: clear the stamps once
		clear(s.stamp)
		clear(s.closed)
		s.gen = 1
	}
	h := func(n int) int32 { return int32(abs(n%w-tx) + abs(n/w-ty)) }
	s.heap = s.heap[:0]
	s.stamp[src], s.gcost[src] = s.gen, 0
	s.push(entry{f: h(src), g: 0, node: int32(src)})
	for len(s.heap) > 0 {
		e := s.pop()
		n := int(e.node)
		if s.closed[n] == s.gen || e.g != s.gcost[n] {
			continue // a stale entry
		}
		s.closed[n] = s.gen
		s.Expanded++
		if n == dst {
			return int(e.g)
		}
		x, y := n%w, n/w
		ng := e.g + 1
		try := func(m int) {
			if g.Blocked[m] || s.closed[m] == s.gen {
				return
			}
			if s.stamp[m] == s.gen && s.gcost[m] <= ng {
				return
			}
			s.stamp[m], s.gcost[m] = s.gen, ng
			s.push(entry{f: ng + h(m), g: ng, node: int32(m)})
		}
		if x > 0 {
			try(n - 1)
		}
		if x < w-1 {
			try(n + 1)
		}
		if y > 0 {
			try(n - w)
		}
		if y < g.H-1 {
			try(n + w)
		}
	}
	return -1
}

// less orders by f, then prefers the deeper node (larger g), the usual
// tie-break that expands fewer nodes on grids.
func less(a, b entry) bool { return a.f < b.f || (a.f == b.f && a.g > b.g) }

func (s *Search) push(e entry) {
	s.heap = append(s.heap, e)
	i := len(s.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(s.heap[i], s.heap[p]) {
			break
		}
		s.heap[i], s.heap[p] = s.heap[p], s.heap[i]
		i = p
	}
}

func (s *Search) pop() entry {
	top := s.heap[0]
	last := len(s.heap) - 1
	s.heap[0] = s.heap[last]
	s.heap = s.heap[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && less(s.heap[l], s.heap[m]) {
			m = l
		}
		if r < last && less(s.heap[r], s.heap[m]) {
			m = r
		}
		if m == i {
			return top
		}
		s.heap[i], s.heap[m] = s.heap[m], s.heap[i]
		i = m
	}
}

// Query is one path request.
type Query struct{ SX, SY, TX, TY int }

// Queries draws n queries between open cells of g, seeded.
func Queries(g *Grid, n int, seed uint64) ([]Query, error) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	open := 0
	for _, b := range g.Blocked {
		if !b {
			open++
		}
	}
	if open < 2 {
		return nil, errors.New("astar: the map has fewer than two open cells; lower walls")
	}
	cell := func() (int, int) {
		for {
			i := r.IntN(g.W * g.H)
			if !g.Blocked[i] {
				return i % g.W, i / g.W
			}
		}
	}
	qs := make([]Query, n)
	for i := range qs {
		qs[i].SX, qs[i].SY = cell()
		qs[i].TX, qs[i].TY = cell()
	}
	return qs, nil
}

// Result of answering a list of queries.
type Result struct {
	Found, Unreachable int
	TotalLength        int64
	Expanded           int64
}

// Solve answers every query (checking ctx every 16).
func Solve(ctx context.Context, g *Grid, qs []Query) (Result, error) {
	s := NewSearch(g)
	var res Result
	for i, q := range qs {
		if i%16 == 0 {
			if err := ctx.Err(); err != nil {
				return res, err
			}
		}
		if l := s.Path(q.SX, q.SY, q.TX, q.TY); l < 0 {
			res.Unreachable++
		} else {
			res.Found++
			res.TotalLength += int64(l)
		}
	}
	res.Expanded = s.Expanded
	return res, nil
}

func run(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	seed := uint64(p.Int("seed"))
	// Untimed: the map and the queries.
	g := Generate(p.Int("width"), p.Int("height"), p.Float("walls"), seed)
	qs, err := Queries(g, p.Int("queries"), seed)
	if err != nil {
		return nil, err
	}
	if err := ready(); err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := Solve(ctx, g, qs)
	if err != nil {
		return nil, err
	}
	secs := time.Since(start).Seconds()
	if secs <= 0 {
		return nil, errors.New("astar: no measurable time; raise queries")
	}
	return []sample.Metric{
		{Name: "exec_time", Value: secs, Unit: "s", Better: sample.Lower, Agg: sample.Max},
		{Name: "nodes_expanded", Value: float64(res.Expanded), Unit: "nodes", Better: sample.Higher, Agg: sample.Sum},
		{Name: "paths_found", Value: float64(res.Found), Unit: "paths", Better: sample.Higher, Agg: sample.Sum},
		{Name: "path_length_total", Value: float64(res.TotalLength), Unit: "moves", Better: sample.Higher, Agg: sample.Sum},
	}, nil
}
