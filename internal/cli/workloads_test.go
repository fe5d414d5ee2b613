package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/spec"
)

// 'isobench workloads' shows what the validator allows and what a run
// really uses: an enum's values, "computed" (and to what) for a default
// the workload fills in, never `default ""`; wget's direction without
// upload, spark-cluster without local mode's executors; and once, that a
// bare number for a duration is seconds (as the parser reads it).
func TestWorkloadsListing(t *testing.T) {
	list := helpOf(t, "workloads")
	if strings.Contains(list, `default ""`) {
		t.Errorf(`the list shows default "":\n%s`, list)
	}
	if strings.Count(list, "a bare number is seconds") != 1 {
		t.Errorf("the list does not say once that a bare number is seconds")
	}
	if d, err := spec.ParseDuration("5"); err != nil || d != 5*time.Second {
		t.Fatalf("a bare duration 5 parses as %v, %v: the note would be wrong", d, err)
	}
	st, _, _ := newTestState(t)
	for _, name := range st.Workloads.Names() {
		d := st.Workloads[name]
		block := helpOf(t, "workloads", name)
		resolved, err := d.Resolve(map[string]string{})
		for _, p := range d.Params {
			line := ""
			for _, l := range strings.Split(block, "\n") {
				if f := strings.Fields(l); len(f) > 0 && f[0] == p.Name && strings.HasPrefix(l, "    ") {
					line = l
				}
			}
			if line == "" {
				t.Errorf("%s: no line for %s:\n%s", name, p.Name, block)
				continue
			}
			if len(p.Enum) > 1 && !strings.Contains(line, strings.Join(p.Enum, "|")) {
				t.Errorf("%s: %s does not show its values %v: %q", name, p.Name, p.Enum, line)
			}
			// a parameter declared without a default that the workload
			// fills in says so, and with what
			if err == nil && p.Default == "" && resolved.Str(p.Name) != "" {
				if p.Computed == "" || !strings.Contains(line, "default computed ") || !strings.Contains(line, p.Computed) {
					t.Errorf("%s: %s is computed (%s by default) but its line says %q", name, p.Name, resolved.Str(p.Name), line)
				}
			}
		}
	}
	for _, c := range []struct{ workload, not string }{{"wget", "upload"}, {"spark-cluster", "executors "}, {"spark-cluster", "local mode"}} {
		for _, l := range strings.Split(helpOf(t, "workloads", c.workload), "\n")[1:] {
			if strings.Contains(l, c.not) {
				t.Errorf("%s lists %q: %q", c.workload, c.not, l)
			}
		}
	}
	for _, want := range []string{"oper             default write      memory operation per word (one of write|read)", "(one of oltp_read_only|oltp_read_write)", "(one of nginx|apache)", "(one of ab|wrk)", "(one of randread|randwrite|read|write|rw|randrw)"} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %q", want)
		}
	}
}

// 'isobench workloads NAME' lists only that one; a typo gets "did you mean".
func TestWorkloadsByName(t *testing.T) {
	if out := helpOf(t, "workloads", "memory"); !strings.HasPrefix(out, "memory (in-guest)") || strings.Contains(out, "\ncpu ") {
		t.Errorf("workloads memory:\n%s", out)
	}
	st, out, errb := newTestState(t)
	code := Main(t.Context(), st, []string{"workloads", "dsik"})
	oneUsageLine(t, code, errb.String())
	if !strings.Contains(errb.String(), "did you mean disk?") || out.Len() != 0 {
		t.Errorf("workloads dsik: %q", errb.String())
	}
}
