package stats

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Rows of the overall score of study 004 (Table 2: IOzone read, IOzone
// write, RAM speed, CPU intensive).
const (
	RowCPU     = "cpu"
	RowRAM     = "ram"
	RowIORead  = "io_read"
	RowIOWrite = "io_write"
)

// StudyRows returns the rows of study 004's overall score in report order.
func StudyRows() []string { return []string{RowCPU, RowRAM, RowIORead, RowIOWrite} }

// ScoreTable is study 004's normalised overall performance table: for each
// row (a benchmark) and platform, the platform's median relative to the
// native median, oriented so that native scores 1 and a higher score is
// better: value/native for a higher-is-better row, native/value for a
// lower-is-better one. A platform's Total is the sum over rows (native
// scores len(Rows)) and Overall is Total/len(Rows), the study's "overall
// performance" (1 = 100 % = as good as native).
type ScoreTable struct {
	Native string `json:"native"`
	// Rows in report order: the StudyRows present first, then any other
	// rows sorted by name.
	Rows []string `json:"rows"`
	// Platforms: native first, then the others sorted by name.
	Platforms []string `json:"platforms"`
	// Score[row][platform]; a platform without a usable value for a row
	// (missing, non-finite, zero or negative) has no entry there.
	Score map[string]map[string]float64 `json:"score"`
	// Total and Overall exist only for platforms that have every row.
	Total   map[string]float64 `json:"total"`
	Overall map[string]float64 `json:"overall"`
	// Incomplete lists the platforms lacking a score in some row, sorted.
	Incomplete []string `json:"incomplete,omitempty"`
}

// OverallScore builds the score table from medians[row][platform] and the
// better direction of each row ("higher" or "lower"). It fails when a row
// has no better direction, or no finite positive native median, since
// nothing in that row could be normalised.
func OverallScore(medians map[string]map[string]float64, better map[string]string, native string) (ScoreTable, error) {
	t := newScoreTable(native)
	if len(medians) == 0 {
		return t, fmt.Errorf("overall score: no rows")
	}
	t.Rows = rowOrder(medians)

	platforms := map[string]bool{}
	for _, row := range t.Rows {
		dir := better[row]
		if dir != BetterHigher && dir != BetterLower {
			return t, fmt.Errorf("overall score: row %s: better must be %q or %q, got %q", row, BetterHigher, BetterLower, dir)
		}
		nv, ok := medians[row][native]
		if !ok || !isFinite(nv) || nv <= 0 {
			return t, fmt.Errorf("overall score: row %s: no positive native (%s) median", row, native)
		}
		t.Score[row] = map[string]float64{}
		for p, v := range medians[row] {
			platforms[p] = true
			if !isFinite(v) || v <= 0 {
				continue
			}
			s := v / nv
			if dir == BetterLower {
				s = nv / v
			}
			t.Score[row][p] = saturate(s)
		}
	}

	t.total(platforms, saturate)
	return t, nil
}

func newScoreTable(native string) ScoreTable {
	return ScoreTable{
		Native:  native,
		Score:   map[string]map[string]float64{},
		Total:   map[string]float64{},
		Overall: map[string]float64{},
	}
}

// total lists the platforms (native first, then the others of platforms
// sorted) and gives each platform with a score in every row its Total
// (the sum) and Overall (the mean over the rows), both passed through
// bound; the rest are Incomplete.
func (t *ScoreTable) total(platforms map[string]bool, bound func(float64) float64) {
	t.Platforms = append(t.Platforms, t.Native)
	var others []string
	for p := range platforms {
		if p != t.Native {
			others = append(others, p)
		}
	}
	sort.Strings(others)
	t.Platforms = append(t.Platforms, others...)
	for _, p := range t.Platforms {
		sum, complete := 0.0, true
		for _, row := range t.Rows {
			s, ok := t.Score[row][p]
			if !ok {
				complete = false
				break
			}
			sum += s
		}
		if !complete {
			t.Incomplete = append(t.Incomplete, p)
			continue
		}
		t.Total[p] = bound(sum)
		t.Overall[p] = bound(sum / float64(len(t.Rows)))
	}
	sort.Strings(t.Incomplete)
}

// rowOrder puts the study rows first (in StudyRows order), then the rest
// sorted.
func rowOrder(medians map[string]map[string]float64) []string {
	var rows, rest []string
	study := StudyRows()
	for _, r := range study {
		if _, ok := medians[r]; ok {
			rows = append(rows, r)
		}
	}
	for r := range medians {
		if !slices.Contains(study, r) {
			rest = append(rest, r)
		}
	}
	sort.Strings(rest)
	return append(rows, rest...)
}

// Op is the overhead of the study-004 paper's equation (1):
// |P_platform − P_native| / P_native, as a fraction (the paper prints it
// in percent). It is the same for higher- and lower-is-better metrics: a
// platform faster than native has an overhead too.
func Op(platform, native float64) (float64, error) {
	if !isFinite(native) || native <= 0 || !isFinite(platform) || platform < 0 {
		return 0, fmt.Errorf("op: need a positive native value and a non-negative platform value, got native %v, platform %v", native, platform)
	}
	return math.Abs(platform-native) / native, nil
}

// MeanOf is the RAM row's value in study 004: the mean of the four
// RAMspeed/STREAM kernels (copy, scale, add, triad) of one platform.
func MeanOf(kernels ...float64) (float64, error) {
	if len(kernels) == 0 {
		return 0, fmt.Errorf("mean of no values")
	}
	s := 0.0
	for _, k := range kernels {
		if !isFinite(k) {
			return 0, fmt.Errorf("mean: non-finite value %v", k)
		}
		s += k
	}
	return s / float64(len(kernels)), nil
}

// PaperScore is study 004's Table 2 with the paper's own formula: per row
// (CPU, RAM, I/O read, I/O write — RAM being the mean of copy, scale, add
// and triad, see MeanOf) each platform scores 1 − Op against native,
// clamped at 0 (the paper's scores lie between 0 and 1, 1 being native);
// Total is the sum over rows (the paper's "Summary", 4.00 for native) and
// Overall the sum over the number of rows (its "Overall performance",
// 100% for native). Unlike OverallScore's ratio, a platform that beats
// native loses score too, as in the paper. medians[row][platform] are the
// rows' central values; the better direction does not enter the formula.
func PaperScore(medians map[string]map[string]float64, native string) (ScoreTable, error) {
	t := newScoreTable(native)
	if len(medians) == 0 {
		return t, fmt.Errorf("paper score: no rows")
	}
	t.Rows = rowOrder(medians)
	platforms := map[string]bool{}
	for _, row := range t.Rows {
		nv, ok := medians[row][native]
		if !ok || !isFinite(nv) || nv <= 0 {
			return t, fmt.Errorf("paper score: row %s: no positive native (%s) value", row, native)
		}
		t.Score[row] = map[string]float64{}
		for p, v := range medians[row] {
			platforms[p] = true
			op, err := Op(v, nv)
			if err != nil {
				continue
			}
			t.Score[row][p] = math.Max(0, 1-op)
		}
	}
	t.total(platforms, func(v float64) float64 { return v })
	return t, nil
}
