package astar

import (
	"context"
	"testing"
)

func TestKnownShortestPaths(t *testing.T) {
	// S at (0,0), T at (6,0): the wall in column 3 forces a detour through
	// the gap at row 4: 3 down... counted by hand: (0,0)->(2,0) 2 moves,
	// down to (2,4) 4, across to (4,4) 2, up to (4,0) 4, to (6,0) 2 = 14.
	g, err := Parse(
		"...#...",
		"...#...",
		"...#...",
		"...#...",
		".......",
	)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSearch(g)
	if got := s.Path(0, 0, 6, 0); got != 14 {
		t.Errorf("detour: path length %d, want 14", got)
	}
	if got := s.Path(0, 0, 0, 0); got != 0 {
		t.Errorf("start = goal: %d, want 0", got)
	}
	if got := s.Path(0, 4, 6, 4); got != 6 {
		t.Errorf("straight row: %d, want 6", got)
	}

	// Impossible: the goal is walled in.
	g2, _ := Parse(
		".....",
		"..###",
		"..#.#",
		"..###",
	)
	s2 := NewSearch(g2)
	if got := s2.Path(0, 0, 3, 2); got != -1 {
		t.Errorf("walled-in goal: %d, want -1", got)
	}
	if got := s2.Path(0, 0, 2, 1); got != -1 {
		t.Errorf("blocked goal: %d, want -1", got)
	}
	if got := s2.Path(0, 0, 4, 0); got != 4 {
		t.Errorf("after a failed query: %d, want 4", got)
	}
}

// bfs is the reference: breadth-first search gives shortest unit-cost paths.
func bfs(g *Grid, sx, sy, tx, ty int) int {
	src, dst := sy*g.W+sx, ty*g.W+tx
	if g.Blocked[src] || g.Blocked[dst] {
		return -1
	}
	dist := make([]int, g.W*g.H)
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	q := []int{src}
	for len(q) > 0 {
		n := q[0]
		q = q[1:]
		if n == dst {
			return dist[n]
		}
		x, y := n%g.W, n/g.W
		for _, m := range []int{n - 1, n + 1, n - g.W, n + g.W} {
			switch {
			case m == n-1 && x == 0, m == n+1 && x == g.W-1, m < 0, m >= g.W*g.H, y == 0 && m == n-g.W:
				continue
			}
			if !g.Blocked[m] && dist[m] < 0 {
				dist[m] = dist[n] + 1
				q = append(q, m)
			}
		}
	}
	return -1
}

func TestGeneratedMapsMatchBFS(t *testing.T) {
	g := Generate(80, 60, 0.35, 7)
	qs, err := Queries(g, 150, 7)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSearch(g)
	unreachable := 0
	for _, q := range qs {
		want := bfs(g, q.SX, q.SY, q.TX, q.TY)
		if got := s.Path(q.SX, q.SY, q.TX, q.TY); got != want {
			t.Fatalf("query %+v: A* %d, BFS %d", q, got, want)
		}
		if want < 0 {
			unreachable++
		}
	}
	t.Logf("%d of %d queries unreachable", unreachable, len(qs))
}

func TestSeededWorkIsIdentical(t *testing.T) {
	a := Generate(200, 200, 0.25, 42)
	b := Generate(200, 200, 0.25, 42)
	blocked := 0
	for i := range a.Blocked {
		if a.Blocked[i] != b.Blocked[i] {
			t.Fatal("same seed, different maps")
		}
		if a.Blocked[i] {
			blocked++
		}
	}
	if blocked != int(0.25*200*200) {
		t.Fatalf("%d cells blocked, want %d", blocked, int(0.25*200*200))
	}
	qa, _ := Queries(a, 50, 42)
	ra, err := Solve(context.Background(), a, qa)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := Solve(context.Background(), b, qa)
	if ra != rb || ra.Found == 0 || ra.Expanded == 0 {
		t.Fatalf("results %+v vs %+v", ra, rb)
	}
}

func TestRunReportsExecTime(t *testing.T) {
	p, err := Def.Resolve(map[string]string{"width": "128", "height": "128", "queries": "20"})
	if err != nil {
		t.Fatal(err)
	}
	released := false
	ms, err := Def.Agent(context.Background(), p, func() error { released = true; return nil })
	if err != nil || !released {
		t.Fatalf("%v (released %v)", err, released)
	}
	got := map[string]float64{}
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		got[m.Name] = m.Value
	}
	if got["exec_time"] <= 0 || got["nodes_expanded"] <= 0 || got["paths_found"] < 1 || got["paths_found"] > 20 {
		t.Fatalf("metrics %v", got)
	}
}
