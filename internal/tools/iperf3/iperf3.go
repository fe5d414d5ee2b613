// Package iperf3 adapts the external iperf3 tool: argument builders for a
// one-shot server and a client, and a parser for the client's JSON report
// (`-J`).
package iperf3

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/tools/toolparse"
)

// Binary is the executable name looked up in PATH.
const Binary = "iperf3"

// Package is the Debian package providing Binary.
const Package = "iperf3"

// DefaultPort is iperf3's default control port.
const DefaultPort = 5201

// Server runs `iperf3 -s`.
type Server struct {
	Bind    string // address to listen on; empty: all
	Port    int
	OneOff  bool // exit after one test (-1)
	Verbose bool
}

// Args builds the server command line (without the binary name).
func (s Server) Args() []string {
	a := []string{"-s", "-p", strconv.Itoa(port(s.Port))}
	if s.Bind != "" {
		a = append(a, "-B", s.Bind)
	}
	if s.OneOff {
		a = append(a, "-1")
	}
	return a
}

// Client runs `iperf3 -c SERVER -J`.
type Client struct {
	Server   string
	Port     int
	Duration time.Duration // rounded up to whole seconds, at least 1
	Parallel int           // streams (-P)
	Reverse  bool          // server sends (-R)
	UDP      bool
	Bitrate  int64 // bits/s (-b); 0: iperf3's default (unlimited TCP, 1 Mbit/s UDP)
}

// Args builds the client command line.
func (c Client) Args() []string {
	secs := int(math.Ceil(c.Duration.Seconds()))
	if secs < 1 {
		secs = 1
	}
	a := []string{"-c", c.Server, "-p", strconv.Itoa(port(c.Port)), "-t", strconv.Itoa(secs), "-J"}
	if c.Parallel > 1 {
		a = append(a, "-P", strconv.Itoa(c.Parallel))
	}
	if c.Reverse {
		a = append(a, "-R")
	}
	if c.UDP {
		a = append(a, "-u")
	}
	if c.Bitrate > 0 {
		a = append(a, "-b", strconv.FormatInt(c.Bitrate, 10))
	}
	return a
}

func port(p int) int {
	if p <= 0 {
		return DefaultPort
	}
	return p
}

type sum struct {
	Bytes         *float64 `json:"bytes"`
	BitsPerSecond *float64 `json:"bits_per_second"`
	Retransmits   *float64 `json:"retransmits"`
	JitterMs      *float64 `json:"jitter_ms"`
	LostPercent   *float64 `json:"lost_percent"`
}

type report struct {
	Start struct {
		Version   string `json:"version"`
		TestStart struct {
			Protocol string `json:"protocol"`
		} `json:"test_start"`
	} `json:"start"`
	End struct {
		SumSent     *sum `json:"sum_sent"`
		SumReceived *sum `json:"sum_received"`
		Sum         *sum `json:"sum"`
		CPU         *struct {
			HostTotal   *float64 `json:"host_total"`
			RemoteTotal *float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
	} `json:"end"`
	Error string `json:"error"`
}

// ErrNoResult is returned when the report has no end summary.
var ErrNoResult = errors.New("iperf3: no end summary in JSON report")

// Parse reads `iperf3 -c ... -J` output and returns:
//
//   - sent_gbit_per_sec, received_gbit_per_sec (Gbit/s, 10^9 bits/s; sum):
//     end.sum_sent and end.sum_received bits_per_second (for old UDP
//     reports with only end.sum, that is the sent side)
//   - retransmits (count, lower, sum): TCP, when the sender reports them
//   - jitter_ms (ms, max) and lost_percent (%, max): UDP
//   - cpu_host_percent, cpu_remote_percent (%, lower, mean)
//
// A report with an "error" member fails with iperf3's message.
func Parse(r io.Reader) ([]sample.Metric, error) {
	data, err := io.ReadAll(io.LimitReader(r, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("iperf3: reading output: %w", err)
	}
	start := bytes.IndexByte(data, '{')
	if start < 0 {
		return nil, fmt.Errorf("iperf3: no JSON report in output")
	}
	var rep report
	if err := json.NewDecoder(bytes.NewReader(data[start:])).Decode(&rep); err != nil {
		return nil, fmt.Errorf("iperf3: decoding JSON report: %w", err)
	}
	if rep.Error != "" {
		return nil, fmt.Errorf("iperf3: %s", rep.Error)
	}
	var ms toolparse.Metrics
	add := ms.Add
	sent, recv := rep.End.SumSent, rep.End.SumReceived
	if sent == nil && rep.End.Sum != nil {
		sent = rep.End.Sum
	}
	if sent == nil || sent.BitsPerSecond == nil {
		return nil, ErrNoResult
	}
	add("sent_gbit_per_sec", *sent.BitsPerSecond/1e9, "Gbit/s", sample.Higher, sample.Sum)
	if recv != nil && recv.BitsPerSecond != nil {
		add("received_gbit_per_sec", *recv.BitsPerSecond/1e9, "Gbit/s", sample.Higher, sample.Sum)
	}
	if sent.Retransmits != nil {
		add("retransmits", *sent.Retransmits, "count", sample.Lower, sample.Sum)
	}
	udp := rep.End.Sum
	if udp == nil {
		udp = sent
	}
	if udp.JitterMs != nil {
		add("jitter_ms", *udp.JitterMs, "ms", sample.Lower, sample.Max)
	}
	if udp.LostPercent != nil {
		add("lost_percent", *udp.LostPercent, "%", sample.Lower, sample.Max)
	}
	if c := rep.End.CPU; c != nil {
		if c.HostTotal != nil {
			add("cpu_host_percent", *c.HostTotal, "%", sample.Lower, sample.Mean)
		}
		if c.RemoteTotal != nil {
			add("cpu_remote_percent", *c.RemoteTotal, "%", sample.Lower, sample.Mean)
		}
	}
	for _, m := range ms {
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			return nil, fmt.Errorf("iperf3: metric %s is not finite", m.Name)
		}
	}
	return ms, nil
}
