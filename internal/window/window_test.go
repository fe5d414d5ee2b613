package window

import (
	"math"
	"strings"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// steady is an instance doing rate units/s from start to end (ms on the
// host clock), sampled every 20 ms.
func steady(start, end int64, rate float64) Series {
	var s Series
	for t := start; ; t += 20 {
		if t > end {
			t = end
		}
		s.Clock = append(s.Clock, t*ms)
		s.Count = append(s.Count, rate*float64(t-start)/1000)
		if t == end {
			return s
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestSkewedStarts: two instances sharing one CPU, the second released
// 100 ms late. Alone, each does 1000/s; together 500/s each. Over their
// own intervals each reads faster than 500/s (it ran alone for 100 ms);
// over the common window both read 500/s and the sum is the capacity.
func TestSkewedStarts(t *testing.T) {
	// a: alone 0-100 ms at 1000/s, then shared at 500/s until it ends at
	// 1000 ms; b: shared from 100 ms, then alone 1000-1100 ms at 1000/s.
	a := Series{Clock: []int64{0, 100 * ms, 1000 * ms}, Count: []float64{0, 100, 550}}
	b := Series{Clock: []int64{100 * ms, 1000 * ms, 1100 * ms}, Count: []float64{0, 450, 550}}
	r, err := Common([]Series{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if r.Start != 100*ms || r.End != 1000*ms || r.Overlap != 900*time.Millisecond || r.Span != time.Second {
		t.Fatalf("window %+v", r)
	}
	if !near(r.Frac, 0.9) {
		t.Errorf("frac %v, want 0.9", r.Frac)
	}
	for i, v := range r.Rates {
		if !near(v, 500) {
			t.Errorf("rate %d = %v, want 500", i, v)
		}
	}
	// each instance's own rate: 550/s, the sum 1100 > the CPU's 1000
	if own := 550.0 / 1.0; own+own <= 1000 {
		t.Fatal("the example does not show the bias it is for")
	}
}

// TestOneLateInstance: of four instances one starts 600 ms late in a 1 s
// run: the window is 400 ms, 40% of the span, below MinFrac.
func TestOneLateInstance(t *testing.T) {
	ss := []Series{steady(0, 1000, 250), steady(2, 1002, 250), steady(1, 1001, 250), steady(600, 1600, 250)}
	r, err := Common(ss)
	if err != nil {
		t.Fatal(err)
	}
	if r.Start != 600*ms || r.End != 1000*ms {
		t.Fatalf("window %d-%d ms", r.Start/ms, r.End/ms)
	}
	if r.Frac >= MinFrac || !near(r.Frac, 0.4) {
		t.Errorf("frac %v, want 0.4 (flagged)", r.Frac)
	}
	for i, v := range r.Rates {
		if math.Abs(v-250) > 1e-6 {
			t.Errorf("rate %d = %v, want 250", i, v)
		}
	}
}

// TestOneDied: an instance whose work stopped early (it died at 300 ms)
// ends the window there; a run that does not overlap at all is an error.
func TestOneDied(t *testing.T) {
	r, err := Common([]Series{steady(0, 1000, 100), steady(0, 300, 100)})
	if err != nil {
		t.Fatal(err)
	}
	if r.End != 300*ms || r.Frac >= MinFrac {
		t.Errorf("window end %d ms, frac %v", r.End/ms, r.Frac)
	}
	_, err = Common([]Series{steady(0, 300, 100), steady(400, 1000, 100)})
	if err == nil || !strings.Contains(err.Error(), "do not overlap") {
		t.Errorf("disjoint runs: %v", err)
	}
}

func TestInterpolatesBetweenSamples(t *testing.T) {
	// one instance samples every 20 ms, the other only at its ends: the
	// window's edges fall between samples of the first
	a := steady(0, 1000, 1000)
	b := Series{Clock: []int64{5 * ms, 995 * ms}, Count: []float64{0, 990}}
	r, err := Common([]Series{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Rates[0], 1000) || !near(r.Rates[1], 1000) {
		t.Errorf("rates %v, want 1000 each", r.Rates)
	}
}

// TestCoarseSeriesReadInside: an instance reporting once a second (a
// tool's interval reports) started 500 ms before the other and did that
// half second alone at 1000/s; then the two shared the CPU at 500/s each
// until the other ended at 2500 ms. Interpolated across its first and
// last intervals it read 583/s, the pair 8% above the CPU's capacity;
// read over its whole intervals inside the window it reads 500/s.
func TestCoarseSeriesReadInside(t *testing.T) {
	a := Series{Clock: []int64{0, 1000 * ms, 2000 * ms, 2600 * ms}, Count: []float64{0, 750, 1250, 1600}}
	b := steady(500, 2500, 500)
	r, err := Common([]Series{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if r.Start != 500*ms || r.End != 2500*ms {
		t.Fatalf("window %d-%d ms", r.Start/ms, r.End/ms)
	}
	if !near(r.Rates[0], 500) || !near(r.Rates[1], 500) {
		t.Errorf("rates %v, want 500 each", r.Rates)
	}
	// the interpolated reading the inner one replaces
	if old := (a.at(r.End) - a.at(r.Start)) / 2; old < 580 {
		t.Fatalf("the example does not show the bias it is for (%v)", old)
	}
}

// TestCoarseSeriesShortWindow: when a series' whole intervals inside the
// window cover less than half of it, the window is read interpolated.
func TestCoarseSeriesShortWindow(t *testing.T) {
	a := Series{Clock: []int64{0, 1000 * ms, 2000 * ms}, Count: []float64{0, 1000, 2000}}
	b := steady(900, 1900, 1000)
	r, err := Common([]Series{a, b})
	if err != nil {
		t.Fatal(err)
	}
	// window 900-1900 ms: a has one point inside (1000 ms), no whole
	// interval; read across the window it is 1000/s
	if !near(r.Rates[0], 1000) || !near(r.Rates[1], 1000) {
		t.Errorf("rates %v, want 1000 each", r.Rates)
	}
}

// TestFineSeriesPauseInterpolated: a Counter's series (a point every
// 20 ms) whose instance was descheduled for 200 ms across the window's
// start keeps its pause in the window: the flat stretch is work not done
// while every instance was running, and reading around it would count
// the instance as faster than it was.
func TestFineSeriesPauseInterpolated(t *testing.T) {
	// a works at 1000/s from 0 to 100 ms, pauses to 300 ms, then works to
	// 1300 ms; b runs 200-1200 ms
	var a Series
	for _, p := range []struct {
		t int64
		n float64
	}{{0, 0}, {20, 20}, {40, 40}, {60, 60}, {80, 80}, {100, 100}, {300, 100}} {
		a.Clock, a.Count = append(a.Clock, p.t*ms), append(a.Count, p.n)
	}
	for t := int64(320); t <= 1300; t += 20 {
		a.Clock, a.Count = append(a.Clock, t*ms), append(a.Count, 100+float64(t-300))
	}
	b := steady(200, 1200, 1000)
	r, err := Common([]Series{a, b})
	if err != nil {
		t.Fatal(err)
	}
	// window 200-1200 ms: a did 900 units in it (100 of its 1000 ms paused)
	if !near(r.Rates[0], 900) {
		t.Errorf("paused instance's rate %v, want 900", r.Rates[0])
	}
}

func TestRejectsMalformed(t *testing.T) {
	for _, s := range []Series{
		{},
		{Clock: []int64{0}, Count: []float64{0}},
		{Clock: []int64{0, 1}, Count: []float64{0}},
		{Clock: []int64{0, 0}, Count: []float64{0, 1}},
		{Clock: []int64{0, 1}, Count: []float64{1, 0}},
	} {
		if _, err := Common([]Series{s}); err == nil {
			t.Errorf("accepted %+v", s)
		}
	}
	if _, err := Common(nil); err == nil {
		t.Error("accepted no series")
	}
}
