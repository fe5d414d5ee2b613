package study

import (
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/builtin"
)

// TestPlanRefusesInternalWorkloads: a study file naming a hidden half
// (_transfer, _service, ...) does not plan; a pending experiment naming
// one is not offered as available.
func TestPlanRefusesInternalWorkloads(t *testing.T) {
	reg := builtin.Workloads()
	for _, w := range []string{"_transfer:proto=scp,bind=0.0.0.0", "_service:kind=redis", "_net-client", "_spin", "_spark-driver"} {
		_, err := NewPlan(File{Platforms: []string{"native"}, Workloads: []string{w}}, reg, builtin.Platforms())
		if err == nil || !strings.Contains(err.Error(), "unknown workload") {
			t.Errorf("%s: NewPlan = %v, want unknown workload", w, err)
		}
	}
	f := File{Platforms: []string{"native"}, Workloads: []string{"cpu"},
		Study: &Meta{Experiments: []Experiment{{ID: "x", Pending: []string{"_service:kind=redis", "cpu:threads=2"}}}}}
	p, err := NewPlan(f, reg, builtin.Platforms())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Available, ",") != "cpu:threads=2" {
		t.Errorf("available %q, want the user-facing workload only", p.Available)
	}
}
