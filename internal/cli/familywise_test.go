package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/store"
)

// aaStore writes an A/A run: native against native:cpus=2 (the same
// platform) over 20 cpu cells of reps repetitions with 2% noise.
func aaStore(t *testing.T, path string, seed int64, reps int) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, err := s.BeginRun(ctx, Study{Platforms: []string{"native", "native:cpus=2"}, Workloads: []string{"cpu"}, Baseline: "native"}, map[string]string{"hostname": "h"})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(seed))
	var in []sample.Sample
	for cell := range 20 {
		for rep := range reps {
			for _, o := range []string{"", "cpus=2"} {
				in = append(in, sample.Sample{RunID: id, Platform: "native", Options: o, Workload: "cpu", Params: fmt.Sprintf("max-prime=%d", 10000+cell),
					Instances: 1, Instance: sample.AggregateInstance, Rep: rep, Metric: "events_per_sec", Unit: "events/s", Better: sample.Higher,
					Value: 1000 * (1 + 0.02*r.NormFloat64()), Start: time.Unix(1e9, 0)})
			}
		}
	}
	if err := s.Add(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRun(ctx, id, store.StatusDone, nil); err != nil {
		t.Fatal(err)
	}
}

// differing counts the cells of a jsonl report called faster or slower.
func differing(t *testing.T, out string) int {
	t.Helper()
	n := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c struct{ Options, Verdict string }
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if c.Options != "" && (c.Verdict == "faster" || c.Verdict == "slower") {
			n++
		}
	}
	return n
}

// report --familywise: over A/A runs where per-cell intervals call false
// differences, the family-wise ones call a third as many or fewer (over
// these 12 seeds: 9 and 2; the percentile bootstrap of 10 paired ratios
// under-covers in its far tails, so not none), and stderr says what the
// intervals are.
func TestReportFamilywise(t *testing.T) {
	checked, perAll, fwAll := 0, 0, 0
	for seed := int64(1); seed <= 12; seed++ {
		db := filepath.Join(t.TempDir(), "aa.db")
		aaStore(t, db, seed, 10)
		st, out, errb := newTestState(t)
		if code := Main(context.Background(), st, []string{"report", "--db", db, "--format", "jsonl"}); code != 0 {
			t.Fatalf("report: exit %d: %s", code, errb.String())
		}
		per := differing(t, out.String())
		if per == 0 {
			continue // this seed's noise happened to stay inside every interval
		}
		checked++
		st, out, errb = newTestState(t)
		if code := Main(context.Background(), st, []string{"report", "--db", db, "--format", "jsonl", "--familywise"}); code != 0 {
			t.Fatalf("report --familywise: exit %d: %s", code, errb.String())
		}
		fw := differing(t, out.String())
		t.Logf("seed %d: per cell %d, family-wise %d", seed, per, fw)
		perAll, fwAll = perAll+per, fwAll+fw
		if !strings.Contains(errb.String(), "family-wise intervals over the 20 cells compared with native") {
			t.Errorf("stderr does not say what the intervals are: %q", errb.String())
		}
	}
	if checked < 3 {
		t.Fatalf("only %d seeds gave a per-cell false difference: the test does not exercise --familywise", checked)
	}
	if 3*fwAll > perAll {
		t.Errorf("family-wise intervals called %d false differences, per-cell ones %d: not a third", fwAll, perAll)
	}
}

// With 5 repetitions no interval can hold a family-wise level over 20
// cells: report --familywise says so and how many are needed.
func TestReportFamilywiseTooFewReps(t *testing.T) {
	db := filepath.Join(t.TempDir(), "aa.db")
	aaStore(t, db, 1, 5)
	st, _, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"report", "--db", db, "--format", "jsonl", "--familywise"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "warning: 20 of the compared cells have fewer than the 10 repetitions family-wise intervals need here") {
		t.Errorf("no warning: %q", errb.String())
	}
	db = filepath.Join(t.TempDir(), "aa10.db")
	aaStore(t, db, 1, 10)
	st, _, errb = newTestState(t)
	Main(context.Background(), st, []string{"report", "--db", db, "--format", "jsonl", "--familywise"})
	if strings.Contains(errb.String(), "warning") {
		t.Errorf("a warning at 10 repetitions: %q", errb.String())
	}
}
