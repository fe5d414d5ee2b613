package postal

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/sample"
)

// Expected values are the means of the captured lines after the first
// (partial) minute, worked out by hand.
func TestParse(t *testing.T) {
	cases := []struct {
		file      string
		intervals int
		want      map[string]float64
	}{
		// One complete minute (15:54) after the partial first one.
		{"postal-0.75-t1.txt", 2, map[string]float64{"messages_per_min": 1039, "data_kib_per_min": 2520, "connections_per_min": 1039,
			"errors_per_min": 0, "errors": 0}},
		// Two complete minutes: (2165+1451)/2, ...
		{"postal-0.75-t2-r3000.txt", 3, map[string]float64{"messages_per_min": 1808, "data_kib_per_min": 4381.5, "connections_per_min": 1807.5,
			"errors_per_min": 0, "errors": 0}},
		// The server rejects half the recipients: errors count, over all lines 16+24.
		{"postal-0.75-t2-rejects.txt", 2, map[string]float64{"messages_per_min": 19, "data_kib_per_min": 51, "connections_per_min": 43,
			"errors_per_min": 24, "errors": 40}},
		{"postal-public-t1-c10.txt", 3, map[string]float64{"messages_per_min": 1297, "data_kib_per_min": 7076, "connections_per_min": 230,
			"errors_per_min": 0, "errors": 0}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := Parse(f)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(res.Intervals) != c.intervals || res.Intervals[0].Complete {
				t.Errorf("intervals %+v: want %d, the first incomplete", res.Intervals, c.intervals)
			}
			for _, iv := range res.Intervals[1:] {
				if !iv.Complete {
					t.Errorf("interval %s not complete", iv.Time)
				}
			}
			ms := res.Metrics()
			got := map[string]sample.Metric{}
			for _, m := range ms {
				if err := m.Validate(); err != nil {
					t.Error(err)
				}
				got[m.Name] = m
			}
			if len(got) != len(c.want) || len(ms) != len(got) {
				t.Errorf("got %d metrics %v, want %d", len(ms), ms, len(c.want))
			}
			for name, v := range c.want {
				m, ok := got[name]
				if !ok {
					t.Errorf("metric %s missing", name)
					continue
				}
				if math.Abs(m.Value-v) > 1e-9*math.Max(1, math.Abs(v)) {
					t.Errorf("%s = %v, want %v", name, m.Value, v)
				}
				wantBetter := sample.Higher
				if strings.HasPrefix(name, "errors") {
					wantBetter = sample.Lower
				}
				if m.Better != wantBetter || m.Agg != sample.Sum {
					t.Errorf("%s: better %s agg %s", name, m.Better, m.Agg)
				}
			}
		})
	}
}

func TestParseCompleteMinutes(t *testing.T) {
	const head = "time,messages,data(K),errors,connections,SSL connections\n"
	// Across midnight; then a gap (no line for 00:01) and a line printed
	// twice in one minute: neither is a whole minute.
	res, err := Parse(strings.NewReader(head + "23:58,5,1,0,5,0\n23:59,60,10,0,60,0\n00:00,62,11,1,62,0\n00:02,10,1,0,10,0\n00:02,3,0,0,3,0\n"))
	if err != nil {
		t.Fatal(err)
	}
	var complete []string
	for _, iv := range res.Intervals {
		if iv.Complete {
			complete = append(complete, iv.Time)
		}
	}
	if want := []string{"23:59", "00:00"}; !reflect.DeepEqual(complete, want) {
		t.Errorf("complete minutes %q, want %q", complete, want)
	}
	if m := res.Metrics(); m[0].Name != "messages_per_min" || m[0].Value != 61 || m[4].Name != "errors" || m[4].Value != 1 {
		t.Errorf("metrics %v", m)
	}
	if msgs, kb, errs, conns := res.Totals(); msgs != 140 || kb != 23 || errs != 1 || conns != 140 {
		t.Errorf("totals %d %d %d %d", msgs, kb, errs, conns)
	}
}

func TestParseRejects(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	t1 := read("postal-0.75-t1.txt")
	cases := map[string]struct {
		in, mention string
		noResult    bool
	}{
		"empty": {"", "no report header", true},
		// Nothing listening: every connection an error, no message.
		"closed port": {read("postal-0.75-closedport.txt"), "no message went through (28 errors in 3 report lines)", true},
		// The same with postal's stderr after its stdout: the complaint is kept.
		"closed port with stderr": {read("postal-0.75-closedport.txt") + read("postal-0.75-closedport.stderr"), "Can't connect to 127.0.0.1 port 12599.", true},
		"usage":                   {"Usage: postal [-m maximum-message-size] [-M minimum-message-size] [-t threads]\n", "Usage: postal", true},
		// Stopped before the second minute boundary.
		"one line":       {t1[:strings.Index(t1, "15:54")], "no complete minute", true},
		"two runs mixed": {t1 + t1, "second header", false},
		"bad time":       {strings.Replace(t1, "15:54", "15:64", 1), "out of range", false},
		"huge count":     {strings.Replace(t1, ",1039,2520", ","+strings.Repeat("9", 30)+",2520", 1), "count", false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Parse(strings.NewReader(c.in))
			if err == nil {
				t.Fatalf("no error; result %+v", res)
			}
			if !strings.Contains(err.Error(), c.mention) {
				t.Errorf("err = %v, want it to mention %q", err, c.mention)
			}
			if errors.Is(err, ErrNoResult) != c.noResult {
				t.Errorf("err = %v: ErrNoResult is for missing numbers, not malformed ones", err)
			}
			if res.Intervals != nil {
				t.Errorf("result on error: %+v", res)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	got, err := Options{Server: "127.0.0.1", Port: 2525, UserList: "/tmp/users", SenderList: "/tmp/senders", Threads: 8,
		MaxMessageKB: 10, MinMessageKB: 1, MessagesPerConnection: -1, MessagesPerMinute: 6000, LMTP: true}.Args()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-t", "8", "-m", "10", "-M", "1", "-c", "-1", "-r", "6000", "-L", "-f", "/tmp/senders", "[127.0.0.1]2525", "/tmp/users"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
	got, err = Options{Server: "mail.example.test", Port: 25, UserList: "u", Threads: 1, HeadersOnly: true}.Args()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"-t", "1", "-m", "0", "mail.example.test", "u"}; !reflect.DeepEqual(got, want) {
		t.Errorf("headers only %q, want %q", got, want)
	}
	ok := Options{Server: "127.0.0.1", UserList: "u", Threads: 1}
	for name, bad := range map[string]func(o *Options){
		"no server":          func(o *Options) { o.Server = "" },
		"server with port":   func(o *Options) { o.Server = "[127.0.0.1]25" },
		"server like a flag": func(o *Options) { o.Server = "-t" },
		"ipv6":               func(o *Options) { o.Server = "::1" },
		"bad port":           func(o *Options) { o.Port = 65536 },
		"no user list":       func(o *Options) { o.UserList = "" },
		"list like a flag":   func(o *Options) { o.SenderList = "-x" },
		"no threads":         func(o *Options) { o.Threads = 0 },
		"negative size":      func(o *Options) { o.MaxMessageKB = -1 },
		"min above max":      func(o *Options) { o.MaxMessageKB, o.MinMessageKB = 2, 3 },
		"headers and size":   func(o *Options) { o.HeadersOnly, o.MaxMessageKB = true, 5 },
		"per connection -2":  func(o *Options) { o.MessagesPerConnection = -2 },
		"negative rate":      func(o *Options) { o.MessagesPerMinute = -1 },
	} {
		o := ok
		bad(&o)
		if a, err := o.Args(); err == nil {
			t.Errorf("%s: no error, args %q", name, a)
		}
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
		res, err := Parse(bytes.NewReader(in))
		if err != nil {
			return
		}
		if msgs, _, _, _ := res.Totals(); msgs <= 0 {
			t.Errorf("result without messages: %+v", res)
		}
		for _, m := range res.Metrics() {
			if err := m.Validate(); err != nil {
				t.Error(err)
			}
			if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				t.Errorf("non-finite %s", m.Name)
			}
		}
	})
}

// TestCountLog counts postal.log's messages (a real log: postal -t 2 -m 4
// -M 4 -c 1 against a local SMTP sink, its first 30 lines) and leaves out
// a line still being written.
func TestCountLog(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "postal-0.75-t2-postal.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := CountLog(bytes.NewReader(b)); err != nil || n != 30 {
		t.Errorf("count %d, %v; want 30", n, err)
	}
	if n, err := CountLog(bytes.NewReader(append(b, []byte("c27898ab5f38bb7e")...))); err != nil || n != 30 {
		t.Errorf("with a partial last line: %d, %v", n, err)
	}
	if n, err := CountLog(strings.NewReader("")); err != nil || n != 0 {
		t.Errorf("empty: %d, %v", n, err)
	}
	if _, err := CountLog(strings.NewReader("time,messages\n")); err == nil {
		t.Error("a line of another form was counted")
	}
	for file, want := range map[string]string{
		"postal-0.75-closedport.stderr": "Can't connect to 127.0.0.1 port 12599.",
		"postal-0.75-t2-rejects.stderr": "Server error:554 5.7.1 <user2@bad.example.test>: Recipient address rejected: Access denied",
	} {
		b, _ := os.ReadFile(filepath.Join("testdata", file))
		if got := Complaint(string(b)); got != want {
			t.Errorf("%s: complaint %q, want %q", file, got, want)
		}
	}
	if c := Complaint("time,messages,data(K),errors,connections,SSL connections\n15:53,622,1491,0,623,0\n"); c != "" {
		t.Errorf("a clean report complains %q", c)
	}
}
