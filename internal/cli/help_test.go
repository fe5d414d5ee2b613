package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

var oneDashFlag = regexp.MustCompile(`(?m)^\s+-[a-z][a-z]`) // -o is spelled so in the README

// Every command's -h and --help print its synopsis, its flags spelled as
// the README spells them (--flag) and an example, to stdout, and exit 0.
func TestEveryCommandHelp(t *testing.T) {
	commands := map[string][]string{ // args before -h -> the synopsis it must show
		"run":            {"run"},
		"results":        {"results"},
		"report":         {"report"},
		"compare":        {"compare"},
		"runs":           {"runs"},
		"merge":          {"merge"},
		"export":         {"export"},
		"image":          {"image"},
		"image build":    {"image", "build"},
		"doctor":         {"doctor"},
		"workloads":      {"workloads"},
		"version":        {"version"},
		"clean":          {"clean"},
		"study":          {"study"},
		"study list":     {"study", "list"},
		"study show":     {"study", "show"},
		"study run":      {"study", "run"},
		"study fidelity": {"study", "fidelity"},
	}
	for name, pre := range commands {
		for _, h := range []string{"-h", "--help"} {
			t.Run(name+" "+h, func(t *testing.T) {
				st, out, errb := newTestState(t)
				code := Main(context.Background(), st, append(append([]string{}, pre...), h))
				if code != ExitOK {
					t.Fatalf("exit %d, want 0; stderr %q", code, errb.String())
				}
				if errb.Len() != 0 {
					t.Fatalf("stderr: %q", errb.String())
				}
				help := out.String()
				synopsis := "Usage: isobench " + name
				if name == "image" {
					synopsis = "Usage: isobench image build"
				}
				if !strings.HasPrefix(help, synopsis) {
					t.Fatalf("help does not start with %q:\n%s", synopsis, help)
				}
				if !strings.Contains(help, "\nExample:\n  isobench ") {
					t.Fatalf("no example:\n%s", help)
				}
				if m := oneDashFlag.FindString(help); m != "" {
					t.Fatalf("a one-dash flag %q in:\n%s", m, help)
				}
				if strings.Contains(help, "Flags:\n\n") || strings.HasSuffix(strings.TrimSpace(help), "Flags:") {
					t.Fatalf("an empty Flags section:\n%s", help)
				}
			})
		}
	}
}

func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	st, out, errb := newTestState(t)
	if code := Main(context.Background(), st, args); code != ExitOK {
		t.Fatalf("%v: exit %d %s", args, code, errb.String())
	}
	return out.String()
}

// run -h shows the real defaults (not the sentinel -1 for --warmup);
// commands without flags print no Flags section (compare printed an empty one).
func TestHelpShowsRealDefaults(t *testing.T) {
	run := helpOf(t, "run", "-h")
	for _, want := range []string{
		"  --warmup N\n", "(default 30)", "(default 2)", `(default "5")`, `(default "1")`, `(default "minimal")`, `(default "isobench.db")`,
		"  --platform P[:OPTIONS]\n", "  --quiet\n",
	} {
		if !strings.Contains(run, want) {
			t.Errorf("run -h lacks %q:\n%s", want, run)
		}
	}
	if strings.Contains(run, "-1") {
		t.Errorf("run -h shows a sentinel -1:\n%s", run)
	}
	for _, cmd := range []string{"workloads", "version"} {
		if h := helpOf(t, cmd, "-h"); strings.Contains(h, "Flags:") {
			t.Errorf("%s has no flags but its help has a Flags section:\n%s", cmd, h)
		}
	}
	// compare has one flag now (the CI gate): its section lists exactly it
	if h := helpOf(t, "compare", "-h"); !strings.Contains(h, "Flags:\n  --fail-if-slower PCT\n") || strings.Count(h, "\n  --") != 1 {
		t.Errorf("compare -h:\n%s", h)
	}
	if h := helpOf(t, "report", "-h"); !strings.Contains(h, "  --format table|markdown|csv|json|jsonl|html\n") || !strings.Contains(h, "  -o FILE\n") || strings.Contains(h, "FILE: ") {
		t.Errorf("report -h:\n%s", h)
	}
	if h := helpOf(t, "help"); !strings.Contains(h, "-h (or --help)") {
		t.Errorf("top help does not point to the commands' -h:\n%s", h)
	}
}

// A bad flag is one usage line that points to -h, not the whole help.
func TestBadFlagIsOneLine(t *testing.T) {
	for _, args := range [][]string{{"run", "--bogus"}, {"report", "--format"}, {"workloads", "--x"}, {"compare", "-v", "a", "b"}, {"results", "--run", "x"}} {
		st, out, errb := newTestState(t)
		code := Main(context.Background(), st, args)
		oneUsageLine(t, code, errb.String())
		if !strings.Contains(errb.String(), "-h')") || out.Len() != 0 {
			t.Fatalf("%v: stderr %q stdout %q", args, errb.String(), out.String())
		}
	}
}

// A platform whose engine is missing is not a usage error: the command was
// right. Exit 1, one line that says what to start or install.
func TestMissingEngineIsNotAUsageError(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+t.TempDir()+"/no-dockerd.sock")
	for _, args := range [][]string{
		{"run", "--platform", "native", "--platform", "docker", "--workload", "cpu", "--db", t.TempDir() + "/x.db"},
		{"image", "build", "--platform", "docker"},
	} {
		st, out, errb := newTestState(t)
		code := Main(context.Background(), st, args)
		if code != ExitFailed {
			t.Fatalf("%v: exit %d, want %d; stderr %q", args, code, ExitFailed, errb.String())
		}
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "docker is not available here") || !strings.Contains(lines[0], "start dockerd") {
			t.Fatalf("%v: want one line naming docker and how to start it, got %q", args, errb.String())
		}
		if out.Len() != 0 {
			t.Fatalf("stdout %q", out.String())
		}
	}
}
