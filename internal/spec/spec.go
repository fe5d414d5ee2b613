// Package spec parses the compact "name:key=value,key=value" notation used for
// platforms and workloads on the command line and in study files, and the
// unit-bearing values inside it (sizes, durations).
package spec

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Spec is a name with ordered-independent parameters.
type Spec struct {
	Name   string
	Params map[string]string
}

// Parse reads "name" or "name:k=v,k=v". Keys are case-sensitive snake/kebab
// words; a repeated key or a pair without '=' is an error.
func Parse(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	name, rest, hasParams := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if name == "" {
		return Spec{}, fmt.Errorf("empty name in %q", s)
	}
	if !validWord(name) {
		return Spec{}, fmt.Errorf("invalid name %q (letters, digits, '-', '_' and one optional 'tool:' prefix)", name)
	}
	sp := Spec{Name: name, Params: map[string]string{}}
	if !hasParams {
		return sp, nil
	}
	// "tool:fio:rw=randread" -> name "tool:fio"
	if name == "tool" {
		sub, r2, more := strings.Cut(rest, ":")
		if !validWord(sub) {
			return Spec{}, fmt.Errorf("invalid tool name %q in %q", sub, s)
		}
		sp.Name = "tool:" + sub
		if !more {
			return sp, nil
		}
		rest = r2
	}
	if strings.TrimSpace(rest) == "" {
		return sp, nil
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return Spec{}, fmt.Errorf("parameter %q in %q is not key=value", kv, s)
		}
		if _, dup := sp.Params[k]; dup {
			return Spec{}, fmt.Errorf("parameter %q given twice in %q", k, s)
		}
		sp.Params[k] = strings.TrimSpace(v)
	}
	return sp, nil
}

func validWord(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Canonical renders params sorted by key, "k=v,k=v"; the stable form stored
// with every sample.
func Canonical(params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(params[k])
	}
	return b.String()
}

// String renders the spec back to its notation.
func (s Spec) String() string {
	if len(s.Params) == 0 {
		return s.Name
	}
	return s.Name + ":" + Canonical(s.Params)
}

// ErrTooLarge is wrapped by the parsers' errors for a value beyond what
// they can hold or what can make sense, so callers say "too large" rather
// than misreading an overflow.
var ErrTooLarge = errors.New("too large")

// MaxSize is the largest size ParseSize accepts: 1 PiB ("1024t").
const MaxSize = int64(1) << 50

// ParseSize reads a byte count: "4096", "4k", "4KiB", "1m", "2g", "1GB".
// Suffixes are binary (k = 1024), as sysbench and fio read them. NaN,
// infinities and sizes above MaxSize are errors.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	t = strings.TrimSuffix(t, "ib")
	t = strings.TrimSuffix(t, "b")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) || f < 0 {
		return 0, fmt.Errorf("invalid size %q (want e.g. 4096, 4k, 64m, 1g)", s)
	}
	if f*float64(mult) > float64(MaxSize) { // also ±Inf and ErrRange overflows
		return 0, fmt.Errorf("size %q is %w (at most 1024t)", s, ErrTooLarge)
	}
	return int64(f * float64(mult)), nil
}

// MaxDuration is the longest duration ParseDuration accepts (a year).
const MaxDuration = 366 * 24 * time.Hour

// FormatSize writes a byte count the way options are given: 64m, 2g, 512k.
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		b int64
	}{{"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.b && n%u.b == 0 {
			return strconv.FormatInt(n/u.b, 10) + u.s
		}
	}
	if n >= 1<<20 {
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "m"
	}
	return strconv.FormatInt(n, 10)
}

// ParseDuration reads a Go duration or a plain number of seconds; NaN,
// infinities, negative durations and durations above MaxDuration are errors.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case math.IsNaN(f):
			return 0, fmt.Errorf("invalid duration %q (want e.g. 10s, 500ms, 2m)", s)
		case f < 0:
			return 0, fmt.Errorf("negative duration %q", s)
		case f > MaxDuration.Seconds():
			return 0, fmt.Errorf("duration %q is %w (at most %s)", s, ErrTooLarge, MaxDuration)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil && overflowsDuration(s) {
		return 0, fmt.Errorf("duration %q is %w (at most %s)", s, ErrTooLarge, MaxDuration)
	}
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q (want e.g. 10s, 500ms, 2m)", s)
	}
	if d > MaxDuration {
		return 0, fmt.Errorf("duration %q is %w (at most %s)", s, ErrTooLarge, MaxDuration)
	}
	return d, nil
}

// overflowsDuration says whether time.ParseDuration refused s only
// because it overflows: with every run of digits cut to one digit, it parses.
func overflowsDuration(s string) bool {
	d, err := time.ParseDuration(trimDigits(s))
	return err == nil && d >= 0
}

// trimDigits shortens every run of digits to one digit, so the shape of an
// overflowing duration can be checked without overflowing.
func trimDigits(s string) string {
	var b strings.Builder
	prevDigit := false
	for _, r := range s {
		d := r >= '0' && r <= '9'
		if d && prevDigit {
			continue
		}
		b.WriteRune(r)
		prevDigit = d
	}
	return b.String()
}

// ParseInts reads "1,2,4" into ints, each between min and max.
func ParseInts(s string, min, max int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(f, "-") || err == nil && n > max {
			return nil, fmt.Errorf("count %q is %w (at most %d)", f, ErrTooLarge, max)
		}
		if err != nil || n < min {
			return nil, fmt.Errorf("invalid count %q (want whole numbers from %d to %d, e.g. 1,2,4)", f, min, max)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no counts in %q", s)
	}
	return out, nil
}
