package workload

import (
	"math"
	"strings"
	"testing"
)

// go test -run=^$ -fuzz=FuzzResolve -fuzztime=10s ./internal/workload
func FuzzResolve(f *testing.F) {
	def := testDef
	def.Params = append(append([]Param{}, testDef.Params...), Param{Name: "ratio", Kind: Float, Default: "0.5", Min: 0, Max: 10})
	for _, kv := range [][2]string{
		{"threads", "4"}, {"threads", "0"}, {"threads", "65"}, {"threads", "99999999999999999999"}, {"threads", "-99999999999999999999"},
		{"threads", "x"}, {"size", "4k"}, {"size", "100"}, {"size", "nan"}, {"size", "1e300"}, {"size", "99999999999999999999t"},
		{"duration", "1s"}, {"duration", "0"}, {"duration", "nan"}, {"duration", "1e300"}, {"duration", "9999999999h"},
		{"mode", "b"}, {"mode", "c"}, {"direct", "maybe"}, {"ratio", "nan"}, {"ratio", "inf"}, {"ratio", "1e400"}, {"ratio", "-0"},
		{"nope", "1"},
	} {
		f.Add(kv[0], kv[1])
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		p, err := def.Resolve(map[string]string{k: v})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		if n := p.Int("threads"); n < 1 || n > 64 {
			t.Fatalf("%s=%q: threads %d outside [1, 64]", k, v, n)
		}
		if n := p.Size("size"); n < 512 {
			t.Fatalf("%s=%q: size %d below 512", k, v, n)
		}
		if d := p.Duration("duration"); d.Seconds() < 0.1 {
			t.Fatalf("%s=%q: duration %v below 0.1s", k, v, d)
		}
		if r := p.Float("ratio"); math.IsNaN(r) || r < 0 || r > 10 {
			t.Fatalf("%s=%q: ratio %v outside [0, 10]", k, v, r)
		}
	})
}
