package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --db names a file, whatever its characters (issue 12, defect 2): a run
// with --db ':memory:' or 'x#frag.db' keeps its samples in exactly that file,
// and results reads them back from it.
func TestDBPathIsAFile(t *testing.T) {
	for _, name := range []string{":memory:", "x#frag.db", "z%41.db", "q?mode=memory"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			st, out, errb := newTestState(t)
			code := Main(context.Background(), st, []string{"run", "--platform", "native", "--workload", "cpu:duration=50ms,max-prime=500",
				"--reps", "1", "--quiet", "--db", name})
			if code != 0 {
				t.Fatalf("run exit %d: %s", code, errb.String())
			}
			if !strings.Contains(out.String(), "samples in "+name) {
				t.Fatalf("run does not name its store: %s", out.String())
			}
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Fatalf("no file %q: %v", name, err)
			}
			st, out, errb = newTestState(t)
			if code := Main(context.Background(), st, []string{"results", "--db", name}); code != 0 || !strings.Contains(out.String(), `"metric":"events_per_sec"`) {
				t.Fatalf("results from %q: exit %d %s%s", name, code, out.String(), errb.String())
			}
		})
	}
}
