package cli

import (
	"context"
	"github.com/isobench/isobench/internal/runner"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunDryRunPreviewsAStudyFile: an edited study file is previewed with
// run FILE --dry-run, which plans it and starts nothing (issue 27).
func TestRunDryRunPreviewsAStudyFile(t *testing.T) {
	dir := t.TempDir()
	st, out, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"study", "show", "004", "--scale", "quick"}); code != 0 {
		t.Fatalf("show: %d %s", code, errb)
	}
	path := filepath.Join(dir, "s.yaml")
	os.WriteFile(path, out.Bytes(), 0o644)
	db := filepath.Join(dir, "s.db")
	st, out, errb = newTestState(t)
	if code := Main(context.Background(), st, []string{"run", path, "--dry-run", "--db", db}); code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, errb)
	}
	for _, want := range []string{"study 004 (quick scale)", "× 5 platforms × 3 repetitions = 195 runs", "http:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if fileExists(db) {
		t.Error("a dry run created the store")
	}
}

// TestUnknownImageRefusedEarly: --image debain is one usage line naming
// the profiles, before anything starts.
func TestUnknownImageRefusedEarly(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	st, _, errb := newTestState(t)
	code := Main(context.Background(), st, []string{"run", "--platform", "native", "--workload", "cpu", "--image", "debain", "--db", db})
	oneUsageLine(t, code, errb.String())
	if !strings.Contains(errb.String(), "debian-docker") || fileExists(db) {
		t.Errorf("stderr %q, store made: %v", errb, fileExists(db))
	}
}

// TestPreflightReadsTheWorkloadsTraits: every workload that needs a
// network or servers says so in its definition, so the transfers, mail
// and the Spark cluster are refused on network=none before anything
// starts (the CLI's lists had left them out).
func TestPreflightReadsTheWorkloadsTraits(t *testing.T) {
	st, _, _ := newTestState(t)
	study := Study{Platforms: []string{"native", "runc:network=none"}, Workloads: []string{"scp", "wget", "smb", "ftp", "smtp", "spark-cluster", "http", "cpu"}}
	plan, _, err := st.plan(&study)
	if err != nil {
		t.Fatal(err)
	}
	cannot, err := runner.Preflight(plan)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	for _, c := range cannot {
		if c.Target != "runc:network=none" || !strings.Contains(c.Why, "network=none") {
			t.Errorf("unexpected: %s", c)
		}
		left[c.Workload] = true
	}
	for _, w := range []string{"scp", "wget", "smb", "ftp", "smtp", "spark-cluster", "http"} {
		if !left[w] {
			t.Errorf("%s on network=none passed the pre-flight check", w)
		}
	}
	if left["cpu"] {
		t.Error("cpu needs no network")
	}
}
