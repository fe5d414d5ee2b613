package cli

import (
	"testing"

	"github.com/isobench/isobench/internal/builtin"
)

// A group of alternatives (spark on native: spark-submit, or python3's
// pyspark module) is missing only when none is here, and is named as one
// with how to get it; the group comes from the workload's own Def.
func TestDryRunToolAlternatives(t *testing.T) {
	defer func(h func(string) bool, m func(string) bool) { hostHas, pyImports = h, m }(hostHas, pyImports)
	def, err := builtin.Workloads().Lookup("spark")
	if err != nil {
		t.Fatal(err)
	}
	p, err := def.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := def.Needs.HostTools(p, false); len(got) != 0 {
		t.Fatalf("spark off native needs %+v", got)
	}
	tools := def.Needs.HostTools(p, true)
	if len(tools) != 2 {
		t.Fatalf("spark on native: %+v", tools)
	}
	say := func() (out []string) {
		for _, tool := range tools {
			out = append(out, missingTool(tool))
		}
		return out
	}
	hostHas = func(string) bool { return false }
	pyImports = func(string) bool { return false }
	if got := say(); got[0] != "java (apt-get install openjdk-17-jre-headless)" || got[1] != "spark-submit or python3's pyspark (pip install pyspark)" {
		t.Errorf("nothing here: %q", got)
	}
	pyImports = func(m string) bool { return m == "pyspark" }
	if got := say(); got[1] != "" {
		t.Errorf("pyspark imports: %q", got)
	}
	pyImports = func(string) bool { return false }
	hostHas = func(bin string) bool { return bin == "spark-submit" || bin == "java" }
	if got := say(); got[0] != "" || got[1] != "" {
		t.Errorf("spark-submit and java here: %q", got)
	}
}
