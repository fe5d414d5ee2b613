package hoststate

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kind starts the warnings of this package ("carry-over: ..."), the
// noise-warning kind the report groups them under; BaselineKind starts
// the warning on a cell compared with a baseline that carried over.
const (
	Kind         = "carry-over"
	BaselineKind = "baseline carry-over"
)

// Measure is one recorded quantity a repetition can inherit from the ones
// before, with the size of a difference that matters.
type Measure struct {
	Key  string // tag name after TagPrefix
	What string // as the warnings name it
	// Floor: starting states closer than this are alike.
	Floor float64
	// Ratio: and so are those within this factor of each other (1: no
	// relative condition).
	Ratio float64
	kib   bool // a KiB amount, printed in bytes
}

// Measures are the quantities the warnings compare, in the order they
// are named.
var Measures = []Measure{
	{Key: "tcp_time_wait", What: "TIME_WAIT sockets", Floor: 1000, Ratio: 1.5},
	{Key: "tcp_established", What: "established TCP connections", Floor: 100, Ratio: 1.5},
	{Key: "tcp_close_wait", What: "CLOSE_WAIT sockets", Floor: 100, Ratio: 1.5},
	{Key: "tcp_closing", What: "closing TCP sockets (FIN_WAIT, CLOSING, LAST_ACK)", Floor: 1000, Ratio: 1.5},
	{Key: "tcp_syn", What: "half-open TCP connections", Floor: 100, Ratio: 1.5},
	{Key: "tcp_orphans", What: "orphaned TCP sockets", Floor: 100, Ratio: 1.5},
	{Key: "tcp_mem_pages", What: "pages of TCP buffers", Floor: 4096, Ratio: 1.5},
	{Key: "ephemeral_ports", What: "ephemeral ports in use", Floor: 1000, Ratio: 1.5},
	{Key: "leftovers", What: "processes left from earlier repetitions", Floor: 0, Ratio: 1},
	{Key: "dirty_kb", What: "dirty pages", Floor: 64 << 10, Ratio: 1.5, kib: true},
	{Key: "writeback_kb", What: "pages under writeback", Floor: 64 << 10, Ratio: 1.5, kib: true},
	{Key: "cached_kb", What: "page cache", Floor: 2 << 20, Ratio: 1, kib: true},
	{Key: "load1", What: "load average", Floor: 1, Ratio: 1.5},
}

// Values reads the measures of a repetition from its tags (TagPrefix
// keys); measures not recorded are absent.
func Values(tags map[string]string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range Measures {
		if s, ok := tags[TagPrefix+m.Key]; ok {
			if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
				out[m.Key] = v
			}
		}
	}
	return out
}

// column returns the measure over the repetitions, or false when some
// repetition did not record it.
func column(states []map[string]float64, key string) ([]float64, bool) {
	if len(states) == 0 {
		return nil, false
	}
	out := make([]float64, len(states))
	for i, s := range states {
		v, ok := s[key]
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// differ reports whether a and b are starting states far enough apart to
// matter for m.
func (m Measure) differ(a, b float64) bool {
	lo, hi := min(a, b), max(a, b)
	if hi-lo <= m.Floor {
		return false
	}
	return m.Ratio <= 1 || hi > m.Ratio*lo
}

func (m Measure) format(v float64) string {
	switch {
	case m.kib:
		return bytesOf(v * 1024)
	case m.Key == "load1":
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return count(v)
}

// Warnings compares the states the repetitions of one cell started from
// (states[i] as Values read them, in the order of values, the cell's
// per-repetition values) and returns its carry-over warnings, each
// starting with Kind:
//
//   - the repetitions started from different states: for each measure,
//     the repetition farthest from its peers when it is beyond every
//     peer by the measure's floor and ratio (one warning for them all);
//   - the values follow a state: the cell is noisy (as the caller judges
//     it, e.g. its coefficient of variation above the noise threshold)
//     and its values get worse in the order one differing measure grows
//     (Kendall's tau of at least 0.6 between the measure and how bad each
//     value is; better is "lower" or "higher"), naming that measure.
//
// Repetitions without a recorded state make a measure unknown for the
// cell; with fewer than two repetitions there are no peers, and a cell
// whose values are all equal has nothing to explain.
func Warnings(values []float64, better string, noisy bool, states []map[string]float64) []string {
	if len(values) < 2 || len(states) != len(values) || slices.Min(values) == slices.Max(values) {
		return nil // no peers, or nothing moved
	}
	var diffs []string
	type track struct {
		m      Measure
		tau    float64
		lo, hi int // repetitions with the least and most of it
	}
	var best *track
	for _, m := range Measures {
		col, ok := column(states, m.Key)
		if !ok {
			continue
		}
		if d := outlier(m, col); d != "" {
			diffs = append(diffs, d)
		}
		lo, hi := argmin(col), argmax(col)
		if !noisy || !m.differ(col[lo], col[hi]) {
			continue
		}
		bad := badness(values, better)
		if bad == nil {
			continue
		}
		if tau := kendall(col, bad); tau >= 0.6 && (best == nil || tau > best.tau) {
			best = &track{m, tau, lo, hi}
		}
	}
	var out []string
	if len(diffs) > 0 {
		out = append(out, fmt.Sprintf("%s: repetitions started from different host states: %s", Kind, strings.Join(diffs, "; ")))
	}
	if best != nil {
		out = append(out, fmt.Sprintf("%s: the more %s a repetition started with, the slower it ran (%s → %s; values %.4g → %.4g): the state the host was in, not the platform, moves this cell",
			Kind, best.m.What, best.m.format(states[best.lo][best.m.Key]), best.m.format(states[best.hi][best.m.Key]), values[best.lo], values[best.hi]))
	}
	return out
}

// outlier describes the repetition of col farthest from the median of its
// peers, when it differs from every one of them; "" when none does.
func outlier(m Measure, col []float64) string {
	far, dist := -1, 0.0
	for i, v := range col {
		peers := slices.Delete(slices.Clone(col), i, i+1)
		differs := true
		for _, p := range peers {
			if !m.differ(v, p) {
				differs = false
				break
			}
		}
		if !differs {
			continue
		}
		if d := math.Abs(v - median(peers)); far < 0 || d > dist {
			far, dist = i, d
		}
	}
	if far < 0 {
		return ""
	}
	peers := slices.Delete(slices.Clone(col), far, far+1)
	lo, hi := slices.Min(peers), slices.Max(peers)
	others := m.format(lo)
	if hi != lo {
		others += "–" + m.format(hi)
	}
	return fmt.Sprintf("repetition %d with %s %s (the others %s)", far+1, m.format(col[far]), m.What, others)
}

// Compare describes how the states two cells' repetitions started from
// differ (base's and other's, as Values read them): the measures whose
// medians differ by their floor and ratio, or "" when none does or the
// states were not recorded on both sides.
func Compare(baseLabel string, base []map[string]float64, otherLabel string, other []map[string]float64) string {
	var diffs []string
	for _, m := range Measures {
		a, ok1 := column(base, m.Key)
		b, ok2 := column(other, m.Key)
		if !ok1 || !ok2 {
			continue
		}
		ma, mb := median(a), median(b)
		if m.differ(ma, mb) {
			diffs = append(diffs, fmt.Sprintf("%s %s on %s, %s on %s", m.format(ma), m.What, baseLabel, m.format(mb), otherLabel))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	return "the median repetition started with " + strings.Join(diffs, "; ")
}

// badness orients values so that larger is worse; nil when better is
// unknown.
func badness(values []float64, better string) []float64 {
	out := slices.Clone(values)
	switch better {
	case "lower":
	case "higher":
		for i := range out {
			out[i] = -out[i]
		}
	default:
		return nil
	}
	return out
}

// kendall is Kendall's tau-a of x and y (pairs tied in either count as
// neither concordant nor discordant).
func kendall(x, y []float64) float64 {
	n := len(x)
	if n < 2 || len(y) != n {
		return 0
	}
	var s float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			s += sign(x[j]-x[i]) * sign(y[j]-y[i])
		}
	}
	return s / float64(n*(n-1)/2)
}

func sign(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

func argmin(xs []float64) int {
	k := 0
	for i, x := range xs {
		if x < xs[k] {
			k = i
		}
	}
	return k
}

func argmax(xs []float64) int {
	k := 0
	for i, x := range xs {
		if x > xs[k] {
			k = i
		}
	}
	return k
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// count prints a whole number with thousands separators (28,000).
func count(v float64) string {
	if v != math.Trunc(v) || math.Abs(v) >= 1e15 {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	s := strconv.FormatInt(int64(math.Abs(v)), 10)
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// bytesOf prints an amount of bytes in binary units (1.5 GiB).
func bytesOf(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.3g %s", v, units[i])
}
