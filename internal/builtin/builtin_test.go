package builtin

import "testing"

func TestRegistriesAreConsistent(t *testing.T) {
	w := Workloads() // panics on a duplicate or malformed def
	for _, name := range []string{"cpu", "startup", "fs"} {
		d, err := w.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		// every workload's defaults must resolve on their own
		if _, err := d.Resolve(nil); err != nil {
			t.Errorf("%s: defaults do not validate: %v", name, err)
		}
	}
	p := Platforms()
	if _, _, err := p.Parse("native"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Parse("nosuch"); err == nil {
		t.Fatal("unknown platform accepted")
	}
}

// TestEveryWorkloadCarriesItsEstimate: a plan's estimate comes from each
// workload's own definition (workload.Def.Estimate), not from a list kept
// elsewhere by name; a new workload without one would be planned at a flat
// workload.DefaultEstimate.
func TestEveryWorkloadCarriesItsEstimate(t *testing.T) {
	for _, name := range Workloads().Names() {
		d, err := Workloads().Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if d.Estimate == nil {
			t.Errorf("workload %s declares no Estimate", name)
			continue
		}
		p, err := d.Resolve(nil)
		if err != nil {
			t.Fatalf("%s defaults: %v", name, err)
		}
		if e := d.EstimateOf(p); e <= 0 {
			t.Errorf("%s: estimate %v at its defaults", name, e)
		}
	}
}
