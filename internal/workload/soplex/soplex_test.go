package soplex

import (
	"context"
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func le(idx []int, c []float64, b float64) Row { return Row{Index: idx, Coef: c, Sense: LE, RHS: b} }

func TestTextbookOptimum(t *testing.T) {
	// Hillier & Lieberman's Wyndor Glass: max 3x + 5y, x <= 4, 2y <= 12,
	// 3x + 2y <= 18: optimum 36 at (2, 6).
	lp := LP{C: []float64{3, 5}, Rows: []Row{
		le([]int{0}, []float64{1}, 4),
		le([]int{1}, []float64{2}, 12),
		le([]int{0, 1}, []float64{3, 2}, 18),
	}}
	sol, err := Solve(lp, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sol.Status != Optimal || !near(sol.Objective, 36) || !near(sol.X[0], 2) || !near(sol.X[1], 6) {
		t.Fatalf("got %v obj %g x %v, want optimal 36 at (2,6)", sol.Status, sol.Objective, sol.X)
	}
	// Its dual: y = (0, 1.5, 1).
	for i, want := range []float64{0, 1.5, 1} {
		if !near(sol.Duals[i], want) {
			t.Errorf("dual %d = %g, want %g", i, sol.Duals[i], want)
		}
	}
}

func TestPhaseOneEqualityAndGreaterEqual(t *testing.T) {
	// max 2x + 3y, x + y = 4, y <= 3, x >= 0.5: optimum 11 at (1, 3).
	lp := LP{C: []float64{2, 3}, Rows: []Row{
		{Index: []int{0, 1}, Coef: []float64{1, 1}, Sense: EQ, RHS: 4},
		le([]int{1}, []float64{1}, 3),
		{Index: []int{0}, Coef: []float64{1}, Sense: GE, RHS: 0.5},
	}}
	sol, err := Solve(lp, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sol.Status != Optimal || !near(sol.Objective, 11) || !near(sol.X[0], 1) || !near(sol.X[1], 3) {
		t.Fatalf("got %v obj %g x %v, want optimal 11 at (1,3)", sol.Status, sol.Objective, sol.X)
	}
	// A negative right-hand side (the row is flipped inside): -x - y <= -4
	// with max -x - y gives -4.
	lp2 := LP{C: []float64{-1, -1}, Rows: []Row{le([]int{0, 1}, []float64{-1, -1}, -4)}}
	sol, err = Solve(lp2, 0)
	if err != nil || sol.Status != Optimal || !near(sol.Objective, -4) {
		t.Fatalf("flipped row: %v %v %g", err, sol.Status, sol.Objective)
	}
	if !near(sol.Duals[0], 1) {
		t.Errorf("flipped row dual %g, want 1", sol.Duals[0])
	}
}

func TestDetectsUnboundedAndInfeasible(t *testing.T) {
	// max x, x - y <= 1: x and y grow together without bound.
	sol, err := Solve(LP{C: []float64{1, 0}, Rows: []Row{le([]int{0, 1}, []float64{1, -1}, 1)}}, 0)
	if err != nil || sol.Status != Unbounded {
		t.Fatalf("got %v %v, want unbounded", sol.Status, err)
	}
	// x <= 1 and x >= 2.
	sol, err = Solve(LP{C: []float64{1}, Rows: []Row{
		le([]int{0}, []float64{1}, 1),
		{Index: []int{0}, Coef: []float64{1}, Sense: GE, RHS: 2},
	}}, 0)
	if err != nil || sol.Status != Infeasible {
		t.Fatalf("got %v %v, want infeasible", sol.Status, err)
	}
	// x + y = 1 and x + y = 2.
	sol, err = Solve(LP{C: []float64{1, 1}, Rows: []Row{
		{Index: []int{0, 1}, Coef: []float64{1, 1}, Sense: EQ, RHS: 1},
		{Index: []int{0, 1}, Coef: []float64{1, 1}, Sense: EQ, RHS: 2},
	}}, 0)
	if err != nil || sol.Status != Infeasible {
		t.Fatalf("got %v %v, want infeasible", sol.Status, err)
	}
}

// TestGeneratedOptimumIsCertified checks a generated LP's answer by LP
// duality: x feasible, y dual feasible, and c·x = b·y.
func TestGeneratedOptimumIsCertified(t *testing.T) {
	lp := Generate(60, 120, 0.08, 3)
	sol, err := Solve(lp, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sol.Status != Optimal {
		t.Fatalf("status %v", sol.Status)
	}
	tol := 1e-6
	by := 0.0
	aty := make([]float64, len(lp.C))
	for i, r := range lp.Rows {
		act := 0.0
		for k, j := range r.Index {
			act += r.Coef[k] * sol.X[j]
			aty[j] += r.Coef[k] * sol.Duals[i]
		}
		switch r.Sense {
		case LE:
			if act > r.RHS+tol || sol.Duals[i] < -tol {
				t.Fatalf("row %d (<=): activity %g rhs %g dual %g", i, act, r.RHS, sol.Duals[i])
			}
		case GE:
			if act < r.RHS-tol || sol.Duals[i] > tol {
				t.Fatalf("row %d (>=): activity %g rhs %g dual %g", i, act, r.RHS, sol.Duals[i])
			}
		}
		by += r.RHS * sol.Duals[i]
	}
	for j, c := range lp.C {
		if sol.X[j] < -tol {
			t.Fatalf("x[%d] = %g", j, sol.X[j])
		}
		if aty[j] < c-1e-6 {
			t.Fatalf("dual infeasible at column %d: Aᵀy %g < c %g", j, aty[j], c)
		}
	}
	if !near(by, sol.Objective) {
		t.Fatalf("duality gap: c·x %g, b·y %g", sol.Objective, by)
	}
	if sol.Iterations == 0 {
		t.Fatal("no pivots")
	}
	// Seeded: the same LP, the same answer.
	again, _ := Solve(Generate(60, 120, 0.08, 3), 0)
	if again.Objective != sol.Objective || again.Iterations != sol.Iterations {
		t.Fatalf("not deterministic: %g/%d vs %g/%d", again.Objective, again.Iterations, sol.Objective, sol.Iterations)
	}
}

func TestRunReportsExecTime(t *testing.T) {
	p, err := Def.Resolve(map[string]string{"rows": "40", "cols": "80"})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Def.Agent(context.Background(), p, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		got[m.Name] = m.Value
	}
	if got["exec_time"] <= 0 || got["iterations"] < 1 || got["objective"] <= 0 {
		t.Fatalf("metrics %v", got)
	}
}
