// Package iperf2 adapts iperf 2 (Debian package iperf, binary iperf), the
// iperf study 000's paper chose over iperf3 because one server takes many
// clients: argument builders for a server and a client, and a parser for
// the client's report.
//
// The client is asked for CSV reports (-y C): one line per stream and
// interval, "timestamp,src,srcport,dst,dstport,id,start-end,bytes,bits/s",
// the stream's whole-run line last (iperf 2.0 adds a SUM line with id -1
// under -P; 2.1 does not). Parse also reads the human report
// ("[  1] 0.0000-2.0102 sec  10.0 GBytes  42.8 Gbits/sec", with a [SUM]
// line under -P) of 2.0 and 2.1, the enhanced one (-e) included.
//
// iperf 2 exits 0 when it cannot connect ("tcp connect failed: Connection
// refused"): Parse turns that message into the error, never a number.
package iperf2

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/tools/toolparse"
)

// Binary is the executable name looked up in PATH.
const Binary = "iperf"

// Package is the Debian package providing Binary.
const Package = "iperf"

// DefaultPort is iperf 2's default port.
const DefaultPort = 5001

// PaperWindow is the TCP window study 000's paper names: iperf's default
// of its time, 64 KByte (section 7.2.4).
const PaperWindow = 64 << 10

// Server runs `iperf -s`: it serves clients until it is stopped.
type Server struct {
	Bind   string // address to listen on; empty: all
	Port   int    // 0: DefaultPort
	Window int64  // TCP window (-w) in bytes; 0: the kernel's
}

// Args builds the server command line (without the binary name).
func (s Server) Args() []string {
	a := []string{"-s", "-p", strconv.Itoa(port(s.Port))}
	if s.Bind != "" {
		a = append(a, "-B", s.Bind)
	}
	if s.Window > 0 {
		a = append(a, "-w", Window(s.Window))
	}
	return a
}

// Client runs `iperf -c SERVER -y C`.
type Client struct {
	Server   string
	Port     int           // 0: DefaultPort
	Duration time.Duration // rounded up to whole seconds, at least 1
	Window   int64         // TCP window (-w) in bytes; 0: the kernel's
	Parallel int           // streams (-P)
	Interval int           // seconds between interval reports (-i); 0: none
}

// Args builds the client command line.
func (c Client) Args() []string {
	secs := int(math.Ceil(c.Duration.Seconds()))
	if secs < 1 {
		secs = 1
	}
	a := []string{"-c", c.Server, "-p", strconv.Itoa(port(c.Port)), "-t", strconv.Itoa(secs), "-y", "C"}
	if c.Window > 0 {
		a = append(a, "-w", Window(c.Window))
	}
	if c.Parallel > 1 {
		a = append(a, "-P", strconv.Itoa(c.Parallel))
	}
	if c.Interval > 0 {
		a = append(a, "-i", strconv.Itoa(c.Interval))
	}
	return a
}

// Window renders a window size as iperf takes it: "64K" for whole KiB
// (iperf's K is 1024), else bytes.
func Window(b int64) string {
	if b%1024 == 0 {
		return strconv.FormatInt(b/1024, 10) + "K"
	}
	return strconv.FormatInt(b, 10)
}

func port(p int) int {
	if p <= 0 {
		return DefaultPort
	}
	return p
}

// ErrNoResult is returned when the text holds no client report.
var ErrNoResult = errors.New("iperf2: no client report in output")

// Stream is one stream's whole-run total.
type Stream struct {
	ID      string  // iperf's stream id ("SUM" for a sum line)
	Seconds float64 // length of the interval
	Bytes   float64 // bytes transferred
	BitsPS  float64 // bits per second as iperf computed it
}

// Report is a client's report: every stream's total and, when iperf
// printed one, the sum line.
type Report struct {
	Streams []Stream
	Sum     *Stream
	// Window is the window the kernel gave ("128 KByte (WARNING:
	// requested 64.0 KByte)"), from the human report's header.
	Window string
}

// Bytes is the bytes transferred over every stream.
func (r Report) Bytes() float64 { return r.total(func(s Stream) float64 { return s.Bytes }) }

// BitsPerSec is the throughput of every stream together: the sum line's
// when there is one, else the sum of the streams' rates.
func (r Report) BitsPerSec() float64 { return r.total(func(s Stream) float64 { return s.BitsPS }) }

// total is the sum line's value when iperf printed one, else the sum over
// the streams.
func (r Report) total(of func(Stream) float64) float64 {
	if r.Sum != nil {
		return of(*r.Sum)
	}
	var t float64
	for _, s := range r.Streams {
		t += of(s)
	}
	return t
}

var (
	reHuman  = regexp.MustCompile(`^\[\s*(\d+|SUM)\]\s+([0-9.]+)\s*-\s*([0-9.]+)\s+sec\s+([0-9.]+)\s+([KMGT]?)Bytes\s+([0-9.]+)\s+([KMGT]?)bits/sec`)
	reWindow = regexp.MustCompile(`^TCP window size:\s*(.+)$`)
	reFailed = regexp.MustCompile(`(?i)(connect failed|failed|error|unknown host|usage:)`)
)

var (
	bytesMult = map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
	bitsMult  = map[string]float64{"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
)

// ParseReport reads a client's output (CSV or human) into its streams'
// totals. A connection failure, a server's output or text without a
// report is an error that says so.
func ParseReport(r io.Reader) (Report, error) {
	var (
		rep     Report
		order   []string
		last    = map[string]Stream{} // per id, the last line starting at 0
		failure string
		server  bool
	)
	keep := func(s Stream, start float64) {
		if start != 0 {
			return // an interval report (-i), not the whole run
		}
		if s.ID == "SUM" {
			c := s
			rep.Sum = &c
			return
		}
		if _, ok := last[s.ID]; !ok {
			order = append(order, s.ID)
		}
		last[s.ID] = s
	}
	sc := toolparse.Scanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "Server listening"):
			server = true
		case reWindow.MatchString(line):
			rep.Window = strings.TrimSpace(reWindow.FindStringSubmatch(line)[1])
		case reHuman.MatchString(line):
			m := reHuman.FindStringSubmatch(line)
			start, end := atof(m[2]), atof(m[3])
			keep(Stream{ID: m[1], Seconds: end - start, Bytes: atof(m[4]) * bytesMult[m[5]], BitsPS: atof(m[6]) * bitsMult[m[7]]}, start)
		default:
			if s, start, ok := csvLine(line); ok {
				keep(s, start)
			} else if failure == "" && reFailed.MatchString(line) && !strings.HasPrefix(line, "[") {
				failure = line
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Report{}, fmt.Errorf("iperf2: reading output: %w", err)
	}
	if server {
		return Report{}, errors.New("iperf2: this is a server's output (Server listening), not a client's report")
	}
	if failure != "" {
		return Report{}, fmt.Errorf("iperf2: %s", failure)
	}
	for _, id := range order {
		rep.Streams = append(rep.Streams, last[id])
	}
	if len(rep.Streams) == 0 && rep.Sum == nil {
		return Report{}, ErrNoResult
	}
	return rep, nil
}

// Interval is one line of a client's -y C report: stream ID's bytes over
// [Start, End] seconds since it connected. With -i the intervals come
// first, each as it ends; the whole run's line (from 0 to the run's end)
// comes last and reads as an Interval too: a caller counting work as it
// arrives takes only the line that continues the stream's last (Start is
// the End before), and SUM lines (iperf 2.0 under -P) not at all.
type Interval struct {
	ID                string
	Start, End, Bytes float64
}

// ParseInterval reads one -y C line; ok is false for any other line.
func ParseInterval(line string) (Interval, bool) {
	s, start, ok := csvLine(strings.TrimSpace(line))
	if !ok {
		return Interval{}, false
	}
	return Interval{ID: s.ID, Start: start, End: start + s.Seconds, Bytes: s.Bytes}, true
}

// csvLine reads one -y C line: the stream (id -1 is a sum) and where its
// interval starts.
func csvLine(line string) (Stream, float64, bool) {
	f := strings.Split(line, ",")
	if len(f) < 9 {
		return Stream{}, 0, false
	}
	id := f[5]
	if _, err := strconv.Atoi(id); err != nil {
		return Stream{}, 0, false
	}
	if id == "-1" {
		id = "SUM"
	}
	a, b, ok := strings.Cut(f[6], "-")
	if !ok {
		return Stream{}, 0, false
	}
	start, err1 := strconv.ParseFloat(a, 64)
	end, err2 := strconv.ParseFloat(b, 64)
	bytes, err3 := strconv.ParseFloat(f[7], 64)
	bps, err4 := strconv.ParseFloat(f[8], 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Stream{}, 0, false
	}
	return Stream{ID: id, Seconds: end - start, Bytes: bytes, BitsPS: bps}, start, true
}

func atof(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// Parse reads a client's report and returns its metrics, over all of its
// streams: throughput (Gbit/s, as iperf computed it; summed over
// instances) and transferred (MB, 10^6 bytes). A report that moved no
// bytes is an error.
func Parse(r io.Reader) ([]sample.Metric, error) {
	rep, err := ParseReport(r)
	if err != nil {
		return nil, err
	}
	return rep.Metrics()
}

// Metrics are a parsed report's metrics (Parse's).
func (rep Report) Metrics() ([]sample.Metric, error) {
	bps, bytes := rep.BitsPerSec(), rep.Bytes()
	if !(bytes > 0) || !(bps > 0) || math.IsInf(bps, 0) || math.IsInf(bytes, 0) {
		return nil, fmt.Errorf("iperf2: the report moved nothing (%v bytes, %v bit/s)", bytes, bps)
	}
	return []sample.Metric{
		{Name: "throughput", Value: bps / 1e9, Unit: "Gbit/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "transferred", Value: bytes / 1e6, Unit: "MB", Better: sample.Higher, Agg: sample.Sum},
	}, nil
}
