package pin

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestThread(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		if err := Thread(0); err != nil {
			done <- err
			return
		}
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			done <- err
			return
		}
		if set.Count() != 1 || !set.IsSet(0) {
			done <- fmt.Errorf("after pinning to cpu 0 the thread may run on %s", List(set))
			return
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { done <- Thread(4095) }()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "cpu 4095") || !strings.Contains(err.Error(), "may use cpus 0") {
		t.Errorf("pinning to cpu 4095: %v, want an error naming the cpus allowed", err)
	}
	if err := Thread(None); err != nil {
		t.Errorf("no pinning: %v", err)
	}
}

func TestList(t *testing.T) {
	var s unix.CPUSet
	if got := List(s); got != "none" {
		t.Errorf("empty: %q", got)
	}
	for _, c := range []int{0, 1, 2, 5} {
		s.Set(c)
	}
	if got := List(s); got != "0-2,5" {
		t.Errorf("List = %q, want 0-2,5", got)
	}
}
