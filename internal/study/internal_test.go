package study

import (
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/builtin"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/workload"
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

// TestRefusesByTheWorkloadsImage: a system container refuses a workload
// by the image the workload declares it runs (workload.Needs.Image), not
// by its name.
func TestRefusesByTheWorkloadsImage(t *testing.T) {
	own := workload.Def{Name: "anything", Needs: workload.Needs{Image: image.Spark}}
	if why, no := refuses(true, own); !no || !strings.Contains(why, "cannot boot the spark image anything uses") {
		t.Errorf("spark image on a system container: %q %v", why, no)
	}
	for _, c := range []struct {
		boots bool
		def   workload.Def
	}{
		{false, own}, // an application container boots anything
		{true, workload.Def{Name: "x", Needs: workload.Needs{Image: image.Debian}}}, // systemd is there
		{true, workload.Def{Name: "spark"}},                                         // the run's image: the name alone says nothing
	} {
		if why, no := refuses(c.boots, c.def); no {
			t.Errorf("boots %v, %s refused: %s", c.boots, c.def.Name, why)
		}
	}
}

// TestSparkWorkloadsDeclareTheirImage: the workloads that run their
// instances from the spark image say so.
func TestSparkWorkloadsDeclareTheirImage(t *testing.T) {
	reg := builtin.Workloads()
	for _, n := range []string{"spark", "spark-cluster", "mapreduce"} {
		d, err := reg.Lookup(n)
		if err != nil || d.Needs.Image != image.Spark {
			t.Errorf("%s: Needs.Image %q (%v), want %s", n, d.Needs.Image, err, image.Spark)
		}
	}
}
