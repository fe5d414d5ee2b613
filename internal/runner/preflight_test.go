package runner

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/workload"
)

// preflightPlan is a plan of three workloads (one needing a network, one
// servers, one nothing) on the host, an instance without a network and
// one on an image without servers.
func preflightPlan(t *testing.T) Plan {
	t.Helper()
	var jobs []Job
	for _, d := range []workload.Def{
		{Name: "pnet", Needs: workload.Needs{Network: true}, Params: []workload.Param{{Name: "server", Kind: workload.String, Default: "instance"}, {Name: "client", Kind: workload.String, Default: "instance"}}},
		{Name: "psrv", Needs: workload.Needs{Servers: true}},
		{Name: "pcpu"},
		{Name: "pimg", Needs: workload.Needs{Image: "spark"}},
	} {
		p, err := d.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, Job{Def: d, Params: p})
	}
	return Plan{Jobs: jobs, Image: "minimal", Targets: []Target{
		{Label: "host", Name: "host", Host: true, Base: platform.Spec{Network: platform.NetNone}},
		{Label: "box:network=none", Name: "box", Options: "network=none", Base: platform.Spec{Network: platform.NetNone}},
		{Label: "vm", Name: "vm", Image: "spark"},
		{Label: "sys:init=system", Name: "sys", Options: "init=system", Image: "debian"},
	}}
}

// TestPreflightNeeds: what cannot run comes from the workloads' Needs
// and the targets' traits alone: the host is never refused, a network
// workload is refused on network=none (unless both its ends are on the
// host), a server workload on an image without servers, a workload with
// an image of its own on a target that needs another; the busybox
// profiles count as the debian image (the service workloads switch).
func TestPreflightNeeds(t *testing.T) {
	plan := preflightPlan(t)
	cannot, err := Preflight(plan)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cannot {
		got = append(got, c.Target+" "+c.Workload)
	}
	want := []string{"box:network=none pnet", "vm psrv", "sys:init=system pimg"}
	if !slices.Equal(got, want) {
		t.Fatalf("cannot run %q, want %q", got, want)
	}
	if s := cannot[0].String(); !strings.HasPrefix(s, "pnet cannot run on box:network=none: the instance has no network") {
		t.Errorf("said %q", s)
	}
	if !strings.Contains(cannot[1].Why, "the spark image has no server") {
		t.Errorf("why %q", cannot[1].Why)
	}
	// a workload with an image of its own on a system container (which
	// boots the debian image's init): refused before the run, not failed
	// at once in it (issue 27, defect 15)
	if !strings.Contains(cannot[2].Why, "runs in the spark image of its own, and sys:init=system runs the debian image") {
		t.Errorf("why %q", cannot[2].Why)
	}
	// the same when the system container's image is the plan's: its
	// Image is then cleared, what it requires is not (study 003's LXC
	// Spark cells failed in the run)
	same := Plan{Jobs: plan.Jobs[3:], Image: "debian", Targets: []Target{{Label: "sys:init=system", Name: "sys", Options: "init=system", Requires: "debian"}}}
	if c, err := Preflight(same); err == nil || len(c) != 0 {
		t.Errorf("a spark workload on a system container of the plan's own image: %v, %v; want nothing can run", c, err)
	}
	// both ends on the host: no instance network needed
	p, err := plan.Jobs[0].Def.Resolve(map[string]string{"server": "host", "client": "host"})
	if err != nil {
		t.Fatal(err)
	}
	plan.Jobs[0].Params = p
	if cannot, _ = Preflight(plan); len(cannot) != 2 || cannot[0].Workload != "psrv" || cannot[1].Workload != "pimg" {
		t.Errorf("with both ends on the host: %v", cannot)
	}
}

// TestPreflightNothingCanRun: a plan of which nothing can run is refused
// (Refused: the CLI's usage error) with every reason in one line.
func TestPreflightNothingCanRun(t *testing.T) {
	plan := preflightPlan(t)
	plan.Jobs, plan.Targets = plan.Jobs[:1], plan.Targets[1:2]
	_, err := Preflight(plan)
	var r Refused
	if !errors.As(err, &r) || !strings.HasPrefix(err.Error(), "nothing in the plan can run: pnet") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v (%T), want one Refused line", err, err)
	}
}

// TestSkipper: a runner's Skip skips the pairs the preflight left out and
// the repetitions a resumed run holds (warm-ups by their own index),
// counting only the latter.
func TestSkipper(t *testing.T) {
	plan := preflightPlan(t)
	plan.Warmup = 1
	cannot, _ := Preflight(plan)
	finished := map[store.RepKey]bool{
		{Platform: "host", Workload: "pcpu", Instances: 1, Rep: 0, Warmup: true}: true,
		{Platform: "host", Workload: "pcpu", Instances: 1, Rep: 2}:               true,
	}
	skipped := 0
	skip := Skipper(plan, cannot, finished, &skipped)
	cpu := Cell{Workload: "pcpu", Instances: 1}
	for _, c := range []struct {
		target string
		cell   Cell
		rep    int
		want   bool
	}{
		{"box:network=none", Cell{Workload: "pnet", Params: plan.Jobs[0].Params.String(), Instances: 1}, 0, true},
		{"host", cpu, -1, true}, // warm-up 0
		{"host", cpu, 0, false},
		{"host", cpu, 2, true},
		{"vm", cpu, 2, false},
	} {
		if got := skip(c.target, c.cell, c.rep); got != c.want {
			t.Errorf("%s %v rep %d: skip %v, want %v", c.target, c.cell, c.rep, got, c.want)
		}
	}
	if skipped != 2 {
		t.Errorf("skipped %d, want 2 (the finished repetitions)", skipped)
	}
}

// TestRecordCannot: a pair left out is a failed cell of class
// unsupported in the store.
func TestRecordCannot(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, err := s.BeginRun(ctx, map[string]string{}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	RecordCannot(ctx, s, id, CannotRun{Target: "box:network=none", Workload: "pnet", Why: "no network"})
	fails, err := s.Failures(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(fails) != 1 || fails[0].Platform != "box" || fails[0].Options != "network=none" || fails[0].Class != "unsupported" || !strings.Contains(fails[0].Error, "pre-flight check): no network") {
		t.Errorf("failures %+v", fails)
	}
}
