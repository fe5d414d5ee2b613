package sockperf

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
)

func TestParse(t *testing.T) {
	cases := []struct {
		file string
		want map[string]float64
	}{
		{"sockperf-3.7-pp-tcp.txt", map[string]float64{"latency_avg": 29.667, "latency_p50": 31.777, "latency_p99": 54.323, "latency_p999": 180.919,
			"latency_max": 1513.021, "round_trips_per_sec": 26104 / 1.550, "dropped_messages": 0}},
		{"sockperf-3.7-pp-udp-m64.txt", map[string]float64{"latency_avg": 26.536, "latency_p50": 30.112, "latency_p99": 50.495, "latency_p999": 151.230,
			"latency_max": 716.888, "round_trips_per_sec": 10360 / 0.550, "dropped_messages": 0}},
		{"sockperf-3.7-pp-tcp-fullrtt.txt", map[string]float64{"rtt_avg": 8.356, "rtt_p50": 5.792, "rtt_p99": 32.315, "rtt_p999": 121.253,
			"rtt_max": 10734.390, "round_trips_per_sec": 65800 / 0.552, "dropped_messages": 0}},
		{"sockperf-3.10-pp-tcp-m1000.txt", map[string]float64{"latency_avg": 24.571, "latency_p50": 26.743, "latency_p99": 33.390, "latency_p999": 35.910,
			"latency_max": 103294.331, "round_trips_per_sec": 2429473 / 119.549, "dropped_messages": 0}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ms, err := Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]sample.Metric{}
			for _, m := range ms {
				if err := m.Validate(); err != nil {
					t.Error(err)
				}
				got[m.Name] = m
			}
			if len(got) != len(c.want) || len(ms) != len(got) {
				t.Errorf("got %v, want %v", ms, c.want)
			}
			for name, v := range c.want {
				m, ok := got[name]
				if !ok {
					t.Errorf("missing %s", name)
					continue
				}
				if math.Abs(m.Value-v) > 1e-9*math.Max(1, v) {
					t.Errorf("%s = %v, want %v", name, m.Value, v)
				}
				if strings.HasPrefix(name, "latency_") || strings.HasPrefix(name, "rtt_") {
					if m.Unit != "us" || m.Better != sample.Lower {
						t.Errorf("%s: unit %s better %s", name, m.Unit, m.Better)
					}
				}
			}
		})
	}
}

func TestParseNoServer(t *testing.T) {
	b, err := os.ReadFile("testdata/sockperf-3.7-noserver.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse(bytes.NewReader(b))
	if !errors.Is(err, ErrNoResult) || !strings.Contains(err.Error(), "server") {
		t.Errorf("err = %v", err)
	}
	if _, err := Parse(strings.NewReader("")); !errors.Is(err, ErrNoResult) {
		t.Errorf("empty: err = %v", err)
	}
}

func TestArgs(t *testing.T) {
	p := PingPong{Server: "127.0.0.1", TCP: true, Duration: 2500 * time.Millisecond, MsgSize: 64}
	if got, want := p.Args(), []string{"ping-pong", "-i", "127.0.0.1", "-p", "11111", "-t", "3", "--full-rtt", "--tcp", "-m", "64"}; !reflect.DeepEqual(got, want) {
		t.Errorf("client %q, want %q", got, want)
	}
	s := Server{Bind: "127.0.0.1", Port: 12000}
	if got, want := s.Args(), []string{"server", "-i", "127.0.0.1", "-p", "12000"}; !reflect.DeepEqual(got, want) {
		t.Errorf("server %q, want %q", got, want)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ms, err := Parse(bytes.NewReader(in))
		if err != nil {
			return
		}
		for _, m := range ms {
			if err := m.Validate(); err != nil {
				t.Error(err)
			}
		}
	})
}
