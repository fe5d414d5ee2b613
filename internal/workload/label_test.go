package workload_test

import (
	"context"
	"testing"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/cpu"
)

// Registry.Label: the name and only the parameters that differ from their
// defaults and play a part, in canonical order; the full string for what
// it cannot read.
func TestLabel(t *testing.T) {
	xfer := workload.Def{
		Name: "xfer",
		Params: []workload.Param{
			{Name: "clients", Kind: workload.Int, Default: "1", Min: 1},
			{Name: "direction", Kind: workload.Enum, Default: "download", Enum: []string{"download", "upload"}},
			{Name: "file", Kind: workload.Size, Default: ""},
			{Name: "tree", Kind: workload.String, Default: ""},
			{Name: "inject", Kind: workload.Enum, Default: "none", Enum: []string{"none", "loss"}},
			{Name: "neighbours", Kind: workload.Int, Default: "0"},
			{Name: "time", Kind: workload.Duration, Default: "10s", Min: 0.1},
			// computed: 4 per client unless given
			{Name: "streams", Kind: workload.Int, Default: ""},
		},
		Derive: func(p workload.Params) map[string]string {
			return map[string]string{"streams": map[string]string{"1": "4", "2": "8"}[p.Str("clients")]}
		},
		Agent: func(context.Context, workload.Params, workload.Barrier) ([]sample.Metric, error) { return nil, nil },
	}
	reg, err := workload.NewRegistry(xfer, cpu.Def)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, params, want string }{
		// defaults dropped
		{"xfer", "clients=1,direction=download,file=,inject=none,neighbours=0,streams=4,time=10s", "xfer"},
		{"xfer", "clients=1,direction=download,file=4m,inject=none,neighbours=1,streams=4,time=10s", "xfer:file=4m,neighbours=1"},
		// order stable: canonical (by name), whatever order it came in
		{"xfer", "time=20s,neighbours=1,file=4m,clients=1", "xfer:file=4m,neighbours=1,time=20s"},
		// an empty default given as empty (file= beside tree=: no size)
		{"xfer", "clients=1,file=,tree=50/1m", "xfer:tree=50/1m"},
		// a value written differently is still the default
		{"xfer", "time=10,neighbours=0", "xfer"},
		// a computed default is the default given the others; a value
		// other than the computed one is shown
		{"xfer", "clients=2,streams=8", "xfer:clients=2"},
		{"xfer", "clients=2,streams=4", "xfer:clients=2,streams=4"},
		// irrelevant given the others: cpu's duration with events set
		{"cpu", "duration=10s,events=2000,max-prime=10000,threads=1", "cpu:events=2000"},
		{"cpu", "duration=30s,events=2000,max-prime=10000,threads=1", "cpu:events=2000"},
		{"cpu", "duration=30s,events=0,max-prime=10000,threads=2", "cpu:duration=30s,threads=2"},
		{"cpu", "", "cpu"},
		// what it cannot read is shown in full
		{"nosuch", "a=1,b=2", "nosuch:a=1,b=2"},
		{"cpu", "duration=10s,gone=1", "cpu:duration=10s,gone=1"},
		{"cpu", "threads=0", "cpu:threads=0"},
	} {
		if got := reg.Label(c.name, c.params); got != c.want {
			t.Errorf("Label(%q, %q) = %q, want %q", c.name, c.params, got, c.want)
		}
	}
	// a nil registry knows nothing: full strings
	if got := workload.Registry(nil).Label("cpu", "threads=1"); got != "cpu:threads=1" {
		t.Errorf("nil registry: %q", got)
	}
}
