package soplex

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
)

// Def is the soplex workload.
var Def = workload.Def{
	Name: "soplex",
	Estimate: func(p workload.Params) time.Duration {
		r := float64(p.Int("rows")) / 300
		return workload.Seconds(6 * r * r * r * float64(p.Int("solves")))
	},
	FixedWork: func(workload.Params) bool { return true },
	Help:      "open substitute for SPEC CPU 450.soplex: two-phase revised simplex (Bland's rule against cycling) on a generated, seeded sparse LP; execution time",
	Params: []workload.Param{
		{Name: "rows", Kind: workload.Int, Default: "300", Min: 1, Max: 5000, Help: "constraints"},
		{Name: "cols", Kind: workload.Int, Default: "600", Min: 1, Max: 50000, Help: "structural variables"},
		{Name: "density", Kind: workload.Float, Default: "0.05", Min: 0.001, Max: 1, Help: "fraction of nonzero coefficients"},
		{Name: "solves", Kind: workload.Int, Default: "1", Min: 1, Max: 1e6, Help: "times the LP is solved from scratch (the work)"},
		{Name: "seed", Kind: workload.Int, Default: "450", Min: 0, Help: "problem generator seed"},
	},
	Agent: run,
	Timeout: func(p workload.Params) time.Duration {
		m, n := float64(p.Int("rows")), float64(p.Int("cols"))
		// pivots ~ a few (m+n), each O(m²): generous.
		per := 20 * (m + n) * m * m / 1e8 * float64(time.Second)
		return time.Duration(per*float64(p.Int("solves"))) + 2*time.Minute
	},
}

// Generate builds a feasible, bounded sparse LP, seeded: nonnegative
// coefficients (every column has one in a <= row, so the optimum is
// finite), right-hand sides from a known feasible point, a tenth of the
// rows >= (so phase 1 has work to do).
func Generate(rows, cols int, density float64, seed uint64) LP {
	r := rand.New(rand.NewPCG(seed, 0x450))
	x0 := make([]float64, cols)
	for j := range x0 {
		x0[j] = r.Float64()
	}
	lp := LP{C: make([]float64, cols), Rows: make([]Row, rows)}
	for j := range lp.C {
		lp.C[j] = 1 + 9*r.Float64()
	}
	set := make([]map[int]float64, rows)
	for i := range set {
		set[i] = map[int]float64{}
	}
	geRows := rows / 10
	for j := 0; j < cols; j++ {
		// One guaranteed entry in a <= row, the rest at random.
		i := geRows + r.IntN(rows-geRows)
		if geRows >= rows {
			i = r.IntN(rows)
		}
		set[i][j] = 1 + 9*r.Float64()
	}
	extra := int(density*float64(rows*cols)) - cols
	for k := 0; k < extra; k++ {
		set[r.IntN(rows)][r.IntN(cols)] = 1 + 9*r.Float64()
	}
	for i := range lp.Rows {
		row := &lp.Rows[i]
		act := 0.0
		for j := 0; j < cols; j++ { // ordered, so the LP is identical per seed
			if v, ok := set[i][j]; ok {
				row.Index = append(row.Index, j)
				row.Coef = append(row.Coef, v)
				act += v * x0[j]
			}
		}
		if i < geRows {
			row.Sense, row.RHS = GE, act*(0.5+0.4*r.Float64())
		} else {
			row.Sense, row.RHS = LE, act+1+r.Float64()*act
		}
	}
	return lp
}

func run(ctx context.Context, p workload.Params, ready workload.Barrier) ([]sample.Metric, error) {
	lp := Generate(p.Int("rows"), p.Int("cols"), p.Float("density"), uint64(p.Int("seed")))
	if err := ready(); err != nil {
		return nil, err
	}
	start := time.Now()
	var sol Solution
	iters := 0
	for k := 0; k < p.Int("solves"); k++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var err error
		if sol, err = Solve(lp, 0); err != nil {
			return nil, err
		}
		iters += sol.Iterations
	}
	secs := time.Since(start).Seconds()
	if sol.Status != Optimal {
		return nil, fmt.Errorf("soplex: generated LP is %s (a generator bug)", sol.Status)
	}
	if secs <= 0 {
		return nil, errors.New("soplex: no measurable time; raise solves")
	}
	return []sample.Metric{
		{Name: "exec_time", Value: secs, Unit: "s", Better: sample.Lower, Agg: sample.Max},
		{Name: "iterations", Value: float64(iters), Unit: "pivots", Better: sample.Higher, Agg: sample.Sum},
		{Name: "objective", Value: sol.Objective, Unit: "value", Better: sample.Higher, Agg: sample.None},
	}, nil
}
