package runner

import (
	"context"
	"testing"
)

func TestFailureJustBeforeCancelIsAnInterruption(t *testing.T) {
	// the context ends a moment after the failure is seen, as when Ctrl-C
	// kills an instance process before isobench's own handler runs
	ctx, cancel := context.WithTimeout(context.Background(), interruptGrace/5)
	defer cancel()
	if !stoppedSoon(ctx) {
		t.Fatal("a context ending within the grace was not seen")
	}
	if stoppedSoon(context.Background()) {
		t.Fatal("a live context was taken as stopped")
	}
}
