package platform_test

import (
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
)

// TestCostDefaults: a factory that declares no cost, or leaves a field 0,
// is estimated at DefaultCost; an unknown name and a nil registry too.
func TestCostDefaults(t *testing.T) {
	reg := platform.NewRegistry(
		platform.Factory{Name: "bare"},
		platform.Factory{Name: "vm", Cost: platform.Cost{Instance: 6 * time.Second, Once: time.Minute}},
	)
	if got := reg.Cost("bare"); got != platform.DefaultCost {
		t.Errorf("bare: %+v, want DefaultCost %+v", got, platform.DefaultCost)
	}
	want := platform.Cost{Instance: 6 * time.Second, SystemBoot: platform.DefaultCost.SystemBoot, Once: time.Minute}
	if got := reg.Cost("vm"); got != want {
		t.Errorf("vm: %+v, want %+v", got, want)
	}
	if got := reg.Cost("nosuch"); got != platform.DefaultCost {
		t.Errorf("unknown: %+v, want DefaultCost", got)
	}
	var none platform.Registry
	if got := none.Cost("native"); got != platform.DefaultCost {
		t.Errorf("nil registry: %+v, want DefaultCost", got)
	}
	if platform.DefaultCost.Instance != time.Second || platform.DefaultCost.SystemBoot != 4*time.Second || platform.DefaultCost.Once != 0 {
		t.Errorf("DefaultCost changed: %+v (the study goldens assume 1 s, 4 s, 0)", platform.DefaultCost)
	}
}

// TestRegistryIsHost: the factory's IsHost, false for an unknown name and
// a nil registry.
func TestRegistryIsHost(t *testing.T) {
	reg := platform.NewRegistry(platform.Factory{Name: "here", IsHost: true}, platform.Factory{Name: "box"})
	if !reg.IsHost("here") || reg.IsHost("box") || reg.IsHost("nosuch") {
		t.Errorf("IsHost: here %v, box %v, nosuch %v; want true, false, false", reg.IsHost("here"), reg.IsHost("box"), reg.IsHost("nosuch"))
	}
	var none platform.Registry
	if none.IsHost("native") {
		t.Error("nil registry: IsHost true")
	}
}

func TestFractionalCPU(t *testing.T) {
	plain := platform.Factory{Name: "box"}
	vm := platform.Factory{Name: "vm", Extra: []string{"quota"}, PartCPU: func(o platform.Options) bool { return o.Extra["quota"] != "" }}
	for _, c := range []struct {
		f    platform.Factory
		opts string
		want bool
	}{
		{plain, "box", false},
		{plain, "box:cpus=0.5", true},
		{plain, "box:cpus=1.5", true},
		{plain, "box:cpus=2", false},
		// the factory's own answer replaces cpus='s
		{vm, "vm:cpus=0.5", false},
		{vm, "vm:quota=0.25", true},
	} {
		o, err := platform.ParseOptions(c.opts, c.f.Extra...)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.f.FractionalCPU(o); got != c.want {
			t.Errorf("%s: FractionalCPU %v, want %v", c.opts, got, c.want)
		}
	}
}
