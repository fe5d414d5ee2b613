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
