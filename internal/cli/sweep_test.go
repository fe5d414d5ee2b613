package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/workload"
)

func TestPlanExpandsParameterSweeps(t *testing.T) {
	st, _, _ := newTestState(t)
	study := Study{Platforms: []string{"native"}, Workloads: []string{"cpu:threads=1|2|4,duration=1s", "memory"}}
	plan, _, err := st.plan(&study)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Jobs) != 4 {
		t.Fatalf("%d jobs, want 3 cpu + 1 memory", len(plan.Jobs))
	}
	for i, want := range []string{"1", "2", "4"} {
		j := plan.Jobs[i]
		if j.Def.Name != "cpu" || j.Params.Str("threads") != want || j.Tags[workload.SweepTag] != "threads" {
			t.Errorf("job %d: %s %s tags %v", i, j.Def.Name, j.Params, j.Tags)
		}
	}
	if plan.Jobs[3].Tags != nil {
		t.Errorf("unswept job tagged %v", plan.Jobs[3].Tags)
	}
	bad := Study{Platforms: []string{"native"}, Workloads: []string{"cpu:threads=1|0"}}
	if _, _, err := st.plan(&bad); err == nil || !strings.Contains(err.Error(), "threads") {
		t.Fatalf("threads=1|0: %v", err)
	}
}

func TestSweepTagIsStoredWithSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agent")
	}
	st, _, errb := newTestState(t)
	db := t.TempDir() + "/x.db"
	code := Main(context.Background(), st, []string{"run", "--platform", "native", "--workload", "cpu:threads=1|2,duration=100ms,max-prime=2000", "--reps", "1", "--db", db, "--quiet"})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ss, err := s.Samples(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	threads := map[string]bool{}
	for _, x := range ss {
		if x.Metric != "events_per_sec" {
			continue
		}
		if x.Tags[workload.SweepTag] != "threads" {
			b, _ := json.Marshal(x)
			t.Fatalf("sample without sweep tag: %s", b)
		}
		threads[x.Params] = true
	}
	if len(threads) != 2 {
		t.Fatalf("params seen %v, want two thread counts", threads)
	}
}
