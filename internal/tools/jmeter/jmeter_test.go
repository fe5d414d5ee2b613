package jmeter

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestJMX: the plan JMeter 2.13 ran for testdata/jmeter-2.13-ftp-get.jtl.
func TestJMX(t *testing.T) {
	p := Plan{Server: "127.0.0.1", Port: 2121, User: "anonymous", Password: "isobench", Threads: 1, Loops: 1,
		Requests: []Request{{Remote: "data", Local: "/tmp/jm/out/data"}}}
	got, err := p.JMX()
	if err != nil {
		t.Fatal(err)
	}
	if want := read(t, "plan-get.jmx"); !bytes.Equal(got, want) {
		t.Errorf("plan\n%s\nwant\n%s", got, want)
	}
	up := p
	up.Requests = []Request{{Remote: "up/x", Local: "/src/x", Upload: true}, {Remote: "a&b", Local: "/l/<c>"}}
	b, err := up.JMX()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`<boolProp name="FTPSampler.upload">true</boolProp>`, `testname="PUT 0 up/x"`, `a&amp;b`, `/l/&lt;c&gt;`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("plan lacks %s:\n%s", s, b)
		}
	}
	for _, bad := range []Plan{
		{Server: "", Port: 21, Threads: 1, Loops: 1, Requests: p.Requests},
		{Server: "-x", Port: 21, Threads: 1, Loops: 1, Requests: p.Requests},
		{Server: "h", Port: 0, Threads: 1, Loops: 1, Requests: p.Requests},
		{Server: "h", Port: 21, Threads: 0, Loops: 1, Requests: p.Requests},
		{Server: "h", Port: 21, Threads: 1, Loops: 1},
		{Server: "h", Port: 21, Threads: 1, Loops: 1, Requests: []Request{{Remote: "r"}}},
	} {
		if _, err := bad.JMX(); err == nil {
			t.Errorf("plan %+v accepted", bad)
		}
	}
	a := strings.Join(Args("p.jmx", "r.jtl", "j.log"), " ")
	if !strings.HasPrefix(a, "-n -t p.jmx -l r.jtl -j j.log -Jjmeter.save.saveservice.output_format=csv") {
		t.Errorf("args %s", a)
	}
}

func metrics(t *testing.T, name string) map[string]float64 {
	t.Helper()
	ms, err := Parse(bytes.NewReader(read(t, name)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got := map[string]float64{}
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			t.Error(err)
		}
		got[m.Name] = m.Value
	}
	return got
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

func TestParse(t *testing.T) {
	// one request: 5,000,000 B in 54 ms, latency 20 ms
	got := metrics(t, "jmeter-2.13-ftp-get.jtl")
	want := map[string]float64{"transfer_time": 0.054, "throughput": 5.0 / 0.054, "file_latency_mean": 54, "latency_mean": 20, "requests": 1}
	for k, v := range want {
		if !near(got[k], v) {
			t.Errorf("get: %s = %v, want %v", k, got[k], v)
		}
	}
	// 2 threads x 2 loops x 2 files: from the first start (…722) to the
	// last end (…911 + 55 = …966)
	got = metrics(t, "jmeter-2.13-ftp-t2-l2.jtl")
	secs := float64(1795707205966-1795707205722) / 1000
	want = map[string]float64{"transfer_time": secs, "throughput": 4 * (5e6 + 3e5) / 1e6 / secs, "requests": 8,
		"file_latency_mean": float64(71+87+50+64+28+42+63+55) / 8, "latency_mean": float64(46+45+3+15+3+20+6+3) / 8}
	for k, v := range want {
		if !near(got[k], v) {
			t.Errorf("t2-l2: %s = %v, want %v", k, got[k], v)
		}
	}
}

// TestParseFailures: JMeter exits 0 whatever happened; a failed request
// is the run's failure, in JMeter's and the server's words.
func TestParseFailures(t *testing.T) {
	for file, want := range map[string]string{
		"jmeter-2.13-ftp-550.jtl":     `1 of 2 requests failed; "GET 1 nosuchfile": 550 550 Failed to open file.`,
		"jmeter-2.13-ftp-refused.jtl": `1 of 1 requests failed; "GET 0 data": 000 java.net.ConnectException: Connection refused`,
		"jmeter-2.13-ftp-500oops.jtl": `500 OOPS: cannot change directory:/nonexistent`,
	} {
		_, err := Parse(bytes.NewReader(read(t, file)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", file, err, want)
		}
	}
	for text, want := range map[string]string{
		"": "results file is empty",
		"timeStamp,elapsed,label,responseCode,success,bytes\n":                 "holds no request",
		"timeStamp,elapsed,label\n1,2,x\n":                                     "no success column",
		"timeStamp,elapsed,label,success,bytes\n2026/11/26 15:33,1,x,true,5\n": "not ms since the epoch",
	} {
		if _, err := Parse(strings.NewReader(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", text, err, want)
		}
	}
	if err := CheckOutput(string(read(t, "jmeter-2.13-xstream-1.4.20.stdout"))); err == nil || !strings.Contains(err.Error(), "ForbiddenClassException") {
		t.Errorf("xstream 1.4.20: %v", err)
	}
	if err := CheckOutput("Created the tree successfully using plan.jmx\n... end of run\n"); err != nil {
		t.Errorf("a good run: %v", err)
	}
}

func TestEnv(t *testing.T) {
	env := strings.Join(Env("/m2/xstream-1.4.8.jar", XPP3Jar), "\n")
	for _, s := range []string{"JAVA_CLASSPATH=/m2/xstream-1.4.8.jar:/usr/share/java/xpp3.jar", "--add-opens=java.base/java.util=ALL-UNNAMED"} {
		if !strings.Contains(env, s) {
			t.Errorf("env lacks %s:\n%s", s, env)
		}
	}
}
