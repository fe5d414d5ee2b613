package cli

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/store"
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

// writeStore makes a small real store without running anything.
func writeStore(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, err := s.BeginRun(ctx, Study{Baseline: "native"}, map[string]string{"kernel": "k"})
	if err != nil {
		t.Fatal(err)
	}
	var in []sample.Sample
	for rep := range 5 {
		for i, p := range []string{"native", "docker"} {
			in = append(in, sample.Sample{RunID: id, Platform: p, Workload: "cpu", Params: "threads=1", Instances: 1, Instance: 0, Rep: rep,
				Metric: "events_per_sec", Unit: "events/s", Better: sample.Higher, Value: float64(1000 + 10*rep + i), Start: time.Unix(int64(rep), 0)})
		}
	}
	if err := s.Add(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRun(ctx, id, "done", nil); err != nil {
		t.Fatal(err)
	}
}

func oneUsageLine(t *testing.T, code int, errb string) {
	t.Helper()
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d; stderr %q", code, ExitUsage, errb)
	}
	if lines := strings.Split(strings.TrimSpace(errb), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "isobench: ") {
		t.Fatalf("want one 'isobench: ...' line, got %q", errb)
	}
}

// report, results and compare never change a file that is not a store
// (issue 12, defect 3): not its bytes, not its journal mode, no tables.
func TestReadingCommandsLeaveOtherFilesAlone(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "other.sqlite")
	db, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES('keep me')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	text := filepath.Join(dir, "page.html")
	os.WriteFile(text, []byte("<html>not a database, long enough to have a header of one hundred bytes or so........</html>"), 0o644)
	good := filepath.Join(dir, "good.db")
	writeStore(t, good)
	for _, path := range []string{foreign, text} {
		before, _ := os.ReadFile(path)
		for _, args := range [][]string{
			{"report", "--db", path},
			{"report", "--db", path, "--format", "json"},
			{"results", "--db", path},
			{"compare", path, good},
			{"compare", good, path},
		} {
			st, out, errb := newTestState(t)
			code := Main(context.Background(), st, args)
			oneUsageLine(t, code, errb.String())
			if out.Len() != 0 {
				t.Fatalf("%v wrote %q", args, out.String())
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Fatalf("%v changed %s", args, path)
			}
			for _, side := range []string{"-wal", "-shm", "-journal"} {
				if _, err := os.Stat(path + side); err == nil {
					t.Fatalf("%v created %s%s", args, path, side)
				}
			}
		}
	}
}

// report -o onto the store itself is refused before anything is written
// (issue 12, defect 3: it used to replace the database with the report).
func TestReportRefusesToOverwriteTheStore(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	writeStore(t, "x.db")
	os.Symlink("x.db", "link.db")
	before, _ := os.ReadFile("x.db")
	for _, args := range [][]string{
		{"report", "--db", "x.db", "-o", "x.db"},
		{"report", "--db", "x.db", "--format", "html", "-o", "./x.db"},
		{"report", "--db", "x.db", "-o", filepath.Join(dir, "x.db")},
		{"report", "--db", "x.db", "-o", "link.db"},
		{"report", "--db", "x.db", "-o", "x.db-wal"},
		{"report", "--db", "report.html", "--format", "html"}, // -o defaults to report.html
	} {
		st, _, errb := newTestState(t)
		code := Main(context.Background(), st, args)
		oneUsageLine(t, code, errb.String())
		if !strings.Contains(errb.String(), "is the result store itself") {
			t.Fatalf("%v: %q", args, errb.String())
		}
		if after, _ := os.ReadFile("x.db"); !bytes.Equal(before, after) {
			t.Fatalf("%v changed the store", args)
		}
	}
	st, out, errb := newTestState(t)
	if code := Main(context.Background(), st, []string{"report", "--db", "x.db", "--format", "markdown", "-o", "r.md"}); code != 0 {
		t.Fatalf("report to another file: exit %d %s", code, errb.String())
	}
	if b, _ := os.ReadFile("r.md"); !strings.Contains(string(b), "events_per_sec") || out.Len() != 0 {
		t.Fatalf("report to r.md: %q (stdout %q)", b, out.String())
	}
}

// run refuses a --db that is not a store before it sets anything up, and
// leaves the file as it was.
func TestRunRefusesAFileThatIsNotAStore(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "other.sqlite")
	db, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES('keep me')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	page := filepath.Join(dir, "report.html")
	os.WriteFile(page, []byte("<html>a report, long enough to have a header of one hundred bytes or so...............</html>"), 0o644)
	for _, path := range []string{foreign, page} {
		before, _ := os.ReadFile(path)
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		st, out, errb := newTestState(t)
		code := Main(context.Background(), st, []string{"run", "--platform", "native", "--workload", "cpu:duration=50ms", "--reps", "1", "--db", path})
		oneUsageLine(t, code, errb.String())
		if !strings.Contains(errb.String(), "is not an isobench result store") || out.Len() != 0 {
			t.Fatalf("stderr %q stdout %q", errb.String(), out.String())
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatalf("%s changed", path)
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Fatalf("an instance was started: %v", left)
		}
	}
}
