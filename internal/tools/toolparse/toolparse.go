// Package toolparse holds what the tool adapters' report parsers share: a
// line scanner sized for long report lines, number conversion that keeps
// the first error, the list of required lines a report lacked, and a
// metric list built one metric at a time; and, for their command lines,
// durations in whole seconds.
package toolparse

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/isobench/isobench/internal/sample"
)

// Scanner scans r by lines, allowing lines of up to 1 MiB.
func Scanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	return sc
}

// Numbers converts a report's numbers, keeping the first failure in Err
// (a failed conversion returns what strconv returned) so that a parser can
// convert every field of a line and check once at the end.
type Numbers struct {
	Tool string // prefix of the errors, such as "wrk"
	Err  error
}

// Float converts a finite decimal number.
func (p *Numbers) Float(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err == nil && (math.IsInf(v, 0) || math.IsNaN(v)) {
		err = errors.New("not finite")
	}
	if err != nil && p.Err == nil {
		p.Err = fmt.Errorf("%s: number %q: %w", p.Tool, s, err)
	}
	return v
}

// Int converts a decimal count.
func (p *Numbers) Int(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil && p.Err == nil {
		p.Err = fmt.Errorf("%s: count %q: %w", p.Tool, s, err)
	}
	return v
}

// Required is a line (or field) a report must have, and whether the
// parser saw it.
type Required struct {
	Seen bool
	Name string
}

// Missing names, in order, the required lines that were not seen.
func Missing(rs []Required) []string {
	var missing []string
	for _, r := range rs {
		if !r.Seen {
			missing = append(missing, r.Name)
		}
	}
	return missing
}

// Metrics is a list of metrics built with Add.
type Metrics []sample.Metric

// Add appends one metric.
func (ms *Metrics) Add(name string, v float64, unit string, better sample.Better, agg sample.Agg) {
	*ms = append(*ms, sample.Metric{Name: name, Value: v, Unit: unit, Better: better, Agg: agg})
}
