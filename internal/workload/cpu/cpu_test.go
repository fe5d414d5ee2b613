package cpu

import (
	"context"
	"math"
	"testing"
)

// naive is sysbench's loop without the peeled first iteration.
func naive(maxPrime uint64) uint64 {
	var n uint64
	for c := uint64(3); c < maxPrime; c++ {
		t := math.Sqrt(float64(c))
		l := uint64(2)
		for ; float64(l) <= t; l++ {
			if c%l == 0 {
				break
			}
		}
		if float64(l) > t {
			n++
		}
	}
	return n
}

func TestEventCountsPrimesLikeSysbench(t *testing.T) {
	// 1229 primes below 10000; sysbench starts at 3, so 2 is not counted.
	if got := Event(10000); got != 1228 {
		t.Fatalf("Event(10000) = %d, want 1228", got)
	}
	for _, m := range []uint64{3, 4, 5, 6, 9, 10, 26, 100, 1000, 7919, 20000} {
		if a, b := Event(m), naive(m); a != b {
			t.Errorf("max-prime %d: peeled loop %d, sysbench's loop %d", m, a, b)
		}
	}
}

func TestRunReportsEventsAndLatency(t *testing.T) {
	p, err := Def.Resolve(map[string]string{"threads": "2", "duration": "200ms", "max-prime": "2000"})
	if err != nil {
		t.Fatal(err)
	}
	released := false
	ms, err := Def.Agent(context.Background(), p, func() error { released = true; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !released {
		t.Fatal("barrier not called")
	}
	got := map[string]float64{}
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		got[m.Name] = m.Value
	}
	if got["events_per_sec"] <= 0 || got["latency_avg"] <= 0 || got["latency_p95"] <= 0 {
		t.Fatalf("implausible metrics %v", got)
	}
}

func TestRejectsImpossibleParams(t *testing.T) {
	for _, raw := range []map[string]string{{"threads": "0"}, {"max-prime": "2"}, {"duration": "0s"}} {
		if _, err := Def.Resolve(raw); err == nil {
			t.Errorf("%v accepted", raw)
		}
	}
}

func TestFixedWorkReportsTotalTime(t *testing.T) {
	p, err := Def.Resolve(map[string]string{"threads": "3", "events": "50", "max-prime": "3000"})
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
	// Exactly 50 events: the rate times the total time gives them back.
	if got["total_time"] <= 0 || math.Abs(got["events_per_sec"]*got["total_time"]-50) > 1e-6 {
		t.Fatalf("metrics %v", got)
	}
	if _, err := Def.Resolve(map[string]string{"events": "-1"}); err == nil {
		t.Error("events=-1 accepted")
	}
}

func TestEventMatchesGoLoop(t *testing.T) {
	// Event (assembly on amd64) and eventGo must agree everywhere,
	// including the small limits where the peeled paths decide.
	for m := uint64(0); m < 600; m++ {
		if a, b := Event(m), eventGo(3, m); a != b {
			t.Fatalf("max-prime %d: Event %d, eventGo %d", m, a, b)
		}
	}
	for _, m := range []uint64{7919, 10000, 65537, 100000} {
		if a, b := Event(m), naive(m); a != b {
			t.Errorf("max-prime %d: Event %d, sysbench's loop %d", m, a, b)
		}
	}
}

// An event run in its parts does the event's work: the same primes found,
// every c once; and the parts cost about the same (their trial divisions
// within 25% of an equal share), so counting a part counts an eighth of
// the work whichever part is under way.
func TestPartsAreTheEventInEqualShares(t *testing.T) {
	for _, m := range []uint64{3, 4, 10, 100, 2000, 10000, 20000} {
		b := PartBounds(m, Parts)
		if len(b) != Parts+1 || b[0] != 3 || b[Parts] != max(3, m) {
			t.Fatalf("max-prime %d: bounds %v", m, b)
		}
		var n uint64
		for k := range Parts {
			if b[k+1] < b[k] {
				t.Fatalf("max-prime %d: bounds %v fall", m, b)
			}
			n += eventRange(b[k], b[k+1])
		}
		if want := Event(m); n != want {
			t.Errorf("max-prime %d: parts found %d primes, the event %d", m, n, want)
		}
	}
	divisions := func(lo, hi uint64) (d float64) {
		for c := lo; c < hi; c++ {
			t := math.Sqrt(float64(c))
			for l := uint64(2); float64(l) <= t; l++ {
				d++
				if c%l == 0 {
					break
				}
			}
		}
		return d
	}
	b := PartBounds(10000, Parts)
	share := divisions(3, 10000) / Parts
	for k := range Parts {
		if d := divisions(b[k], b[k+1]); math.Abs(d/share-1) > 0.25 {
			t.Errorf("part %d [%d, %d) costs %.0f divisions, %.2f of an equal share", k, b[k], b[k+1], d, d/share)
		}
	}
}
