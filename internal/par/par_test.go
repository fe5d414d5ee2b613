package par

import (
	"errors"
	"sync/atomic"
	"testing"
)

func TestEachRunsAllAndJoinsErrors(t *testing.T) {
	var ran atomic.Int32
	err := Each(5, func(i int) error {
		ran.Add(1)
		if i%2 == 1 {
			return errors.New("odd")
		}
		return nil
	})
	if ran.Load() != 5 {
		t.Fatalf("ran %d of 5", ran.Load())
	}
	if err == nil || len(err.(interface{ Unwrap() []error }).Unwrap()) != 2 {
		t.Fatalf("want the 2 errors joined, got %v", err)
	}
	if err := Each(0, func(int) error { return errors.New("never") }); err != nil {
		t.Fatal(err)
	}
}
