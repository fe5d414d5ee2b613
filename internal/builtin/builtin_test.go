package builtin

import (
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/workload"
)

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

// TestEveryPlatformDeclaresItsCost: a plan's estimate of a platform's
// instances comes from its own factory (platform.Factory.Cost), not from a
// list kept elsewhere by name; a new platform without one would be planned
// at platform.DefaultCost without anyone deciding so.
func TestEveryPlatformDeclaresItsCost(t *testing.T) {
	reg := Platforms()
	if len(reg) == 0 {
		t.Fatal("no platforms")
	}
	for _, name := range reg.Names() {
		f := reg[name]
		if f.Cost.Instance <= 0 {
			t.Errorf("platform %s declares no Cost.Instance", name)
		}
		if f.Cost.SystemBoot < 0 || f.Cost.Once < 0 {
			t.Errorf("platform %s: negative cost %+v", name, f.Cost)
		}
		if got := reg.Cost(name); got.Instance != f.Cost.Instance || got.SystemBoot <= 0 {
			t.Errorf("platform %s: Registry.Cost = %+v, want its own instance cost and a system boot", name, got)
		}
	}
}

// TestServerAndToolWorkloadsDeclareHostTools: what a dry run says the host
// lacks comes from each workload's own Needs.HostTools, not from a list
// kept elsewhere by name (issue 24); a workload that runs servers or an
// external tool (tool:*) without one would be planned with no warning. On
// native (the host is the instance) each such workload needs something
// at its defaults, and every tool any workload lists says how to get it.
func TestServerAndToolWorkloadsDeclareHostTools(t *testing.T) {
	w := Workloads()
	for _, name := range w.Names() {
		d, err := w.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		runsTool := strings.HasPrefix(name, "tool:")
		if d.Needs.HostTools == nil {
			if d.Needs.Servers || runsTool {
				t.Errorf("workload %s (servers %v, tool %v) declares no Needs.HostTools", name, d.Needs.Servers, runsTool)
			}
			continue
		}
		p, err := d.Resolve(nil)
		if err != nil {
			t.Fatalf("%s defaults: %v", name, err)
		}
		if (d.Needs.Servers || runsTool) && len(d.Needs.HostTools(p, true)) == 0 {
			t.Errorf("workload %s needs nothing on native at its defaults", name)
		}
		for _, native := range []bool{false, true} {
			for _, tool := range d.Needs.HostTools(p, native) {
				for _, u := range append([]workload.Tool{tool}, tool.Alt...) {
					if u.Bin == "" || u.Pkg == "" && u.Install == "" {
						t.Errorf("workload %s (native %v): tool %+v lacks an executable or how to get it", name, native, u)
					}
				}
			}
		}
	}
}

// TestEveryPlatformDeclaresItsSweep: what 'isobench clean' and the sweep
// before a run look for comes from each platform's own factory
// (platform.Factory.Sweep; platform.NoLeftovers for none), not from code
// in package cleanup or the CLI that names engines (issue 24).
func TestEveryPlatformDeclaresItsSweep(t *testing.T) {
	for _, name := range Platforms().Names() {
		if Platforms()[name].Sweep == nil {
			t.Errorf("platform %s declares no Sweep", name)
		}
	}
}
