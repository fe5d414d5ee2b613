package workload

import (
	"strings"
	"testing"
)

// A mistyped parameter gets "did you mean" (issue 27, defect 10):
// cpu:thread=2 named the parameters but not threads.
func TestUnknownParamSuggests(t *testing.T) {
	d := Def{Name: "w", Params: []Param{{Name: "threads", Kind: Int, Default: "1"}, {Name: "duration", Kind: Duration, Default: "1s"}}}
	_, err := d.Resolve(map[string]string{"thread": "2"})
	if err == nil || !strings.Contains(err.Error(), `workload w has no parameter "thread": did you mean threads? (it has: duration, threads)`) {
		t.Fatalf("thread: %v", err)
	}
	_, err = d.Resolve(map[string]string{"zzz": "2"})
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Fatalf("zzz: %v", err)
	}
}
