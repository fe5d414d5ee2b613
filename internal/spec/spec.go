// Package spec parses the compact "name:key=value,key=value" notation used for
// platforms and workloads on the command line and in study files, and the
// unit-bearing values inside it (sizes, durations).
package spec

import (
	"fmt"
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

// ParseSize reads a byte count: "4096", "4k", "4KiB", "1m", "2g", "1GB".
// Suffixes are binary (k = 1024), as sysbench and fio read them.
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
	if err != nil || f < 0 {
		return 0, fmt.Errorf("invalid size %q (want e.g. 4096, 4k, 64m, 1g)", s)
	}
	return int64(f * float64(mult)), nil
}

// ParseDuration reads a Go duration or a plain number of seconds.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("negative duration %q", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q (want e.g. 10s, 500ms, 2m)", s)
	}
	return d, nil
}

// ParseInts reads "1,2,4" into ints, each at least min.
func ParseInts(s string, min int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < min {
			return nil, fmt.Errorf("invalid count %q (want whole numbers ≥ %d, e.g. 1,2,4)", f, min)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no counts in %q", s)
	}
	return out, nil
}
