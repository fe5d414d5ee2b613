package workload

import (
	"context"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/sample"
)

var testDef = Def{
	Name: "t",
	Params: []Param{
		{Name: "threads", Kind: Int, Default: "1", Min: 1, Max: 64},
		{Name: "size", Kind: Size, Default: "4k", Min: 512},
		{Name: "duration", Kind: Duration, Default: "1s", Min: 0.1},
		{Name: "mode", Kind: Enum, Default: "a", Enum: []string{"a", "b"}},
		{Name: "direct", Kind: Bool, Default: "true"},
	},
	Check: func(p Params) error {
		if p.Str("mode") == "b" && p.Int("threads") > 8 {
			return errorString("mode=b allows at most 8 threads")
		}
		return nil
	},
	Agent: func(context.Context, Params, Barrier) ([]sample.Metric, error) { return nil, nil },
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestResolveFillsDefaultsAndValidates(t *testing.T) {
	p, err := testDef.Resolve(map[string]string{"threads": "4"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Int("threads") != 4 || p.Size("size") != 4096 || p.Duration("duration").Seconds() != 1 || p.Str("mode") != "a" || !p.Bool("direct") {
		t.Fatalf("resolved %v", p.Raw())
	}
	if p.String() != "direct=true,duration=1s,mode=a,size=4k,threads=4" {
		t.Fatalf("canonical %q", p.String())
	}
	back, err := testDef.FromString(p.String())
	if err != nil || back.String() != p.String() {
		t.Fatalf("FromString round trip: %v %v", back.String(), err)
	}
	bad := map[string]string{
		"threads=0":        "below its minimum",
		"threads=65":       "above its maximum",
		"threads=x":        "whole number",
		"size=100":         "below its minimum",
		"size=huge":        "size such as",
		"duration=0":       "below its minimum",
		"mode=c":           "one of a|b",
		"direct=maybe":     "true or false",
		"nope=1":           "has no parameter",
		"mode=b,threads=9": "at most 8 threads",
	}
	for in, want := range bad {
		raw := map[string]string{}
		for _, kv := range strings.Split(in, ",") {
			k, v, _ := strings.Cut(kv, "=")
			raw[k] = v
		}
		_, err := testDef.Resolve(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", in, err, want)
		}
	}
}

func TestRegistry(t *testing.T) {
	if _, err := NewRegistry(testDef, testDef); err == nil {
		t.Fatal("duplicate accepted")
	}
	if _, err := NewRegistry(Def{Name: "x"}); err == nil {
		t.Fatal("def without a body accepted")
	}
	r, err := NewRegistry(testDef)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Lookup("zzz"); err == nil || !strings.Contains(err.Error(), "known: t") {
		t.Fatalf("lookup error should list known workloads: %v", err)
	}
}

func TestExpandSweeps(t *testing.T) {
	vs, err := Expand(map[string]string{"threads": "1|2|4", "size": "4k"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		if v.Raw["size"] != "4k" || strings.Join(v.Sweep, ",") != "threads" || v.Tags()[SweepTag] != "threads" {
			t.Fatalf("variant %+v", v)
		}
		got = append(got, v.Raw["threads"])
		if _, err := testDef.Resolve(v.Raw); err != nil {
			t.Fatalf("variant %v does not resolve: %v", v.Raw, err)
		}
	}
	if strings.Join(got, " ") != "1 2 4" {
		t.Fatalf("threads in order %v, want 1 2 4", got)
	}

	// Two swept parameters: the product, the first by name varying slowest.
	vs, err = Expand(map[string]string{"threads": "1|2", "mode": "a|b"})
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, v := range vs {
		got = append(got, v.Raw["mode"]+v.Raw["threads"])
		if v.Tags()[SweepTag] != "mode,threads" {
			t.Fatalf("tags %v", v.Tags())
		}
	}
	if strings.Join(got, " ") != "a1 a2 b1 b2" {
		t.Fatalf("product %v", got)
	}

	// No sweep: one variant, no tags.
	vs, err = Expand(map[string]string{"threads": "2"})
	if err != nil || len(vs) != 1 || vs[0].Raw["threads"] != "2" || vs[0].Tags() != nil {
		t.Fatalf("plain expand: %v %+v", err, vs)
	}

	for _, bad := range []string{"1||2", "1|2|1", "|4"} {
		if _, err := Expand(map[string]string{"threads": bad}); err == nil {
			t.Errorf("threads=%s accepted", bad)
		}
	}
	// Unexpanded, a sweep is not a valid value.
	if _, err := testDef.Resolve(map[string]string{"threads": "1|2"}); err == nil {
		t.Error("Resolve accepted threads=1|2")
	}
}

// Describe shows an enum's values, a single value as "only", and a
// default the workload computes as "computed" with what it is.
func TestParamDescribe(t *testing.T) {
	for _, c := range []struct {
		p         Param
		def, help string
	}{
		{Param{Name: "oper", Kind: Enum, Enum: []string{"write", "read"}, Default: "write", Help: "op"}, "write", "op (one of write|read)"},
		{Param{Name: "direction", Kind: Enum, Enum: []string{"download"}, Default: "download", Help: "instance -> client"}, "download", "instance -> client (only download)"},
		{Param{Name: "size", Kind: Size, Computed: "1g in stream mode", Help: "file size"}, "computed", "file size; default computed: 1g in stream mode"},
		{Param{Name: "tree", Kind: String, Help: "a tree"}, "none", "a tree"},
		{Param{Name: "threads", Kind: Int, Default: "1", Help: "threads"}, "1", "threads"},
	} {
		def, help := c.p.Describe()
		if def != c.def || help != c.help {
			t.Errorf("%s: %q, %q; want %q, %q", c.p.Name, def, help, c.def, c.help)
		}
	}
}
