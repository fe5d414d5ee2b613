package iperf3

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/sample"
)

// Expected values computed independently with python's json module.
func TestParse(t *testing.T) {
	cases := []struct {
		file string
		want map[string]float64
	}{
		{"iperf3-3.12-tcp.json", map[string]float64{"sent_gbit_per_sec": 22.75111677907378, "received_gbit_per_sec": 22.683889132530485,
			"retransmits": 0, "cpu_host_percent": 12.110602191775378, "cpu_remote_percent": 86.2759122935483}},
		{"iperf3-3.12-tcp-P2.json", map[string]float64{"sent_gbit_per_sec": 22.772975606244223, "received_gbit_per_sec": 22.659841612446595,
			"retransmits": 1, "cpu_host_percent": 17.259656814273857, "cpu_remote_percent": 81.04846846522854}},
		{"iperf3-3.12-tcp-R.json", map[string]float64{"sent_gbit_per_sec": 22.19811798901131, "received_gbit_per_sec": 22.175291585295493,
			"retransmits": 1, "cpu_host_percent": 84.5400799444697, "cpu_remote_percent": 11.41326184864677}},
		{"iperf3-3.12-udp.json", map[string]float64{"sent_gbit_per_sec": 0.10004796435243929, "received_gbit_per_sec": 0.10002707770005363,
			"jitter_ms": 0.006448117437006445, "lost_percent": 0, "cpu_host_percent": 2.328168391032433, "cpu_remote_percent": 0.2209516503450122}},
		{"iperf3-3.6-tcp-n10k.json", map[string]float64{"sent_gbit_per_sec": 5.692125332048193, "received_gbit_per_sec": 0,
			"retransmits": 0, "cpu_host_percent": 39.728609934149304, "cpu_remote_percent": 0.11841352936599141}},
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
				t.Errorf("got %v, want the %d metrics %v", ms, len(c.want), c.want)
			}
			for name, v := range c.want {
				m, ok := got[name]
				if !ok {
					t.Errorf("missing %s", name)
					continue
				}
				if math.Abs(m.Value-v) > 1e-12*math.Max(1, math.Abs(v)) {
					t.Errorf("%s = %v, want %v", name, m.Value, v)
				}
			}
			if m := got["sent_gbit_per_sec"]; m.Unit != "Gbit/s" || m.Better != sample.Higher || m.Agg != sample.Sum {
				t.Errorf("sent metric shape %+v", m)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	f, err := os.ReadFile("testdata/iperf3-3.12-refused.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(bytes.NewReader(f)); err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("refused: err = %v", err)
	}
	for _, in := range []string{"", "iperf3: error - unable to connect", `{"end": {}}`, `{"end": `} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("Parse(%q) succeeded", in)
		}
	}
}

func TestArgs(t *testing.T) {
	c := Client{Server: "10.0.0.2", Duration: 1500 * time.Millisecond, Parallel: 4, Reverse: true}
	if got, want := c.Args(), []string{"-c", "10.0.0.2", "-p", "5201", "-t", "2", "-J", "-P", "4", "-R"}; !reflect.DeepEqual(got, want) {
		t.Errorf("client %q, want %q", got, want)
	}
	c = Client{Server: "::1", Port: 5299, UDP: true, Bitrate: 100e6, Duration: 0}
	if got, want := c.Args(), []string{"-c", "::1", "-p", "5299", "-t", "1", "-J", "-u", "-b", "100000000"}; !reflect.DeepEqual(got, want) {
		t.Errorf("udp client %q, want %q", got, want)
	}
	s := Server{Bind: "127.0.0.1", Port: 5299, OneOff: true}
	if got, want := s.Args(), []string{"-s", "-p", "5299", "-B", "127.0.0.1", "-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("server %q, want %q", got, want)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
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
