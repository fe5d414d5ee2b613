package cli

import (
	"context"
	"strings"
	"testing"
)

// The dry run of --reps auto counts and states the cap the run will use:
// 30 by default (run -h's --reps-cap), not 3 (issue 27, defect 14: the plan
// said "3 is the cap" and counted 3 repetitions a cell).
func TestDryRunRepsAutoCap(t *testing.T) {
	for _, c := range []struct {
		extra []string
		cap   string
	}{{nil, "30"}, {[]string{"--reps-cap", "8"}, "8"}} {
		args := append([]string{"run", "--platform", "native", "--platform", "docker", "--workload", "cpu", "--reps", "auto", "--dry-run"}, c.extra...)
		st, out, errb := newTestState(t)
		if code := Main(context.Background(), st, args); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		for _, want := range []string{"× " + c.cap + " repetitions", "reps auto: " + c.cap + " is the cap"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v: no %q in\n%s", args, want, out.String())
			}
		}
	}
}
