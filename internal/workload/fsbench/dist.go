package fsbench

import (
	"math"
	"math/rand/v2"
)

// DefaultGamma is FileBench's default gamma shape for fileset file sizes and
// directory widths (fileset_define sets fs_sizegamma and fs_dirgamma to
// 1500, i.e. 1.5) and for `define randvar` without a gamma attribute.
const DefaultGamma = 1.5

// Gamma draws from a gamma distribution with shape a and scale b (mean a*b),
// using the two rejection methods Knuth gives in TAOCP vol. 2, 3.4.1, as
// FileBench does: the Ahrens-Dieter "GS" method for a <= 1 and the
// tangent-based Algorithm A for a > 1. a must be positive; b may be zero.
func Gamma(r *rand.Rand, a, b float64) float64 {
	if b == 0 {
		return 0
	}
	if a <= 1 {
		return b * gammaSmall(r, a)
	}
	return b * gammaLarge(r, a)
}

// gammaSmall samples Gamma(a, 1) for 0 < a <= 1.
func gammaSmall(r *rand.Rand, a float64) float64 {
	p := math.E / (a + math.E)
	for {
		u := r.Float64()
		v := r.Float64()
		for v == 0 {
			v = r.Float64()
		}
		var x, q float64
		if u < p {
			x = math.Pow(v, 1/a)
			q = math.Exp(-x)
		} else {
			x = 1 - math.Log(v)
			q = math.Pow(x, a-1)
		}
		if r.Float64() < q {
			return x
		}
	}
}

// gammaLarge samples Gamma(a, 1) for a > 1.
func gammaLarge(r *rand.Rand, a float64) float64 {
	s := math.Sqrt(2*a - 1)
	for {
		y := math.Tan(math.Pi * r.Float64())
		x := s*y + a - 1
		if x <= 0 {
			continue
		}
		bound := (1 + y*y) * math.Exp((a-1)*math.Log(x/(a-1))-s*y)
		if r.Float64() <= bound {
			return x
		}
	}
}

// GammaSize draws a file size around mean the way FileBench sizes the files
// of a fileset: gamma with shape DefaultGamma and scale mean/shape,
// truncated to whole bytes.
func GammaSize(r *rand.Rand, mean int64) int64 {
	if mean <= 0 {
		return 0
	}
	return int64(Gamma(r, DefaultGamma, float64(mean)/DefaultGamma))
}

// tableRow is one line of a FileBench tabular randvar: percent of draws,
// uniform between lo and hi.
type tableRow struct {
	pct    int
	lo, hi float64
}

// Table is a FileBench "type=tabular" random variable: a row is chosen with
// its percentage, the value is uniform within the row's range, rounded to a
// multiple of round when round > 0. (FileBench normalises the table to its
// own mean and minimum and scales back; when the randvar's min equals the
// table's minimum and no mean is given, as in randomfileaccess.f, that is
// exactly this.)
type Table struct {
	rows  [100]tableRow
	round float64
}

func newTable(round float64, rows ...tableRow) *Table {
	t := &Table{round: round}
	i := 0
	for _, r := range rows {
		for n := 0; n < r.pct && i < len(t.rows); n++ {
			t.rows[i] = r
			i++
		}
	}
	return t
}

// Draw returns one value.
func (t *Table) Draw(r *rand.Rand) int64 {
	x := r.Float64() * float64(len(t.rows))
	i := int(x)
	row := t.rows[i]
	v := row.lo + (row.hi-row.lo)*(x-float64(i))
	if t.round > 0 {
		v = math.Round(v/t.round) * t.round
	}
	return int64(v)
}

// Mean is the table's expected value (before rounding).
func (t *Table) Mean() float64 {
	var s float64
	for _, r := range t.rows {
		s += (r.lo + r.hi) / 2
	}
	return s / float64(len(t.rows))
}

const kib = 1024

// randomFileSizes is randomfileaccess.f's $filesize (min=1k).
func randomFileSizes() *Table {
	return newTable(0,
		tableRow{33, 1 * kib, 1 * kib},
		tableRow{21, 1 * kib, 3 * kib},
		tableRow{13, 3 * kib, 5 * kib},
		tableRow{10, 5 * kib, 11 * kib},
		tableRow{8, 11 * kib, 21 * kib},
		tableRow{5, 21 * kib, 43 * kib},
		tableRow{4, 43 * kib, 85 * kib},
		tableRow{3, 85 * kib, 171 * kib},
		tableRow{2, 171 * kib, 341 * kib},
		tableRow{1, 341 * kib, 1707 * kib},
	)
}

// randomReadSizes is randomfileaccess.f's $rdiosize (min=8k, round=1k).
func randomReadSizes() *Table {
	return newTable(kib,
		tableRow{85, 8 * kib, 8 * kib},
		tableRow{15, 8 * kib, 64 * kib},
	)
}

// gammaRandvar is a FileBench "type=gamma" randvar with min and round:
// min + Gamma(shape, (mean-min)/shape), rounded to round.
func gammaRandvar(r *rand.Rand, shape, mean, min, round float64) float64 {
	v := Gamma(r, shape, (mean-min)/shape) + min
	if round > 0 {
		v = math.Round(v/round) * round
	}
	return v
}

// uniformBelow returns a uniform integer in [0, n) (0 when n <= 0): the
// append size appendfilerand picks for iosize n.
func uniformBelow(r *rand.Rand, n int64) int64 {
	if n <= 0 {
		return 0
	}
	return r.Int64N(n)
}
