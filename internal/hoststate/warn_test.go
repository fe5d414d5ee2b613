package hoststate

import (
	"strings"
	"testing"
)

func states(key string, vs ...float64) []map[string]float64 {
	out := make([]map[string]float64, len(vs))
	for i, v := range vs {
		out[i] = map[string]float64{key: v}
	}
	return out
}

// The case of issue 29: native's three repetitions of study 004's web
// cell at 8,000 users, each starting with what the ones before left.
func TestWarningsNameTheStateThatGrew(t *testing.T) {
	values := []float64{2.28, 6.73, 43.9}
	ws := Warnings(values, "lower", true, states("tcp_time_wait", 0, 9000, 28000))
	if len(ws) != 2 {
		t.Fatalf("warnings %q, want two", ws)
	}
	if want := "carry-over: repetitions started from different host states: repetition 3 with 28,000 TIME_WAIT sockets (the others 0–9,000)"; ws[0] != want {
		t.Errorf("got  %q\nwant %q", ws[0], want)
	}
	if !strings.HasPrefix(ws[1], "carry-over: the more TIME_WAIT sockets a repetition started with, the slower it ran (0 → 28,000; values 2.28 → 43.9)") {
		t.Errorf("got %q", ws[1])
	}

	// throughput (higher is better) falling as the state grows
	ws = Warnings([]float64{900, 500, 100}, "higher", true, states("tcp_time_wait", 0, 9000, 28000))
	if len(ws) != 2 || !strings.Contains(ws[1], "the slower it ran") {
		t.Errorf("falling throughput: %q", ws)
	}
}

func TestWarningsOnlyWhereStatesDiffer(t *testing.T) {
	// alike states: nothing, however noisy the values
	if ws := Warnings([]float64{1, 5, 9}, "lower", true, states("tcp_time_wait", 100, 900, 600)); ws != nil {
		t.Errorf("states within the floor: %q", ws)
	}
	// 1,500 against 1,000: past the floor but within the ratio
	if ws := Warnings([]float64{1, 5, 9}, "lower", true, states("tcp_time_wait", 12000, 13500, 14000)); ws != nil {
		t.Errorf("states within the ratio: %q", ws)
	}
	// different states, steady values: the state is flagged, no track
	ws := Warnings([]float64{2.0, 2.01, 2.02}, "lower", false, states("tcp_time_wait", 0, 9000, 28000))
	if len(ws) != 1 || !strings.Contains(ws[0], "repetition 3 with 28,000") {
		t.Errorf("steady values: %q", ws)
	}
	// noisy values that do not follow the state: no track
	ws = Warnings([]float64{40, 2, 3}, "lower", true, states("tcp_time_wait", 0, 9000, 28000))
	if len(ws) != 1 {
		t.Errorf("values against the state: %q", ws)
	}
	// a cleaner first repetition among dirty peers is the one named
	ws = Warnings([]float64{2, 2, 2.01}, "lower", false, states("tcp_time_wait", 0, 20000, 20000))
	if len(ws) != 1 || !strings.Contains(ws[0], "repetition 1 with 0 TIME_WAIT sockets (the others 20,000)") {
		t.Errorf("clean first repetition: %q", ws)
	}
	// a repetition without a record leaves the measure unknown
	st := states("tcp_time_wait", 0, 9000, 28000)
	delete(st[1], "tcp_time_wait")
	if ws := Warnings([]float64{2.28, 6.73, 43.9}, "lower", true, st); ws != nil {
		t.Errorf("one repetition unrecorded: %q", ws)
	}
	if ws := Warnings([]float64{2}, "lower", true, states("tcp_time_wait", 28000)); ws != nil {
		t.Errorf("one repetition has no peers: %q", ws)
	}
	if ws := Warnings([]float64{0, 0, 0}, "lower", false, states("tcp_time_wait", 0, 9000, 28000)); ws != nil {
		t.Errorf("values that did not move (failed requests: 0): %q", ws)
	}
}

func TestWarningsOfEachMeasure(t *testing.T) {
	cases := []struct {
		key  string
		vals []float64
		want string // "" for no warning
	}{
		{"leftovers", []float64{0, 0, 2}, "repetition 3 with 2 processes left from earlier repetitions (the others 0)"},
		{"leftovers", []float64{1, 1, 1}, ""},
		{"dirty_kb", []float64{1024, 2048, 512 << 10}, "repetition 3 with 512 MiB dirty pages (the others 1 MiB–2 MiB)"},
		{"dirty_kb", []float64{1024, 2048, 32 << 10}, ""},
		{"cached_kb", []float64{6 << 20, 6 << 20, 9 << 20}, "repetition 3 with 9 GiB page cache (the others 6 GiB)"},
		{"cached_kb", []float64{6 << 20, 7 << 20, 7 << 20}, ""},
		{"load1", []float64{1.2, 1.4, 7.5}, "repetition 3 with 7.50 load average (the others 1.20–1.40)"},
		{"ephemeral_ports", []float64{12, 14, 20000}, "repetition 3 with 20,000 ephemeral ports in use"},
	}
	for _, c := range cases {
		ws := Warnings([]float64{1, 1, 1.01}, "lower", false, states(c.key, c.vals...))
		switch {
		case c.want == "" && ws != nil:
			t.Errorf("%s %v: %q, want none", c.key, c.vals, ws)
		case c.want != "" && (len(ws) != 1 || !strings.Contains(ws[0], c.want)):
			t.Errorf("%s %v: %q, want %q", c.key, c.vals, ws, c.want)
		}
	}
	// several measures make one warning
	st := []map[string]float64{{"leftovers": 0, "tcp_time_wait": 0}, {"leftovers": 3, "tcp_time_wait": 0}, {"leftovers": 0, "tcp_time_wait": 9000}}
	ws := Warnings([]float64{1, 1, 1.01}, "lower", false, st)
	if len(ws) != 1 || !strings.Contains(ws[0], "repetition 3 with 9,000 TIME_WAIT sockets (the others 0); repetition 2 with 3 processes") {
		t.Errorf("two measures: %q", ws)
	}
}

func TestCompare(t *testing.T) {
	native := states("tcp_time_wait", 16000, 14000, 20000)
	docker := states("tcp_time_wait", 10, 200, 40)
	got := Compare("native", native, "docker", docker)
	if got != "the median repetition started with 16,000 TIME_WAIT sockets on native, 40 on docker" {
		t.Errorf("Compare = %q", got)
	}
	if got := Compare("native", docker, "docker", docker); got != "" {
		t.Errorf("alike: %q", got)
	}
	if got := Compare("native", native, "docker", nil); got != "" {
		t.Errorf("unrecorded: %q", got)
	}
}

func TestCount(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 28000: "28,000", 1234567: "1,234,567", -4500: "-4,500", 2.5: "2.5"} {
		if got := count(v); got != want {
			t.Errorf("count(%v) = %q, want %q", v, got, want)
		}
	}
}
