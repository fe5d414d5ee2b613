package iperf2

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func parseFile(t *testing.T, name string) (Report, error) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return ParseReport(f)
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestArgs(t *testing.T) {
	s := Server{Bind: "10.0.3.5", Port: 5201, Window: PaperWindow}.Args()
	if got, want := strings.Join(s, " "), "-s -p 5201 -B 10.0.3.5 -w 64K"; got != want {
		t.Errorf("server args %q, want %q", got, want)
	}
	if got := strings.Join(Server{}.Args(), " "); got != "-s -p 5001" {
		t.Errorf("default server args %q", got)
	}
	c := Client{Server: "10.0.3.5", Port: 5201, Duration: 1500 * time.Millisecond, Window: PaperWindow, Parallel: 2}.Args()
	if got, want := strings.Join(c, " "), "-c 10.0.3.5 -p 5201 -t 2 -y C -w 64K -P 2"; got != want {
		t.Errorf("client args %q, want %q", got, want)
	}
	if got := strings.Join(Client{Server: "h"}.Args(), " "); got != "-c h -p 5001 -t 1 -y C" {
		t.Errorf("default client args %q", got)
	}
	if Window(1000) != "1000" || Window(128<<10) != "128K" {
		t.Errorf("Window: %s %s", Window(1000), Window(128<<10))
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		file    string
		streams int
		sum     bool
		bytes   float64 // over every stream
		bps     float64
		window  string
	}{
		// CSV, the form the adapter asks for: exact bytes and iperf's rate
		{"iperf-2.1.8-w64k-csv.txt", 1, false, 11643519036, 46361070206, ""},
		{"iperf-2.1.8-w64k-P2-csv.txt", 2, false, 7251296316 + 9750446140, 28977207769 + 38926733817, ""},
		// interval lines are left out; each stream's 0.0-2.0 line counts
		{"iperf-2.1.8-w64k-i1-P2-csv.txt", 2, false, 4533911612 + 6662127676, 18015089469 + 26474178240, ""},
		// human reports: KBytes = 1024, Kbits = 1000
		{"iperf-2.1.8-w64k.txt", 1, false, 10.0 * (1 << 30), 42.8e9, "128 KByte (WARNING: requested 64.0 KByte)"},
		{"iperf-2.1.8-w64k-P2.txt", 2, true, 16.7 * (1 << 30), 71.5e9, "128 KByte (WARNING: requested 64.0 KByte)"},
		{"iperf-2.1.8-w64k-e.txt", 1, false, 9.45 * (1 << 30), 40.6e9, "128 KByte (WARNING: requested 64.0 KByte)"},
		{"iperf-2.1.8-w64k-fm.txt", 1, false, 9689 * (1 << 20), 40624e6, "128 KByte (WARNING: requested 0.062 MByte)"},
		{"iperf-2.0-public-default.txt", 1, false, 1.10 * (1 << 30), 942e6, "85.0 KByte (default)"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			rep, err := parseFile(t, c.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Streams) != c.streams || (rep.Sum != nil) != c.sum {
				t.Errorf("%d streams (sum line %v), want %d (%v)", len(rep.Streams), rep.Sum != nil, c.streams, c.sum)
			}
			if !near(rep.Bytes(), c.bytes) || !near(rep.BitsPerSec(), c.bps) {
				t.Errorf("bytes %v bit/s %v, want %v %v", rep.Bytes(), rep.BitsPerSec(), c.bytes, c.bps)
			}
			if rep.Window != c.window {
				t.Errorf("window %q, want %q", rep.Window, c.window)
			}
			f, _ := os.Open(filepath.Join("testdata", c.file))
			defer f.Close()
			ms, err := Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, m := range ms {
				if err := m.Validate(); err != nil {
					t.Error(err)
				}
				got[m.Name] = m.Value
			}
			if !near(got["throughput"], c.bps/1e9) || !near(got["transferred"], c.bytes/1e6) {
				t.Errorf("metrics %v, want throughput %v Gbit/s, transferred %v MB", got, c.bps/1e9, c.bytes/1e6)
			}
		})
	}
}

// TestParseSumLine: under -P the human report's SUM line is the total
// (the streams' own lines are kept too).
func TestParseSumLine(t *testing.T) {
	rep, err := parseFile(t, "iperf-2.1.8-w64k-P2.txt")
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, s := range rep.Streams {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"1", "2"}) || rep.Sum.ID != "SUM" || !near(rep.Sum.Seconds, 2.0002) {
		t.Errorf("streams %v, sum %+v", ids, rep.Sum)
	}
}

func TestParseFailures(t *testing.T) {
	cases := map[string]string{
		// iperf exits 0 here: the message is the error
		"iperf-2.1.8-refused.txt":     "iperf2: tcp connect failed: Connection refused",
		"iperf-2.1.8-refused-csv.txt": "iperf2: tcp connect failed: Connection refused",
		"iperf-2.1.8-server-w64k.txt": "server's output",
	}
	for file, want := range cases {
		_, err := parseFile(t, file)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", file, err, want)
		}
	}
	if _, err := ParseReport(strings.NewReader("")); err != ErrNoResult {
		t.Errorf("empty output: %v", err)
	}
	if _, err := Parse(strings.NewReader("19700101000000,127.0.0.1,1,127.0.0.1,5001,1,0.0-2.0,0,0\n")); err == nil || !strings.Contains(err.Error(), "moved nothing") {
		t.Errorf("a report of nothing: %v", err)
	}
}

// TestParseInterval reads the interval lines of a captured -i 1 -P 2 CSV
// report: each stream's intervals continue one another, and the whole
// run's line starts at 0 again.
func TestParseInterval(t *testing.T) {
	b, err := os.ReadFile("testdata/iperf-2.1.8-w64k-i1-P2-csv.txt")
	if err != nil {
		t.Fatal(err)
	}
	var got []Interval
	for _, l := range strings.Split(string(b), "\n") {
		if iv, ok := ParseInterval(l); ok {
			got = append(got, iv)
		}
	}
	if len(got) != 6 {
		t.Fatalf("%d intervals, want 6: %+v", len(got), got)
	}
	want := Interval{ID: "2", Start: 1, End: 2, Bytes: 3527802880}
	if got[3] != want {
		t.Errorf("fourth line %+v, want %+v", got[3], want)
	}
	if got[4].Start != 0 || got[4].End != 2 {
		t.Errorf("whole run's line %+v: want 0-2", got[4])
	}
	if _, ok := ParseInterval("[  1] 0.0000-2.0102 sec  10.0 GBytes  42.8 Gbits/sec"); ok {
		t.Error("a human report line read as a CSV interval")
	}
}
