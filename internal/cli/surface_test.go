package cli

import (
	"context"
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
	for _, want := range []string{"study 004 (quick scale)", "× 4 platforms × 3 repetitions = 156 runs", "http:"} {
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
