package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestCleanArguments(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"clean", "extra"},
		{"clean", "--db", filepath.Join(t.TempDir(), "missing.db")},
		{"clean", "--no-such-flag"},
	} {
		st, _, stderr := newTestState(t)
		if code := Main(ctx, st, args); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (usage); stderr %q", args, code, ExitUsage, stderr.String())
		}
	}
}

// TestCleanDryRun lists what it finds on this host and changes nothing
// (what it lists depends on the host; it says at least that it looked).
func TestCleanDryRun(t *testing.T) {
	st, stdout, stderr := newTestState(t)
	if code := Main(context.Background(), st, []string{"clean", "--dry-run", "--state-dir", t.TempDir()}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	if out == "" {
		t.Fatal("clean --dry-run printed nothing")
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "removed ") || strings.HasPrefix(l, "failed to remove ") {
			t.Errorf("dry run removed something: %s", l)
		}
	}
}
