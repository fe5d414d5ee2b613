package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goldenPlain are the outputs that depend on nothing but the binary:
// the built-in studies, their ledger and the plans (the dry run's last
// section, this host's platforms and tools, is cut off).
var goldenPlain = map[string][]string{
	"study-list.txt":           {"study", "list"},
	"study-show-002.txt":       {"study", "show", "002"},
	"study-fidelity.txt":       {"study", "fidelity"},
	"plan-study-004.txt":       {"study", "run", "004", "--dry-run"},
	"plan-study-002-quick.txt": {"study", "run", "002", "--scale", "quick", "--dry-run"},
	"plan-run-alone.txt":       {"run", "--platform", "docker", "--workload", "cpu", "--dry-run"},
	"plan-run.txt": {"run", "--platform", "native", "--platform", "docker:cpus=1", "--platform", "lxc:init=system",
		"--workload", "cpu:threads=1|2", "--workload", "startup", "--instances", "1,4", "--reps", "5", "--warmup", "1", "--dry-run"},
}

// hostSection is where a dry run starts saying what this host has.
const hostSection = "\nhere (isobench doctor's check"

func TestOutputsGolden(t *testing.T) {
	// as on a host with every paper's tool (make test installs them), so
	// the plans' "tools:" lines do not depend on this host
	saved := hostHas
	hostHas = func(string) bool { return true }
	defer func() { hostHas = saved }()
	for name, args := range goldenPlain {
		t.Run(name, func(t *testing.T) {
			st, out, errb := newTestState(t)
			if code := Main(context.Background(), st, args); code != ExitOK {
				t.Fatalf("%v: exit %d, stderr %q", args, code, errb.String())
			}
			got := out.String()
			if i := strings.Index(got, hostSection); i >= 0 {
				got = got[:i+1]
			} else if strings.Contains(strings.Join(args, " "), "--dry-run") {
				t.Fatalf("%v: no %q section", args, strings.TrimSpace(hostSection))
			}
			checkGolden(t, name, []byte(got))
		})
	}
}

// The store's outputs, on a store with one known run: what differs from
// one test run to the next (the run's own start, pid and host) is
// replaced by a placeholder.
func TestStoreOutputsGolden(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	gateStore(t, db, "h", 0.9, 0.01, 3)
	host, _ := os.Hostname()
	now := regexp.MustCompile(`20[2-9]\d-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?Z?`) // the run's own times (the samples' are 2001's)
	pid := regexp.MustCompile(`"pid": \d+`)
	for name, args := range map[string][]string{
		"runs.txt":      {"runs", "--db", db},
		"results.jsonl": {"results", "--db", db},
		"results.csv":   {"results", "--db", db, "--format", "csv"},
		"export.json":   {"export", "--db", db},
		"report.txt":    {"report", "--db", db},
		"report.md":     {"report", "--db", db, "--format", "markdown"},
	} {
		t.Run(name, func(t *testing.T) {
			st, out, errb := newTestState(t)
			if code := Main(context.Background(), st, args); code != ExitOK {
				t.Fatalf("%v: exit %d, stderr %q", args, code, errb.String())
			}
			got := now.ReplaceAllString(out.String(), "<now>")
			got = pid.ReplaceAllString(got, `"pid": <pid>`)
			if host != "" {
				got = regexp.MustCompile(`\b`+regexp.QuoteMeta(host)+`\b`).ReplaceAllString(got, "<host>")
			}
			if name == "runs.txt" {
				// its columns are as wide as this host's name and clock
				got = regexp.MustCompile(` {2,}`).ReplaceAllString(got, "  ")
			}
			checkGolden(t, name, []byte(got))
		})
	}
}
