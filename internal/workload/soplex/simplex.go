// Package soplex is an open substitute for SPEC CPU 2006 450.soplex (study
// 003's floating-point CPU benchmark; SPEC is proprietary): a two-phase
// revised simplex solver with Bland's rule on a generated, seeded sparse
// linear program. Like 450.soplex it spends its time in the simplex method
// and sparse linear algebra (pricing over sparse columns, updates of the
// basis inverse); the metric is the execution time of one solve.
package soplex

import (
	"errors"
	"fmt"
	"math"
)

// Sense of a constraint row.
type Sense int

const (
	LE Sense = iota // a·x <= b
	GE              // a·x >= b
	EQ              // a·x  = b
)

// Row is one constraint, sparse: Coef[k] multiplies x[Index[k]].
type Row struct {
	Index []int
	Coef  []float64
	Sense Sense
	RHS   float64
}

// LP is: maximise C·x subject to Rows, x >= 0.
type LP struct {
	C    []float64
	Rows []Row
}

// Status of a solve.
type Status int

const (
	Optimal Status = iota
	Infeasible
	Unbounded
)

func (s Status) String() string {
	return [...]string{"optimal", "infeasible", "unbounded"}[s]
}

// Solution of an LP.
type Solution struct {
	Status    Status
	Objective float64
	X         []float64
	// Duals y, one per row in the rows' own orientation: at an optimum
	// b·y equals the objective, Aᵀy >= c, y >= 0 on <= rows and y <= 0 on
	// >= rows.
	Duals      []float64
	Iterations int // pivots over both phases
}

// ErrIterations is returned when the pivot limit is reached (it cannot be
// under Bland's rule unless the limit is too small for the problem).
var ErrIterations = errors.New("soplex: pivot limit reached")

const eps = 1e-9

// blandAfter is how many consecutive degenerate pivots switch pricing to
// Bland's rule.
const blandAfter = 20

// column is a sparse column of the working matrix.
type column struct {
	idx []int
	val []float64
}

type solver struct {
	m, n    int // rows; columns (structural + slack/surplus + artificial)
	nStruct int
	cols    []column
	b       []float64 // right-hand side after making it >= 0
	flip    []bool    // row was multiplied by -1
	art     []bool    // column is artificial
	basis   []int     // basis[i] = column basic in row i
	inBasis []int     // column -> row, or -1
	binv    []float64 // dense m×m basis inverse, row-major
	xb      []float64 // values of the basic variables
	iters   int
	limit   int
	// degenerate counts consecutive pivots that did not move (step 0).
	degenerate int
	// scratch
	y, u []float64
}

// Solve runs the two-phase revised simplex: Dantzig pricing, and Bland's
// rule (the smallest index enters; among tied ratios the smallest basic
// index leaves) after a run of degenerate pivots, so it cannot cycle. maxIter bounds the pivots (0: 50·(rows+columns)).
func Solve(lp LP, maxIter int) (Solution, error) {
	s, err := newSolver(lp)
	if err != nil {
		return Solution{}, err
	}
	s.limit = maxIter
	if s.limit <= 0 {
		s.limit = 50 * (s.m + s.n)
	}
	// Phase 1: maximise -sum(artificials).
	c1 := make([]float64, s.n)
	anyArt := false
	for j := range c1 {
		if s.art[j] {
			c1[j] = -1
			anyArt = true
		}
	}
	if anyArt {
		st, err := s.iterate(c1, true)
		if err != nil {
			return Solution{}, err
		}
		if st == Unbounded { // cannot happen: the phase-1 objective is bounded by 0
			return Solution{}, errors.New("soplex: phase 1 unbounded (numerical trouble)")
		}
		if s.objective(c1) < -1e-7*math.Max(1, s.bNorm()) {
			return Solution{Status: Infeasible, Iterations: s.iters}, nil
		}
		s.driveOutArtificials()
	}
	// Phase 2: the real objective; artificials may not enter.
	c2 := make([]float64, s.n)
	copy(c2, lp.C)
	st, err := s.iterate(c2, false)
	if err != nil {
		return Solution{}, err
	}
	if st == Unbounded {
		return Solution{Status: Unbounded, Iterations: s.iters}, nil
	}
	sol := Solution{Status: Optimal, X: make([]float64, s.nStruct), Iterations: s.iters}
	for i, j := range s.basis {
		if j < s.nStruct {
			sol.X[j] = s.xb[i]
		}
	}
	for j, c := range lp.C {
		sol.Objective += c * sol.X[j]
	}
	s.duals(c2)
	sol.Duals = make([]float64, s.m)
	for i := range sol.Duals {
		sol.Duals[i] = s.y[i]
		if s.flip[i] {
			sol.Duals[i] = -s.y[i]
		}
	}
	return sol, nil
}

func newSolver(lp LP) (*solver, error) {
	m, ns := len(lp.Rows), len(lp.C)
	if m == 0 || ns == 0 {
		return nil, errors.New("soplex: an LP needs at least one row and one column")
	}
	s := &solver{m: m, nStruct: ns, b: make([]float64, m), flip: make([]bool, m)}
	// Structural columns from the rows.
	s.cols = make([]column, ns)
	for i, r := range lp.Rows {
		if len(r.Index) != len(r.Coef) {
			return nil, fmt.Errorf("soplex: row %d has %d indices and %d coefficients", i, len(r.Index), len(r.Coef))
		}
		sense, rhs, sign := r.Sense, r.RHS, 1.0
		if rhs < 0 {
			s.flip[i], rhs, sign = true, -rhs, -1
			switch sense {
			case LE:
				sense = GE
			case GE:
				sense = LE
			}
		}
		s.b[i] = rhs
		for k, j := range r.Index {
			if j < 0 || j >= ns {
				return nil, fmt.Errorf("soplex: row %d refers to column %d of %d", i, j, ns)
			}
			if r.Coef[k] != 0 {
				s.cols[j].idx = append(s.cols[j].idx, i)
				s.cols[j].val = append(s.cols[j].val, sign*r.Coef[k])
			}
		}
		// Slack (+1, <=), surplus (-1, >=) and artificial (>=, =) columns.
		switch sense {
		case LE:
			s.cols = append(s.cols, column{idx: []int{i}, val: []float64{1}})
			s.art = append(s.art, false)
		case GE:
			s.cols = append(s.cols, column{idx: []int{i}, val: []float64{-1}})
			s.art = append(s.art, false)
		}
	}
	s.art = append(make([]bool, ns), s.art...)
	// Initial basis: the slack of each <= row, an artificial elsewhere.
	s.basis = make([]int, m)
	for i := range s.basis {
		s.basis[i] = -1
	}
	for j := ns; j < len(s.cols); j++ {
		if c := s.cols[j]; c.val[0] == 1 {
			s.basis[c.idx[0]] = j
		}
	}
	for i := range s.basis {
		if s.basis[i] < 0 {
			s.cols = append(s.cols, column{idx: []int{i}, val: []float64{1}})
			s.art = append(s.art, true)
			s.basis[i] = len(s.cols) - 1
		}
	}
	s.n = len(s.cols)
	s.inBasis = make([]int, s.n)
	for j := range s.inBasis {
		s.inBasis[j] = -1
	}
	for i, j := range s.basis {
		s.inBasis[j] = i
	}
	s.binv = make([]float64, m*m)
	for i := 0; i < m; i++ {
		s.binv[i*m+i] = 1
	}
	s.xb = append([]float64(nil), s.b...)
	s.y, s.u = make([]float64, m), make([]float64, m)
	return s, nil
}

func (s *solver) bNorm() float64 {
	x := 0.0
	for _, v := range s.b {
		x = math.Max(x, math.Abs(v))
	}
	return x
}

func (s *solver) objective(c []float64) float64 {
	v := 0.0
	for i, j := range s.basis {
		v += c[j] * s.xb[i]
	}
	return v
}

// duals sets y = c_B B⁻¹.
func (s *solver) duals(c []float64) {
	m := s.m
	clear(s.y)
	for i, j := range s.basis {
		if cj := c[j]; cj != 0 {
			row := s.binv[i*m : i*m+m]
			for k, v := range row {
				s.y[k] += cj * v
			}
		}
	}
}

// ftran sets u = B⁻¹ a_j.
func (s *solver) ftran(j int) {
	m := s.m
	clear(s.u)
	col := s.cols[j]
	for i := 0; i < m; i++ {
		row := s.binv[i*m : i*m+m]
		v := 0.0
		for k, r := range col.idx {
			v += row[r] * col.val[k]
		}
		s.u[i] = v
	}
}

// iterate pivots until optimal or unbounded for objective c. In phase 1
// every column may enter; in phase 2 artificials may not.
func (s *solver) iterate(c []float64, phase1 bool) (Status, error) {
	for {
		if s.iters >= s.limit {
			return 0, ErrIterations
		}
		if s.iters > 0 && s.iters%100 == 0 {
			if err := s.reinvert(); err != nil {
				return 0, err
			}
		}
		s.duals(c)
		// Dantzig's rule (the largest reduced cost) while pivots make
		// progress; after a run of degenerate pivots Bland's rule (the
		// smallest index with a positive reduced cost), which cannot cycle,
		// until one makes progress again.
		bland := s.degenerate >= blandAfter
		enter, best := -1, eps
		for j := 0; j < s.n; j++ {
			if s.inBasis[j] >= 0 || (!phase1 && s.art[j]) {
				continue
			}
			d := c[j]
			col := s.cols[j]
			for k, r := range col.idx {
				d -= s.y[r] * col.val[k]
			}
			if d > best {
				enter, best = j, d
				if bland {
					break
				}
			}
		}
		if enter < 0 {
			return Optimal, nil
		}
		s.ftran(enter)
		// Ratio test; ties go to the smallest basic column index (Bland).
		leave := -1
		step := math.Inf(1)
		for i, ui := range s.u {
			if ui <= eps {
				continue
			}
			r := s.xb[i] / ui
			if r < step-eps || (r <= step+eps && leave >= 0 && s.basis[i] < s.basis[leave]) {
				if r < step-eps {
					step = r
				}
				leave = i
			}
		}
		if leave < 0 {
			return Unbounded, nil
		}
		if step <= eps {
			s.degenerate++
		} else {
			s.degenerate = 0
		}
		s.pivot(leave, enter)
	}
}

// pivot makes column enter basic in row r.
func (s *solver) pivot(r, enter int) {
	m := s.m
	p := s.u[r]
	prow := s.binv[r*m : r*m+m]
	for k := range prow {
		prow[k] /= p
	}
	s.xb[r] /= p
	for i := 0; i < m; i++ {
		if i == r || s.u[i] == 0 {
			continue
		}
		f := s.u[i]
		row := s.binv[i*m : i*m+m]
		for k, v := range prow {
			row[k] -= f * v
		}
		s.xb[i] -= f * s.xb[r]
		if s.xb[i] < 0 && s.xb[i] > -1e-9 {
			s.xb[i] = 0
		}
	}
	s.inBasis[s.basis[r]] = -1
	s.basis[r] = enter
	s.inBasis[enter] = r
	s.iters++
}

// driveOutArtificials pivots artificials still basic (at zero) after phase
// 1 out of the basis where a non-artificial column can replace them; when
// none can, the row is redundant and the artificial stays at zero (its
// row of B⁻¹A is zero on every column that may enter in phase 2).
func (s *solver) driveOutArtificials() {
	m := s.m
	for r := 0; r < m; r++ {
		if !s.art[s.basis[r]] {
			continue
		}
		row := s.binv[r*m : r*m+m]
		for j := 0; j < s.n; j++ {
			if s.art[j] || s.inBasis[j] >= 0 {
				continue
			}
			v := 0.0
			col := s.cols[j]
			for k, i := range col.idx {
				v += row[i] * col.val[k]
			}
			if math.Abs(v) > 1e-7 {
				s.ftran(j)
				s.pivot(r, j)
				break
			}
		}
	}
}

// reinvert recomputes B⁻¹ and x_B from the basis columns (Gauss-Jordan
// with partial pivoting), discarding the rounding the updates accumulate.
func (s *solver) reinvert() error {
	m := s.m
	a := make([]float64, m*m)
	for i, j := range s.basis {
		col := s.cols[j]
		for k, r := range col.idx {
			a[r*m+i] = col.val[k]
		}
	}
	inv := make([]float64, m*m)
	for i := 0; i < m; i++ {
		inv[i*m+i] = 1
	}
	for c := 0; c < m; c++ {
		p := c
		for r := c + 1; r < m; r++ {
			if math.Abs(a[r*m+c]) > math.Abs(a[p*m+c]) {
				p = r
			}
		}
		if math.Abs(a[p*m+c]) < 1e-12 {
			return errors.New("soplex: singular basis (numerical trouble)")
		}
		if p != c {
			for k := 0; k < m; k++ {
				a[p*m+k], a[c*m+k] = a[c*m+k], a[p*m+k]
				inv[p*m+k], inv[c*m+k] = inv[c*m+k], inv[p*m+k]
			}
		}
		d := a[c*m+c]
		for k := 0; k < m; k++ {
			a[c*m+k] /= d
			inv[c*m+k] /= d
		}
		for r := 0; r < m; r++ {
			if r == c || a[r*m+c] == 0 {
				continue
			}
			f := a[r*m+c]
			for k := 0; k < m; k++ {
				a[r*m+k] -= f * a[c*m+k]
				inv[r*m+k] -= f * inv[c*m+k]
			}
		}
	}
	s.binv = inv
	for i := 0; i < m; i++ {
		v := 0.0
		for k := 0; k < m; k++ {
			v += inv[i*m+k] * s.b[k]
		}
		if v < 0 && v > -1e-9 {
			v = 0
		}
		s.xb[i] = v
	}
	return nil
}
