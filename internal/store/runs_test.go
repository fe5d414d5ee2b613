package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
)

// synthRun writes one run of reps repetitions on two platforms into the
// store at path, on host (set directly, as if written on that machine),
// and returns its id.
func synthRun(t *testing.T, path, host string, reps int, value float64, status string) int64 {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, err := s.BeginRun(ctx, map[string]any{"platforms": []string{"native", "docker"}}, map[string]string{"host": host, "kernel": "k-" + host})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET hostname=? WHERE id=?`, host, id); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCommand(ctx, id, "isobench run --platform native --platform docker --db "+filepath.Base(path)); err != nil {
		t.Fatal(err)
	}
	var ss []sample.Sample
	for rep := 0; rep < reps; rep++ {
		for _, p := range []string{"native", "docker"} {
			ss = append(ss, sample.Sample{RunID: id, Platform: p, Workload: "cpu", Params: "threads=1", Instances: 1, Instance: sample.AggregateInstance,
				Rep: rep, Metric: "events_per_sec", Unit: "events/s", Better: sample.Higher, Value: value + float64(rep), Start: time.Unix(int64(1e9)+int64(rep), 0)})
		}
	}
	if err := s.Add(ctx, ss); err != nil {
		t.Fatal(err)
	}
	for _, x := range ss { // as the runner does once each repetition ends
		if err := s.MarkRep(ctx, id, RepKey{Platform: x.Platform, Options: x.Options, Workload: x.Workload, Params: x.Params, Instances: x.Instances, Rep: x.Rep}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddFailure(ctx, Failure{RunID: id, Kind: FailedCell, Class: "error", Platform: "docker", Workload: "tcp-rr", Instances: 1, Error: "boom on " + host}); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRun(ctx, id, status, nil); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestMergeKeepsProvenance(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	synthRun(t, a, "hostA", 3, 100, StatusDone)
	synthRun(t, a, "hostA", 2, 200, StatusInterrupted)
	synthRun(t, b, "hostB", 4, 300, StatusDone)
	out := filepath.Join(dir, "out.db")
	rep, err := Merge(ctx, out, []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep) != 3 {
		t.Fatalf("report %+v", rep)
	}
	s, err := OpenReadOnly(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3", len(runs))
	}
	want := []struct {
		host, status string
		reps         int
		value        float64
		origin       string
	}{{"hostA", StatusDone, 3, 100, a + "#1"}, {"hostA", StatusInterrupted, 2, 200, a + "#2"}, {"hostB", StatusDone, 4, 300, b + "#1"}}
	for i, r := range runs {
		w := want[i]
		if r.ID != int64(i+1) || r.Hostname != w.host || r.Status != w.status || r.Fingerprint["host"] != w.host || r.Fingerprint["kernel"] != "k-"+w.host {
			t.Errorf("run %d: %+v, want %+v", i+1, r, w)
		}
		if r.Command == "" || r.Started.IsZero() || r.Finished.IsZero() || string(r.Study) == "{}" {
			t.Errorf("run %d lost its command, times or study: %+v", r.ID, r)
		}
		if len(r.Origin) < len(w.origin) || r.Origin[len(r.Origin)-len(w.origin):] != w.origin {
			t.Errorf("run %d origin %q, want …%s", r.ID, r.Origin, w.origin)
		}
		ss, err := s.Samples(ctx, Filter{RunID: r.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != 2*w.reps {
			t.Errorf("run %d: %d samples, want %d", r.ID, len(ss), 2*w.reps)
		}
		for _, x := range ss {
			if x.RunID != r.ID || x.Value < w.value || x.Value >= w.value+float64(w.reps) {
				t.Errorf("run %d: sample %+v not re-pointed or from another run", r.ID, x)
			}
		}
		fs, err := s.Failures(ctx, r.ID)
		if err != nil || len(fs) != 1 || fs[0].Error != "boom on "+w.host {
			t.Errorf("run %d failures %+v, %v", r.ID, fs, err)
		}
	}
	s.Close()

	// Merging again adds only what is new: run 2 of b.
	synthRun(t, b, "hostB", 1, 400, StatusDone)
	rep, err = Merge(ctx, out, []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for _, r := range rep {
		if r.ToRun != 0 {
			added++
			if r.ToRun != 4 || r.Samples != 2 {
				t.Errorf("added %+v, want run 4 with 2 samples", r)
			}
		}
	}
	if added != 1 {
		t.Fatalf("second merge added %d runs, want 1: %+v", added, rep)
	}
	// A merged store merges on: origins are kept.
	out2 := filepath.Join(dir, "out2.db")
	if _, err := Merge(ctx, out2, []string{out}); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenReadOnly(ctx, out2)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	runs2, _ := s2.Runs(ctx)
	if len(runs2) != 4 || runs2[2].Origin != runs[2].Origin {
		t.Fatalf("re-merged runs %+v", runs2)
	}
}

func TestMergeRefusesBadOutput(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := filepath.Join(dir, "a.db")
	synthRun(t, a, "hostA", 1, 1, StatusDone)
	other := filepath.Join(dir, "notes.txt")
	if err := writeFile(other, "my notes\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(ctx, other, []string{a}); !errors.Is(err, ErrMergeTarget) {
		t.Fatalf("merge into a text file: %v", err)
	}
	if b, _ := os.ReadFile(other); string(b) != "my notes\n" {
		t.Fatalf("the text file was changed: %q", b)
	}
	if _, err := Merge(ctx, a, []string{a}); !errors.Is(err, ErrMergeTarget) {
		t.Fatalf("merge a store into itself: %v", err)
	}
	if _, err := Merge(ctx, filepath.Join(dir, "new.db"), []string{filepath.Join(dir, "missing.db")}); err == nil {
		t.Fatal("merging a missing input succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "new.db")); err == nil {
		t.Fatal("a failed merge created its output")
	}
}

func TestFinishedRepsAndReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	id := synthRun(t, path, "h", 3, 1, StatusInterrupted)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done, err := s.FinishedReps(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 6 || !done[RepKey{Platform: "docker", Workload: "cpu", Params: "threads=1", Instances: 1, Rep: 2}] {
		t.Fatalf("finished %v", done)
	}
	if err := s.Reopen(ctx, id); err != nil {
		t.Fatal(err)
	}
	r, _ := s.Run(ctx, id)
	if r.Status != StatusRunning || r.PID != os.Getpid() {
		t.Fatalf("reopened run %+v", r)
	}
	if err := s.Reopen(ctx, id); !errors.Is(err, ErrStillRunning) {
		t.Fatalf("reopen a running run: %v", err)
	}
	s.EndRun(ctx, id, StatusDone, nil)
	if err := s.Reopen(ctx, id); !errors.Is(err, ErrRunFinished) {
		t.Fatalf("reopen a finished run: %v", err)
	}
	if _, err := s.Run(ctx, 99); !errors.Is(err, ErrNoSuchRun) {
		t.Fatalf("run 99: %v", err)
	}
}

// TestResumeRunsUnfinishedRepetitionsAgain: a repetition is finished only
// when marked; the partial samples of one that was not are dropped before
// it runs again, and runs begun before marks existed keep the old rule.
func TestResumeRunsUnfinishedRepetitionsAgain(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, err := s.BeginRun(ctx, map[string]string{}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(rep, instance int) sample.Sample {
		return sample.Sample{RunID: id, Platform: "native", Workload: "cpu", Params: "threads=1", Instances: 2, Instance: instance, Rep: rep,
			Metric: "events_per_sec", Unit: "events/s", Better: sample.Higher, Value: 1, Start: time.Unix(0, 0)}
	}
	// rep 0 finished (both instances); rep 1 was interrupted after one
	if err := s.Add(ctx, []sample.Sample{mk(0, 0), mk(0, 1), mk(1, 0)}); err != nil {
		t.Fatal(err)
	}
	done := RepKey{Platform: "native", Workload: "cpu", Params: "threads=1", Instances: 2, Rep: 0}
	if err := s.MarkRep(ctx, id, done); err != nil {
		t.Fatal(err)
	}
	fin, err := s.FinishedReps(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(fin) != 1 || !fin[done] {
		t.Fatalf("finished: %v (the partial repetition 1 must not count)", fin)
	}
	n, err := s.DropUnfinished(ctx, id)
	if err != nil || n != 1 {
		t.Fatalf("dropped %d, %v; want the 1 partial sample", n, err)
	}
	left, _ := s.Samples(ctx, Filter{RunID: id})
	if len(left) != 2 {
		t.Fatalf("%d samples left, want rep 0's 2", len(left))
	}
	// a run from before marks: samples still mean finished, nothing dropped
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET rep_marks = 0 WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	s.Add(ctx, []sample.Sample{mk(1, 0)})
	if fin, _ := s.FinishedReps(ctx, id); len(fin) != 2 {
		t.Errorf("old run: finished %v", fin)
	}
	if n, _ := s.DropUnfinished(ctx, id); n != 0 {
		t.Errorf("old run: dropped %d", n)
	}
}
