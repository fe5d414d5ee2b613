package toolparse

import (
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/sample"
)

func TestNumbersKeepsFirstError(t *testing.T) {
	p := Numbers{Tool: "x"}
	if v := p.Float("1.5"); v != 1.5 || p.Err != nil {
		t.Fatalf("Float(1.5) = %v, %v", v, p.Err)
	}
	p.Float("NaN")
	p.Int("z")
	if p.Err == nil || p.Err.Error() != `x: number "NaN": not finite` {
		t.Fatalf("Err = %v, want the first failure (NaN)", p.Err)
	}
}

func TestMissingAndScanner(t *testing.T) {
	got := Missing([]Required{{Seen: true, Name: "a"}, {Seen: false, Name: "b"}, {Seen: false, Name: "c"}})
	if strings.Join(got, ",") != "b,c" {
		t.Fatalf("Missing = %v, want [b c]", got)
	}
	sc := Scanner(strings.NewReader(strings.Repeat("x", 200000) + "\nend\n"))
	n := 0
	for sc.Scan() {
		n++
	}
	if sc.Err() != nil || n != 2 {
		t.Fatalf("scanned %d lines, err %v; want 2 lines of a long report", n, sc.Err())
	}
}

func TestMetricsAdd(t *testing.T) {
	var ms Metrics
	add := ms.Add
	add("a", 1, "s", sample.Lower, sample.Max)
	add("b", 2, "s", sample.Higher, sample.Sum)
	if len(ms) != 2 || ms[1].Name != "b" || ms[1].Agg != sample.Sum {
		t.Fatalf("Metrics = %+v", ms)
	}
}
