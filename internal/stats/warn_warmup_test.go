package stats

import (
	"strings"
	"testing"
)

// TestColdStartAdviceKnowsTheWarmups: the advice for a cold start is to
// add a warm-up run only when the run had none.
func TestColdStartAdviceKnowsTheWarmups(t *testing.T) {
	xs := []float64{50, 100, 101, 99, 100, 100}
	w := Warnings(xs, BetterHigher, WarnOptions{})
	if len(w) == 0 || !strings.HasPrefix(w[0], "cold start") || !strings.Contains(w[0], "add a warm-up run") {
		t.Fatalf("no warm-up: %q", w)
	}
	w = Warnings(xs, BetterHigher, WarnOptions{Warmups: 1})
	if len(w) == 0 || strings.Contains(w[0], "add a warm-up run") || !strings.Contains(w[0], "after 1 warm-up repetition(s): raise --warmup") {
		t.Fatalf("one warm-up: %q", w)
	}
}
