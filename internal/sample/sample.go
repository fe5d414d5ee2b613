// Package sample defines the unit of result isobench produces: one measured
// value of one metric, with everything needed to know where it came from.
package sample

import (
	"fmt"
	"time"
)

// Better says which direction of a metric is an improvement.
type Better string

const (
	Higher Better = "higher"
	Lower  Better = "lower"
)

// Valid reports whether b is one of the known directions.
func (b Better) Valid() bool { return b == Higher || b == Lower }

// Agg says how per-instance values of a metric combine into the aggregate
// of all concurrent instances (throughput adds up, latency takes the worst).
type Agg string

const (
	Sum  Agg = "sum"
	Max  Agg = "max"
	Mean Agg = "mean"
	None Agg = "none" // no aggregate makes sense (e.g. per-instance facts)
)

// Metric is one measured value reported by a workload, before the runner
// adds where and when it was measured.
type Metric struct {
	Name   string  `json:"metric"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Better Better  `json:"better"`
	Agg    Agg     `json:"agg,omitempty"`
}

// Validate rejects metrics a report could not interpret.
func (m Metric) Validate() error {
	if m.Name == "" {
		return fmt.Errorf("metric without a name")
	}
	if m.Unit == "" {
		return fmt.Errorf("metric %s has no unit", m.Name)
	}
	if !m.Better.Valid() {
		return fmt.Errorf("metric %s: better must be %q or %q, got %q", m.Name, Higher, Lower, m.Better)
	}
	return nil
}

// SkewMetric is the runner's own bookkeeping metric: how far apart, on the
// host clock, the concurrent instances were released through the barrier.
const SkewMetric = "barrier_skew_ms"

// WindowMetric is the runner's other bookkeeping metric: for several
// instances whose workload tracked its work, the share (percent) of a
// typical instance's run in which every instance was running; their
// rates are read over that common window (internal/window).
const WindowMetric = "window_overlap_pct"

// UnwindowedMetric is the runner's bookkeeping for several instances of a
// timed workload that does not track its work (no WindowMetric): each
// instance's rate is over its own run, and 100 × (1 − barrier skew /
// duration) is the share of the run in which they were all at least
// released together. Under window.MinFrac the sum over instances counts
// time in which some of them ran alone.
const UnwindowedMetric = "unwindowed_overlap_pct"

// Bookkeeping says whether metric is the runner's own (SkewMetric,
// WindowMetric, UnwindowedMetric), not a workload's.
func Bookkeeping(metric string) bool {
	return metric == SkewMetric || metric == WindowMetric || metric == UnwindowedMetric
}

// OverflowMetric is what a service's server reports of its accept queue:
// the connections it had no room for while the clients ran (the
// kernel's TcpExt ListenOverflows). A workload's metric, and the report's
// explanation of a noisy cell of the same repetitions (see report).
const OverflowMetric = "listen_overflows"

// AggregateInstance is the instance index used for aggregate samples.
const AggregateInstance = -1

// Sample is one row of the result store.
type Sample struct {
	RunID     int64             `json:"run_id,omitempty"`
	Platform  string            `json:"platform"`
	Options   string            `json:"options"`
	Workload  string            `json:"workload"`
	Params    string            `json:"params"`
	Instances int               `json:"instances"`
	Instance  int               `json:"instance"` // 0-based; AggregateInstance for the aggregate
	Rep       int               `json:"rep"`
	Warmup    bool              `json:"warmup"`
	Metric    string            `json:"metric"`
	Unit      string            `json:"unit"`
	Better    Better            `json:"better"`
	Value     float64           `json:"value"`
	Start     time.Time         `json:"start"`
	Duration  time.Duration     `json:"duration_ns"`
	Tags      map[string]string `json:"tags,omitempty"`
}

// Aggregate combines per-instance values with the rule agg. ok is false when
// no aggregate applies.
func Aggregate(agg Agg, values []float64) (v float64, ok bool) {
	if len(values) == 0 {
		return 0, false
	}
	switch agg {
	case Sum, "":
		for _, x := range values {
			v += x
		}
		return v, true
	case Max:
		v = values[0]
		for _, x := range values[1:] {
			if x > v {
				v = x
			}
		}
		return v, true
	case Mean:
		for _, x := range values {
			v += x
		}
		return v / float64(len(values)), true
	}
	return 0, false
}
