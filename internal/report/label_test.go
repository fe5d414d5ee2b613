package report

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/stats"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/cpu"
)

// labelRegistry is cpu and a transfer-like workload with many defaults.
func labelRegistry(t *testing.T) workload.Registry {
	t.Helper()
	var ps []workload.Param
	for _, n := range []string{"clients", "neighbours", "seed"} {
		ps = append(ps, workload.Param{Name: n, Kind: workload.Int, Default: map[string]string{"clients": "1", "seed": "1"}[n]})
	}
	ps[1].Default = "0"
	ps = append(ps,
		workload.Param{Name: "direction", Kind: workload.Enum, Default: "download", Enum: []string{"download", "upload"}},
		workload.Param{Name: "file", Kind: workload.String},
		workload.Param{Name: "inject", Kind: workload.Enum, Default: "none", Enum: []string{"none", "loss"}},
		workload.Param{Name: "neighbours-busy", Kind: workload.Bool, Default: "false"},
		workload.Param{Name: "tree", Kind: workload.String})
	xfer := workload.Def{Name: "scp", Params: ps,
		Agent: func(context.Context, workload.Params, workload.Barrier) ([]sample.Metric, error) { return nil, nil }}
	reg, err := workload.NewRegistry(cpu.Def, xfer)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// Labels shown to users carry only what differs from the defaults (and
// plays a part); the stored params stay whole in Params and CSV; two
// parameter sets that would read alike keep their full strings.
func TestShownLabels(t *testing.T) {
	reg := labelRegistry(t)
	long := "clients=1,direction=download,file=4m,inject=none,neighbours=1,neighbours-busy=false,seed=1,tree="
	metrics := []synthMetric{
		{"cpu", "duration=2s,events=0,max-prime=10000,threads=1", "events_per_sec", "events/s", sample.Higher, 2400},
		// differ only in duration, which plays no part with events
		{"cpu", "duration=10s,events=2000,max-prime=10000,threads=1", "total_time", "s", sample.Lower, 1},
		{"cpu", "duration=30s,events=2000,max-prime=10000,threads=1", "total_time", "s", sample.Lower, 1},
		{"scp", long, "bytes_per_sec", "B/s", sample.Higher, 1e8},
	}
	ss := synthSamples(1, 1, []int{1, 2}, 5, synthPlatforms, metrics)
	cells := Cells(ss, Options{Baseline: "native", Stats: stats.Options{Seed: 1}, WorkloadLabel: reg.Label})
	shown := map[string]string{}
	for _, c := range cells {
		shown[c.Workload+":"+c.Params] = c.WorkloadLabel()
	}
	for full, want := range map[string]string{
		"cpu:" + metrics[0].params: "cpu:duration=2s",
		"cpu:" + metrics[1].params: "cpu:" + metrics[1].params,
		"cpu:" + metrics[2].params: "cpu:" + metrics[2].params,
		"scp:" + long:              "scp:file=4m,neighbours=1",
	} {
		if shown[full] != want {
			t.Errorf("%s shown as %q, want %q", full, shown[full], want)
		}
	}
	// without a registry: the full strings
	for _, c := range Cells(ss, Options{}) {
		if c.WorkloadLabel() != c.Workload+":"+c.Params {
			t.Errorf("no WorkloadLabel: %q", c.WorkloadLabel())
		}
	}

	d := Doc{Run: 1, Status: "done", Fingerprint: synthFingerprint(), Cells: cells}
	var tb, mb, cb, hb bytes.Buffer
	if err := Table(&tb, cells); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&mb, d); err != nil {
		t.Fatal(err)
	}
	if err := CSV(&cb, d); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&hb, d); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"table": tb.String(), "markdown": mb.String(), "html": hb.String()} {
		if !strings.Contains(out, "scp:file=4m,neighbours=1") || strings.Contains(out, "direction=download") || !strings.Contains(out, "cpu:duration=2s") {
			t.Errorf("%s: labels not shortened:\n%s", name, out)
		}
	}
	if !strings.Contains(mb.String(), "## cpu:duration=2s\n") {
		t.Errorf("markdown heading:\n%s", mb.String())
	}
	if !strings.Contains(cb.String(), `,scp,"`+long+`",`) {
		t.Errorf("csv lost the stored params:\n%s", cb.String())
	}
	// the overview: ×1 and ×2 of one label stay apart
	var groups []string
	for _, r := range overviewRows(cells) {
		if r.Group != "" {
			groups = append(groups, fitGroup(r.Group, r.GroupLabel, 74))
		}
	}
	seen := map[string]bool{}
	for _, g := range groups {
		if seen[g] {
			t.Errorf("overview group %q twice: %q", g, groups)
		}
		seen[g] = true
	}
}

// fitGroup shortens the label, never the instance count or the metric.
func TestFitGroup(t *testing.T) {
	label := "scp:clients=1,direction=download,file=,inject=none,neighbours=0,neighbours-busy=false,seed=1,tree=50/1m"
	for _, n := range []int{1, 2, 16} {
		title := fmt.Sprintf("%s ×%d bytes_per_sec (B/s, higher is better)", label, n)
		got := fitGroup(title, label, 74)
		if len([]rune(got)) > 74 || !strings.Contains(got, fmt.Sprintf(" ×%d bytes_per_sec (B/s, higher is better)", n)) || !strings.HasPrefix(got, "scp:") {
			t.Errorf("fitGroup(%q) = %q", title, got)
		}
	}
	// short enough: as it is
	if got := fitGroup("cpu ×2 events_per_sec (events/s, higher is better)", "cpu", 74); got != "cpu ×2 events_per_sec (events/s, higher is better)" {
		t.Errorf("short title changed: %q", got)
	}
	// a rest too long for the room: cut from its end, the count kept
	rest := " ×2 " + strings.Repeat("m", 80)
	if got := fitGroup(label+rest, label, 74); len([]rune(got)) != 74 || !strings.Contains(got, " ×2 ") || !strings.HasSuffix(got, "…") {
		t.Errorf("long rest: %q", got)
	}
}
