package report

import (
	"bytes"
	"encoding/json"
	"github.com/isobench/isobench/internal/testkit/golden"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/stats"
)

// startupMetrics look like the startup workload's: the end-to-end time
// first (its primary metric), then the per-platform phases.
var startupMetrics = []synthMetric{
	{"startup", "timeout=120s", "startup_ms", "ms", sample.Lower, 3.1},
	{"startup", "timeout=120s", "exit_ms", "ms", sample.Lower, 4.2},
	{"startup", "timeout=120s", "create_ms", "ms", sample.Lower, 0.3},
	{"startup", "timeout=120s", "start_ms", "ms", sample.Lower, 1.1},
	{"startup", "timeout=120s", "first_instruction_ms", "ms", sample.Lower, 1.7},
}

// goldenSummaryDocs are the summaries under test: the golden run (native
// first), a startup run where Docker is 58× slower, and a run without
// native, whose baseline is the first platform listed.
func goldenSummaryDocs() map[string][]Cell {
	startup := append(synthSamples(1, 11, []int{1}, 6, []synthPlatform{{"native", "", 1}, {"docker", "", 1 / 58.0}, {"docker", "network=host", 1 / 50.0}}, startupMetrics),
		synthSamples(1, 13, []int{1}, 6, []synthPlatform{{"native", "", 1}, {"docker", "", 0.99}, {"docker", "network=host", 1}}, synthMetrics[:1])...)
	noNative := synthSamples(1, 12, []int{1, 2}, 6, []synthPlatform{{"docker", "", 1}, {"podman", "", 0.97}, {"qemu", "cpus=1", 0.72}}, synthMetrics[:1])
	return map[string][]Cell{
		"summary-emulated.txt": emulatedCells(),
		"summary.txt":          goldenDoc(7).Cells,
		"summary-startup.txt":  Cells(startup, Options{Baseline: "native", Stats: stats.Options{Seed: 1}}),
		"summary-nonative.txt": Cells(noNative, Options{Baseline: "docker", Stats: stats.Options{Seed: 1}}),
	}
}

func TestSummaryGolden(t *testing.T) {
	for name, cells := range goldenSummaryDocs() {
		t.Run(name, func(t *testing.T) {
			var got bytes.Buffer
			if err := Summary(&got, cells, SummaryOptions{DetailsHint: "isobench report --db x.db (or run --details)"}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", name)
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run 'go test ./internal/report -update' to create it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("%s changed: %s\n(if the change is intended: go test ./internal/report -update, and review the diff)", path, golden.FirstDiff(string(want), got.String()))
			}
		})
	}
}

// What the summary promises, checked on the text itself: the baseline
// named and listed first in every group, ratios and no percentages,
// phases left out, and a detected slowdown as "N× slower than".
func TestSummaryContent(t *testing.T) {
	docs := goldenSummaryDocs()
	for name, cells := range docs {
		var b bytes.Buffer
		if err := Summary(&b, cells, SummaryOptions{}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		base := baselineOf(cells)
		if !strings.HasPrefix(out, "Baseline: "+base+".") {
			t.Errorf("%s: does not start by naming the baseline %s:\n%s", name, base, out)
		}
		for _, blk := range strings.Split(out, "\n\n")[1:] {
			lines := strings.Split(strings.TrimSpace(blk), "\n")
			if strings.HasPrefix(lines[0], "warning:") || strings.Contains(lines[0], ": "+EmulatedNote) {
				continue
			}
			if len(lines) < 2 || !strings.HasPrefix(strings.TrimSpace(lines[1]), base+" ") {
				t.Errorf("%s: group does not list %s first:\n%s", name, base, blk)
			}
		}
		if strings.Contains(out, "%]") || strings.Contains(out, "+") {
			t.Errorf("%s: a percentage in the summary:\n%s", name, out)
		}
		for _, ph := range []string{"create_ms", "start_ms", "first_instruction_ms", "exit_ms"} {
			if strings.Contains(out, ph) {
				t.Errorf("%s: %s is a detail, not a summary line", name, ph)
			}
		}
	}
	var b bytes.Buffer
	Summary(&b, docs["summary-startup.txt"], SummaryOptions{})
	if !regexpMatch(`docker\s+5\d\.\d× slower than native \(1\d\d(\.\d)? ms vs 3\.\d+ ms\), 95% CI \[`, b.String()) {
		t.Errorf("no '58× slower than native' line:\n%s", b.String())
	}
	if !regexpMatch(`cpu:[^\n]*\n\s+native[^\n]*baseline\n\s+docker\s+\d\.\d\d× native, 95% CI \[[^]]*\] — (no detectable difference|slower|faster)`, b.String()) {
		t.Errorf("no cpu ratio line:\n%s", b.String())
	}
}

// A phase compared across two different platforms gets no verdict; the
// same phase between two setups of one platform does.
func TestPhaseVerdicts(t *testing.T) {
	for _, c := range goldenSummaryDocs()["summary-startup.txt"] {
		switch {
		case c.Label() == "native":
		case PhaseMetric(c.Metric) && c.Verdict != VerdictNoPhaseVerdict:
			t.Errorf("%s on %s: verdict %q, want none", c.Metric, c.Label(), c.Verdict)
		case !PhaseMetric(c.Metric) && c.Verdict == VerdictNoPhaseVerdict:
			t.Errorf("%s on %s: no verdict for an end-to-end metric", c.Metric, c.Label())
		}
	}
	ss := synthSamples(1, 3, []int{1}, 6, []synthPlatform{{"docker", "", 1}, {"docker", "network=host", 0.5}}, startupMetrics)
	for _, c := range Cells(ss, Options{Baseline: "docker", Stats: stats.Options{Seed: 1}}) {
		if c.Label() != "docker" && c.Verdict != stats.VerdictSlower {
			t.Errorf("%s between two Docker setups: verdict %q, want slower", c.Metric, c.Verdict)
		}
	}
}

// A cell without a baseline has no ratio: null in JSON, never 0.
func TestJSONNullRatioWithoutBaseline(t *testing.T) {
	ss := synthSamples(1, 3, []int{1, 2}, 6, []synthPlatform{{"native", "", 1}, {"docker", "", 0.9}}, synthMetrics[:1])
	var kept []sample.Sample
	for _, s := range ss { // native ran only one instance count
		if s.Platform != "native" || s.Instances == 1 {
			kept = append(kept, s)
		}
	}
	var b bytes.Buffer
	if err := JSONL(&b, Doc{Cells: Cells(kept, Options{Baseline: "native", Stats: stats.Options{Seed: 1}})}); err != nil {
		t.Fatal(err)
	}
	nulls, ratios := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		r, ok := m["ratio"]
		if !ok {
			t.Fatalf("no ratio key: %s", line)
		}
		if m["platform"] == "docker" && m["instances"] == 2.0 {
			if r != nil || m["ratio_ci_low"] != nil || m["overhead"] != nil {
				t.Errorf("docker ×2 has no baseline but ratio %v: %s", r, line)
			}
			nulls++
		} else if r == nil || r == 0.0 {
			t.Errorf("compared cell without a ratio: %s", line)
		} else {
			ratios++
		}
	}
	if nulls != 1 || ratios != 2 {
		t.Fatalf("%d null and %d ratios, want 1 and 2:\n%s", nulls, ratios, b.String())
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
