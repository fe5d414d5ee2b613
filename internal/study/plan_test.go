package study_test

import (
	"testing"
	"time"

	"github.com/isobench/isobench/internal/builtin"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/study"
)

// TestPlanReadsPlatformCosts: a plan's estimate takes each platform's
// costs from its factory in the registry it is given (platform.Factory.Cost),
// not from a list by name: a platform registered with a cost is estimated
// at that cost, its one-off cost counted once per run, systemd's boot
// added where the factory says an instance boots an init system
// (Factory.Image); one the registry does not have gets
// platform.DefaultCost.
func TestPlanReadsPlatformCosts(t *testing.T) {
	wl := builtin.Workloads()
	// init=system makes an instance boot an init system, as the factory
	// says (platform.Factory.Image)
	boots := func(o platform.Options) string {
		if o.Extra["init"] == "system" {
			return "debian"
		}
		return ""
	}
	reg := platform.NewRegistry(
		platform.Factory{Name: "cheap", Extra: []string{"init"}, Image: boots, Cost: platform.Cost{Instance: time.Millisecond}},
		platform.Factory{Name: "slow", Extra: []string{"init"}, Image: boots, Cost: platform.Cost{Instance: 10 * time.Second, SystemBoot: 20 * time.Second, Once: time.Hour}},
	)
	est := func(pl string) time.Duration {
		t.Helper()
		p, err := study.NewPlan(study.File{Platforms: []string{pl}, Workloads: []string{"cpu:duration=1s"}, Reps: "2"}, wl, reg)
		if err != nil {
			t.Fatal(err)
		}
		return p.Estimate
	}
	cheap, slow, unknown := est("cheap"), est("slow"), est("unknown")
	work := cheap - 2*time.Millisecond // two repetitions of the work alone
	if got, want := slow-work, 2*10*time.Second+time.Hour; got != want {
		t.Errorf("slow: %v over the work, want 2 instances at 10 s and the one-off hour = %v", got, want)
	}
	if got, want := unknown-work, 2*platform.DefaultCost.Instance; got != want {
		t.Errorf("unknown platform: %v over the work, want 2 × DefaultCost.Instance = %v", got, want)
	}
	if got, want := est("slow:init=system")-slow, 2*20*time.Second; got != want {
		t.Errorf("slow:init=system: %v more than slow, want 2 × its SystemBoot = %v", got, want)
	}
	if got, want := est("cheap:init=system")-cheap, 2*platform.DefaultCost.SystemBoot; got != want {
		t.Errorf("cheap:init=system: %v more than cheap, want 2 × DefaultCost.SystemBoot = %v", got, want)
	}
	// the built-in registry: qemu is dearer than native, docker-in-vm
	// carries its VM's boot
	bi := builtin.Platforms()
	if bi.Cost("qemu").Instance <= bi.Cost("native").Instance || bi.Cost("docker-in-vm").Once <= 0 {
		t.Errorf("built-in costs: qemu %+v, native %+v, docker-in-vm %+v", bi.Cost("qemu"), bi.Cost("native"), bi.Cost("docker-in-vm"))
	}
}
