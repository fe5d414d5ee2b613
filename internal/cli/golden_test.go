package cli

import (
	"bytes"
	"context"
	"flag"
	"github.com/isobench/isobench/internal/testkit/golden"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// go test ./internal/cli -run Golden -update rewrites testdata/golden/*
// from the current output; review the diff before committing it.
var update = flag.Bool("update", false, "rewrite testdata/golden/* from the current output")

// goldenHelp is every help text a user can ask for, by golden file name:
// each command's -h, the usage, and the workload list.
var goldenHelp = map[string][]string{
	"help.txt":                {"help"},
	"help-run.txt":            {"run", "-h"},
	"help-results.txt":        {"results", "-h"},
	"help-report.txt":         {"report", "-h"},
	"help-compare.txt":        {"compare", "-h"},
	"help-runs.txt":           {"runs", "-h"},
	"help-merge.txt":          {"merge", "-h"},
	"help-export.txt":         {"export", "-h"},
	"help-image.txt":          {"image", "-h"},
	"help-image-build.txt":    {"image", "build", "-h"},
	"help-doctor.txt":         {"doctor", "-h"},
	"help-clean.txt":          {"clean", "-h"},
	"help-workloads.txt":      {"workloads", "-h"},
	"help-version.txt":        {"version", "-h"},
	"help-study.txt":          {"study", "-h"},
	"help-study-list.txt":     {"study", "list", "-h"},
	"help-study-show.txt":     {"study", "show", "-h"},
	"help-study-fidelity.txt": {"study", "fidelity", "-h"},
	"help-study-run.txt":      {"study", "run", "-h"},
	"help-platformd.txt":      {"platformd", "-h"},
	"workloads.txt":           {"workloads"},
}

func TestHelpGolden(t *testing.T) {
	for name, args := range goldenHelp {
		t.Run(name, func(t *testing.T) {
			st, out, errb := newTestState(t)
			if code := Main(context.Background(), st, args); code != ExitOK || errb.Len() != 0 {
				t.Fatalf("%v: exit %d, stderr %q", args, code, errb.String())
			}
			checkGolden(t, name, out.Bytes())
		})
	}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run 'go test ./internal/cli -run Golden -update' to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s changed: %s\n(if the change is intended: go test ./internal/cli -run Golden -update, and review the diff)", path, golden.FirstDiff(string(want), string(got)))
	}
}

// flagLine is a flag's line in a help text: "  --db FILE" or "  -o FILE".
var flagLine = regexp.MustCompile(`(?m)^  (--?[a-z][a-z-]*)(?: (.*))?$`)

// No help shows the flag package's Go type names as value placeholders
// (--db string, -o string, --platform value): each names what to give.
func TestHelpHasNoGoPlaceholders(t *testing.T) {
	for name, args := range goldenHelp {
		if name == "workloads.txt" || name == "help.txt" {
			continue
		}
		h := helpOf(t, args...)
		for _, m := range flagLine.FindAllStringSubmatch(h, -1) {
			switch m[2] {
			case "string", "int", "int64", "uint", "float", "float64", "duration", "value", "VALUE":
				t.Errorf("%v: %s %s: a Go placeholder, not what to give", args, m[1], m[2])
			}
		}
	}
}

// 'isobench help CMD' prints CMD's help, as 'isobench CMD -h' does.
func TestHelpCommandPrintsTheCommandsHelp(t *testing.T) {
	for _, args := range [][]string{{"run"}, {"results"}, {"report"}, {"compare"}, {"runs"}, {"merge"}, {"export"},
		{"image"}, {"image", "build"}, {"doctor"}, {"clean"}, {"workloads"}, {"study"}, {"study", "run"}, {"study", "list"}, {"version"}} {
		want := helpOf(t, append(append([]string{}, args...), "-h")...)
		if got := helpOf(t, append([]string{"help"}, args...)...); got != want {
			t.Errorf("help %v printed\n%s\nwant\n%s", args, got, want)
		}
	}
	st, out, errb := newTestState(t)
	code := Main(context.Background(), st, []string{"help", "bogus"})
	oneUsageLine(t, code, errb.String())
	if out.Len() != 0 {
		t.Fatalf("stdout %q", out.String())
	}
}

// Bare isobench prints the usage to stderr and exits 2 (a usage error);
// 'isobench help' prints the same to stdout and exits 0. Its descriptions
// start in one column.
func TestBareUsage(t *testing.T) {
	st, out, errb := newTestState(t)
	if code := Main(context.Background(), st, nil); code != ExitUsage {
		t.Fatalf("exit %d, want %d", code, ExitUsage)
	}
	if out.Len() != 0 || errb.String() != helpOf(t, "help") {
		t.Fatalf("stdout %q, stderr %q", out.String(), errb.String())
	}
	col := -1
	for _, l := range strings.Split(errb.String(), "\n") {
		if !strings.HasPrefix(l, "  isobench ") {
			continue
		}
		i := strings.Index(l[2:], "  ") + 2 // the gap before the description
		if i < 2 {
			t.Errorf("no description column in %q", l)
			continue
		}
		c := i + len(l[i:]) - len(strings.TrimLeft(l[i:], " "))
		if col < 0 {
			col = c
		}
		if c != col {
			t.Errorf("description at column %d, not %d: %q", c, col, l)
		}
	}
}

// Every help spells a run as --run ID (export's included, optional as its
// flag is), and run -h states --warmup's default.
func TestHelpRunIDAndWarmupDefault(t *testing.T) {
	runFlag := regexp.MustCompile(`--run [A-Z]+`)
	for name, args := range goldenHelp {
		h := helpOf(t, args...)
		for _, m := range runFlag.FindAllString(h, -1) {
			if m != "--run ID" {
				t.Errorf("%s: %q, want --run ID", name, m)
			}
		}
	}
	if top := helpOf(t, "help"); !strings.Contains(top, "isobench export [--db FILE] [--run ID]") {
		t.Errorf("the usage does not show export's --run as optional:\n%s", top)
	}
	if h := helpOf(t, "export", "-h"); !strings.Contains(h, "Usage: isobench export [--db FILE] [--run ID]") {
		t.Errorf("export -h:\n%s", h)
	}
	if h := helpOf(t, "run", "-h"); !regexp.MustCompile(`--warmup N\n .*\(default 0`).MatchString(h) {
		t.Errorf("run -h does not state --warmup's default:\n%s", h)
	}
}

// The examples of the store commands run as given (on stores of those
// names): merge -h's example was 'isobench merge', which fails.
func TestStoreExamplesWork(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	gateStore(t, "x.db", "hostA", 1, 0.01, 1)
	gateStore(t, "x.db", "hostA", 0.9, 0.01, 2)
	gateStore(t, "host1.db", "host1", 1, 0.01, 3)
	gateStore(t, "host2.db", "host2", 1, 0.01, 4)
	gateStore(t, "before.db", "hostA", 1, 0.01, 5)
	gateStore(t, "after.db", "hostA", 1, 0.01, 6)
	for _, cmd := range []string{"results", "report", "runs", "merge", "export", "compare"} {
		h := helpOf(t, cmd, "-h")
		_, exs, _ := strings.Cut(h, "\nExample:\n")
		for _, ex := range strings.Split(strings.TrimSpace(exs), "\n") {
			args := strings.Fields(ex)
			if args[0] != "isobench" {
				t.Fatalf("%s example %q", cmd, ex)
			}
			args = args[1:]
			if i := indexOf(args, ">"); i >= 0 {
				args = args[:i]
			}
			st, _, errb := newTestState(t)
			if code := Main(context.Background(), st, args); code != ExitOK {
				t.Errorf("%s -h's example %q: exit %d: %s", cmd, ex, code, errb.String())
			}
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
