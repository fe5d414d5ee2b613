package tooladapt

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/isobench/isobench/internal/pin"
)

// TestRunToolOn: a tool started bound to a CPU runs on that CPU alone
// (its own /proc/self/status says so), unbound it keeps the test's CPUs,
// and the thread that started it was not handed back bound.
func TestRunToolOn(t *testing.T) {
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for i := 0; i < len(mine)*64; i++ {
		if mine.IsSet(i) {
			cpu = i // the last CPU this test may use
		}
	}
	allowed := func(out []byte) string {
		for _, l := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	ctx := context.Background()
	out, err := runToolOn(ctx, cpu, t.TempDir(), "/bin/cat", nil, "/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	if got := allowed(out); got != strconv.Itoa(cpu) {
		t.Errorf("bound to cpu %d: the tool may run on %q", cpu, got)
	}
	out, err = runToolOn(ctx, -1, t.TempDir(), "/bin/cat", nil, "/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := allowed(out), pin.List(mine); got != want {
		t.Errorf("unbound: the tool may run on %q, want the test's %q", got, want)
	}
	// many goroutines later, none of this test's threads is bound to one CPU
	for i := 0; i < 4*runtime.GOMAXPROCS(0); i++ {
		var s unix.CPUSet
		if err := unix.SchedGetaffinity(0, &s); err != nil {
			t.Fatal(err)
		}
		if s.Count() != mine.Count() {
			t.Fatalf("a thread kept the tool's binding: %d cpus, want %d", s.Count(), mine.Count())
		}
		runtime.Gosched()
	}
	if _, err := runToolOn(ctx, 4095, t.TempDir(), "/bin/cat", nil, "/proc/self/status"); err == nil || !strings.Contains(err.Error(), "cpu 4095") {
		t.Errorf("cpu 4095: err %v, want a pinning error naming the cpu", err)
	}
}
