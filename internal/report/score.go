package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/isobench/isobench/internal/stats"
)

// scoreSource says which cells feed one row of study 004's overall score:
// a workload, a metric, and optionally a parameter that must have one of
// some values (the disk workload reads or writes depending on pattern).
type scoreSource struct {
	Row      string
	Workload string
	Metric   string
	Param    string   // "" for any parameters
	Values   []string // accepted values of Param
}

// scoreSources maps the study's rows to isobench metrics, in order of
// preference: the first source with cells in the run is used for a row.
// CPU is sysbench's prime test (the study timed it; events per second is
// its reciprocal, so the normalised score is the same), RAM is memory
// bandwidth, I/O read and write are the IOzone-like file throughputs.
var scoreSources = []scoreSource{
	{Row: stats.RowCPU, Workload: "cpu", Metric: "events_per_sec"},
	{Row: stats.RowCPU, Workload: "tool:sysbench-cpu", Metric: "events_per_sec"},
	{Row: stats.RowRAM, Workload: "memory", Metric: "mib_per_sec"},
	{Row: stats.RowRAM, Workload: "tool:sysbench-memory", Metric: "mib_per_sec"},
	{Row: stats.RowRAM, Workload: "stream", Metric: "stream_triad"},
	{Row: stats.RowIORead, Workload: "blockio", Metric: "read_mb_per_sec"},
	{Row: stats.RowIORead, Workload: "disk", Metric: "mib_per_sec", Param: "pattern", Values: []string{"read", "randread"}},
	{Row: stats.RowIOWrite, Workload: "blockio", Metric: "write_mb_per_sec"},
	{Row: stats.RowIOWrite, Workload: "disk", Metric: "mib_per_sec", Param: "pattern", Values: []string{"write", "randwrite"}},
}

// Score is study 004's overall score table computed from a run's cells,
// with where each row came from.
type Score struct {
	stats.ScoreTable
	// Source describes, per row, the workload, parameters, metric and
	// instance count whose medians were used.
	Source map[string]string `json:"source"`
	// Missing lists the study's rows the run has no cells for; when it is
	// not empty the totals are over fewer rows than the study's four.
	Missing []string `json:"missing,omitempty"`
}

// paramValue extracts one parameter from canonical "k=v,k=v" params.
func paramValue(params, name string) string {
	for _, kv := range strings.Split(params, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// OverallScore builds study 004's overall score from cells that carry a
// baseline (the "native = 1" column). For each row it takes the first
// matching source (see scoreSources), the first parameter set of that
// workload in cell order, and the single-instance cells (or, when the run
// has none, the smallest instance count). ok is false when the cells have
// no baseline or match no row.
func OverallScore(cells []Cell) (s Score, ok bool, err error) {
	base := ""
	for _, c := range cells {
		if c.Baseline != "" {
			base, _ = SplitBaseline(c.Baseline) // native@1: the label
			break
		}
	}
	if base == "" {
		return s, false, nil
	}
	medians := map[string]map[string]float64{}
	better := map[string]string{}
	s.Source = map[string]string{}
	for _, row := range stats.StudyRows() {
		for _, src := range scoreSources {
			if src.Row != row {
				continue
			}
			var match []Cell
			for _, c := range cells {
				if c.Workload != src.Workload || c.Metric != src.Metric {
					continue
				}
				if src.Param != "" && !slices.Contains(src.Values, paramValue(c.Params, src.Param)) {
					continue
				}
				match = append(match, c)
			}
			if len(match) == 0 {
				continue
			}
			params := match[0].Params
			inst := 0
			for _, c := range match {
				if c.Params == params && (inst == 0 || c.Instances < inst) {
					inst = c.Instances
				}
			}
			m := map[string]float64{}
			for _, c := range match {
				if c.Params == params && c.Instances == inst && c.N > 0 {
					m[c.Label()] = c.Median
					better[row] = c.Better
				}
			}
			if _, ok := m[base]; !ok {
				continue // the baseline did not run this source
			}
			medians[row] = m
			s.Source[row] = fmt.Sprintf("%s %s ×%d", workloadLabel(match[0]), src.Metric, inst)
			break
		}
		if _, ok := medians[row]; !ok {
			s.Missing = append(s.Missing, row)
		}
	}
	if len(medians) == 0 {
		return s, false, nil
	}
	t, err := stats.OverallScore(medians, better, base)
	if err != nil {
		return s, false, fmt.Errorf("overall score: %w", err)
	}
	s.ScoreTable = t
	return s, true, nil
}

// rowTitle names a score row as the study does.
func rowTitle(row string) string {
	switch row {
	case stats.RowCPU:
		return "CPU"
	case stats.RowRAM:
		return "RAM speed"
	case stats.RowIORead:
		return "I/O read"
	case stats.RowIOWrite:
		return "I/O write"
	}
	return row
}
