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
