// Package sockperf adapts the external sockperf tool (Debian ships it;
// netperf is not in Debian 12's main archive): argument builders for its
// server and its ping-pong client, and a parser for the ping-pong report.
//
// Ping-pong is the request/response latency test (the netperf TCP_RR
// analogue): the client sends one message, waits for the echo, repeats.
package sockperf

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
const Binary = "sockperf"

// Package is the Debian package providing Binary.
const Package = "sockperf"

// DefaultPort is sockperf's default port.
const DefaultPort = 11111

// Server runs `sockperf server`.
type Server struct {
	Bind string // address to listen on (sockperf needs one; 0.0.0.0 for all)
	Port int
	TCP  bool
}

// Args builds the server command line (without the binary name).
func (s Server) Args() []string {
	bind := s.Bind
	if bind == "" {
		bind = "0.0.0.0"
	}
	a := []string{"server", "-i", bind, "-p", strconv.Itoa(port(s.Port))}
	if s.TCP {
		a = append(a, "--tcp")
	}
	return a
}

// PingPong runs `sockperf ping-pong` against a server.
type PingPong struct {
	Server   string
	Port     int
	TCP      bool
	Duration time.Duration // whole seconds, rounded up, at least 1
	MsgSize  int           // bytes; 0: sockperf's default (14)
}

// Args builds the client command line. It asks for full round-trip times
// (--full-rtt), so Parse reports rtt_* metrics.
func (p PingPong) Args() []string {
	secs := int(math.Ceil(p.Duration.Seconds()))
	if secs < 1 {
		secs = 1
	}
	a := []string{"ping-pong", "-i", p.Server, "-p", strconv.Itoa(port(p.Port)), "-t", strconv.Itoa(secs), "--full-rtt"}
	if p.TCP {
		a = append(a, "--tcp")
	}
	if p.MsgSize > 0 {
		a = append(a, "-m", strconv.Itoa(p.MsgSize))
	}
	return a
}

func port(p int) int {
	if p <= 0 {
		return DefaultPort
	}
	return p
}

var (
	reANSI       = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")
	num          = `([0-9]+(?:\.[0-9]+)?)`
	reValid      = regexp.MustCompile(`\[Valid Duration\] RunTime=` + num + ` sec; SentMessages=([0-9]+); ReceivedMessages=([0-9]+)`)
	reSummary    = regexp.MustCompile(`Summary: (Latency|Round trip) is ` + num + ` usec`)
	rePercentile = regexp.MustCompile(`---> percentile ` + num + ` =\s*` + num)
	reMax        = regexp.MustCompile(`---> <MAX> observation =\s*` + num)
	reDropped    = regexp.MustCompile(`# dropped messages = ([0-9]+)`)
)

// ErrNoResult is returned when the output has no latency summary (for
// example "No messages were received from the server").
var ErrNoResult = errors.New("sockperf: no ping-pong summary in output")

// Parse reads `sockperf ping-pong` output. Times are in µs. sockperf
// reports half the round trip unless run with --full-rtt; Parse names the
// metrics after what was measured: rtt_* for full round trips ("Round trip
// is"), latency_* for sockperf's half round trip ("Latency is"):
//
//   - <kind>_avg (mean), <kind>_p50 (mean), <kind>_p99, <kind>_p999 and
//     <kind>_max (max)
//   - round_trips_per_sec (sum): received messages over the valid duration
//   - dropped_messages (count, lower, sum)
//
// If the server is only reached for the first server entry, only that
// entry is read ("Printing statistics for Server No: 0").
func Parse(r io.Reader) ([]sample.Metric, error) {
	sc := toolparse.Scanner(r)
	var (
		kind                    string
		avg, maxObs             float64
		haveMax                 bool
		runTime, received       float64
		haveValid, haveDropped  bool
		dropped                 float64
		pct                     = map[string]float64{}
		noServer, secondSection bool
	)
	for sc.Scan() {
		line := reANSI.ReplaceAllString(sc.Text(), "")
		if strings.Contains(line, "Printing statistics for Server No:") && !strings.Contains(line, "No: 0") {
			secondSection = true
		}
		if secondSection {
			continue
		}
		if strings.Contains(line, "No messages were received") {
			noServer = true
		}
		if m := reValid.FindStringSubmatch(line); m != nil {
			runTime, _ = strconv.ParseFloat(m[1], 64)
			received, _ = strconv.ParseFloat(m[3], 64)
			haveValid = true
		} else if m := reSummary.FindStringSubmatch(line); m != nil {
			kind = "latency"
			if m[1] == "Round trip" {
				kind = "rtt"
			}
			avg, _ = strconv.ParseFloat(m[2], 64)
		} else if m := rePercentile.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			pct[m[1]] = v
		} else if m := reMax.FindStringSubmatch(line); m != nil {
			maxObs, _ = strconv.ParseFloat(m[1], 64)
			haveMax = true
		} else if m := reDropped.FindStringSubmatch(line); m != nil {
			dropped, _ = strconv.ParseFloat(m[1], 64)
			haveDropped = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sockperf: reading output: %w", err)
	}
	if kind == "" {
		if noServer {
			return nil, fmt.Errorf("%w: no messages were received from the server (is it running?)", ErrNoResult)
		}
		return nil, ErrNoResult
	}
	var ms toolparse.Metrics
	add := ms.Add
	add(kind+"_avg", avg, "us", sample.Lower, sample.Mean)
	for _, p := range []struct{ key, name string }{{"50.000", "p50"}, {"99.000", "p99"}, {"99.900", "p999"}} {
		if v, ok := pct[p.key]; ok {
			agg := sample.Max
			if p.name == "p50" {
				agg = sample.Mean
			}
			add(kind+"_"+p.name, v, "us", sample.Lower, agg)
		}
	}
	if haveMax {
		add(kind+"_max", maxObs, "us", sample.Lower, sample.Max)
	}
	if haveValid && runTime > 0 {
		add("round_trips_per_sec", received/runTime, "1/s", sample.Higher, sample.Sum)
	}
	if haveDropped {
		add("dropped_messages", dropped, "count", sample.Lower, sample.Sum)
	}
	for _, m := range ms {
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			return nil, fmt.Errorf("sockperf: metric %s is not finite", m.Name)
		}
	}
	return ms, nil
}
