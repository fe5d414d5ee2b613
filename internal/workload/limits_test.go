package workload

import (
	"strings"
	"testing"
)

// Overflowing values say "too large" and NaN or infinities are refused
// (issue 12, defect 4: an overflow wrapped negative and was reported as
// "below its minimum"; NaN passed every comparison).
func TestImpossibleParamValues(t *testing.T) {
	def := testDef
	def.Params = append(append([]Param{}, testDef.Params...), Param{Name: "ratio", Kind: Float, Default: "0.5", Min: 0})
	cases := map[string]string{
		"threads": "99999999999999999999",
		"size":    "99999999999999999999t",
		"ratio":   "1e400",
	}
	for k, v := range cases {
		_, err := def.Resolve(map[string]string{k: v})
		if err == nil || !strings.Contains(err.Error(), "too large") {
			t.Errorf("%s=%s: %v, want too large", k, v, err)
		}
	}
	for _, kv := range [][2]string{{"duration", "1e300"}, {"ratio", "inf"}, {"size", "1e300"}} {
		_, err := def.Resolve(map[string]string{kv[0]: kv[1]})
		if err == nil || !strings.Contains(err.Error(), "too large") {
			t.Errorf("%s=%s: %v, want too large", kv[0], kv[1], err)
		}
	}
	for _, kv := range [][2]string{{"ratio", "nan"}, {"ratio", "-inf"}, {"size", "nan"}, {"duration", "nan"}, {"threads", "-99999999999999999999"}} {
		_, err := def.Resolve(map[string]string{kv[0]: kv[1]})
		if err == nil || strings.Contains(err.Error(), "too large") || strings.Contains(err.Error(), "minimum") {
			t.Errorf("%s=%s: %v, want a parse error", kv[0], kv[1], err)
		}
	}
}
