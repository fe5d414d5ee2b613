// Package jmeter adapts Apache JMeter's FTP sampler (Debian packages jmeter
// and jmeter-ftp, JMeter 2.13), the client study 004's paper monitored its
// FTP server with: a test plan isobench writes (FTP requests over a thread
// group), the command line of a non-GUI run, and a parser for the run's
// results file (JTL) in CSV form.
//
// The JTL has one line per request: its start (ms since the epoch), the
// time it took (elapsed), its label, JMeter's response code and message,
// thread, success flag, bytes received and, in 2.13, the latency (time to
// the first response) and the connect time. Parse reads its header to find
// the columns, so the fields JMeter is told to save may vary.
package jmeter

import (
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/sample"
)

// Binary is the executable name looked up in PATH.
const Binary = "jmeter"

// Packages are the Debian packages a JMeter FTP run needs: JMeter and its
// FTP sampler.
var Packages = []string{"jmeter", "jmeter-ftp"}

// Request is one FTP request of a plan.
type Request struct {
	// Remote is the file's path on the server.
	Remote string
	// Local is where a download is written (the FTP sampler's local file),
	// or the file an upload sends.
	Local  string
	Upload bool
}

// Plan is an FTP test plan: Threads threads each run the requests in order,
// Loops times, against one server.
type Plan struct {
	Server   string // IP address or host name
	Port     int
	User     string
	Password string
	Threads  int // at least 1
	Loops    int // at least 1
	Requests []Request
}

var errPlan = errors.New("jmeter: plan")

// Check refuses a plan JMeter could not run as meant.
func (p Plan) Check() error {
	switch {
	case p.Server == "" || strings.ContainsAny(p.Server, " \t/<>&\"'") || strings.HasPrefix(p.Server, "-"):
		return fmt.Errorf("%w: server %q: want an address", errPlan, p.Server)
	case p.Port < 1 || p.Port > 65535:
		return fmt.Errorf("%w: port %d out of range", errPlan, p.Port)
	case p.Threads < 1 || p.Loops < 1:
		return fmt.Errorf("%w: threads %d and loops %d must be at least 1", errPlan, p.Threads, p.Loops)
	case len(p.Requests) == 0:
		return fmt.Errorf("%w: no requests", errPlan)
	}
	for _, r := range p.Requests {
		if r.Remote == "" || r.Local == "" {
			return fmt.Errorf("%w: a request needs a remote and a local file (%q, %q)", errPlan, r.Remote, r.Local)
		}
	}
	return nil
}

// prop is one JMeter property element.
type prop struct {
	XMLName xml.Name
	Name    string `xml:"name,attr"`
	Value   string `xml:",chardata"`
}

func str(name, v string) prop {
	return prop{XMLName: xml.Name{Local: "stringProp"}, Name: name, Value: v}
}
func boolp(name string, v bool) prop {
	return prop{XMLName: xml.Name{Local: "boolProp"}, Name: name, Value: strconv.FormatBool(v)}
}
func long(name string, v int64) prop {
	return prop{XMLName: xml.Name{Local: "longProp"}, Name: name, Value: strconv.FormatInt(v, 10)}
}

// element is a test element or an elementProp, with its properties and
// nested elements; a hashTree follows each test element.
type element struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Props   []any
}

func (e element) MarshalXML(enc *xml.Encoder, start xml.StartElement) error {
	start.Name = e.XMLName
	start.Attr = e.Attrs
	if err := enc.EncodeToken(start); err != nil {
		return err
	}
	for _, p := range e.Props {
		if err := enc.Encode(p); err != nil {
			return err
		}
	}
	return enc.EncodeToken(start.End())
}

func attrs(kv ...string) []xml.Attr {
	var a []xml.Attr
	for i := 0; i+1 < len(kv); i += 2 {
		a = append(a, xml.Attr{Name: xml.Name{Local: kv[i]}, Value: kv[i+1]})
	}
	return a
}

func testElement(tag, gui, class, name string, props ...any) element {
	return element{XMLName: xml.Name{Local: tag}, Attrs: attrs("guiclass", gui, "testclass", class, "testname", name, "enabled", "true"), Props: props}
}

func hashTree(children ...any) element {
	return element{XMLName: xml.Name{Local: "hashTree"}, Props: children}
}

// JMX renders the plan as a JMeter 2.13 test plan (.jmx): a thread group
// of Threads threads, Loops loops, started at once, stopping the thread at
// a failed sample; one FTP request per Request, in binary mode, a download
// written to its local file and not kept in the result.
func (p Plan) JMX() ([]byte, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	var samplers []any
	for i, r := range p.Requests {
		verb := "GET"
		if r.Upload {
			verb = "PUT"
		}
		samplers = append(samplers,
			testElement("FTPSampler", "FtpTestSamplerGui", "FTPSampler", fmt.Sprintf("%s %d %s", verb, i, r.Remote),
				str("FTPSampler.server", p.Server),
				str("FTPSampler.port", strconv.Itoa(p.Port)),
				str("FTPSampler.filename", r.Remote),
				str("FTPSampler.localfilename", r.Local),
				str("FTPSampler.inputdata", ""),
				boolp("FTPSampler.binarymode", true),
				boolp("FTPSampler.saveresponse", false),
				boolp("FTPSampler.upload", r.Upload),
				str("ConfigTestElement.username", p.User),
				str("ConfigTestElement.password", p.Password),
			),
			hashTree())
	}
	loop := element{XMLName: xml.Name{Local: "elementProp"},
		Attrs: attrs("name", "ThreadGroup.main_controller", "elementType", "LoopController", "guiclass", "LoopControlPanel", "testclass", "LoopController", "testname", "Loop Controller", "enabled", "true"),
		Props: []any{boolp("LoopController.continue_forever", false), str("LoopController.loops", strconv.Itoa(p.Loops))}}
	group := testElement("ThreadGroup", "ThreadGroupGui", "ThreadGroup", "isobench clients",
		str("ThreadGroup.on_sample_error", "stopthread"),
		loop,
		str("ThreadGroup.num_threads", strconv.Itoa(p.Threads)),
		str("ThreadGroup.ramp_time", "0"),
		long("ThreadGroup.start_time", 0),
		long("ThreadGroup.end_time", 0),
		boolp("ThreadGroup.scheduler", false),
		str("ThreadGroup.duration", ""),
		str("ThreadGroup.delay", ""),
	)
	vars := element{XMLName: xml.Name{Local: "elementProp"},
		Attrs: attrs("name", "TestPlan.user_defined_variables", "elementType", "Arguments", "guiclass", "ArgumentsPanel", "testclass", "Arguments", "testname", "User Defined Variables", "enabled", "true"),
		Props: []any{element{XMLName: xml.Name{Local: "collectionProp"}, Attrs: attrs("name", "Arguments.arguments")}}}
	plan := testElement("TestPlan", "TestPlanGui", "TestPlan", "isobench FTP",
		str("TestPlan.comments", "written by isobench"),
		boolp("TestPlan.functional_mode", false),
		boolp("TestPlan.serialize_threadgroups", false),
		vars,
		str("TestPlan.user_define_classpath", ""),
	)
	root := element{XMLName: xml.Name{Local: "jmeterTestPlan"}, Attrs: attrs("version", "1.2", "properties", "2.8", "jmeter", "2.13"),
		Props: []any{hashTree(plan, hashTree(group, hashTree(samplers...)))}}
	out, err := xml.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("jmeter: writing the plan: %w", err)
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

// Args builds the non-GUI run of plan writing the results to jtl (CSV,
// with a header naming the fields) and JMeter's log to log.
func Args(plan, jtl, log string) []string {
	return []string{"-n", "-t", plan, "-l", jtl, "-j", log,
		"-Jjmeter.save.saveservice.output_format=csv",
		"-Jjmeter.save.saveservice.print_field_names=true",
		"-Jjmeter.save.saveservice.latency=true",
		"-Jjmeter.save.saveservice.connect_time=true",
		"-Jjmeter.save.saveservice.bytes=true",
		"-Jjmeter.save.saveservice.successful=true",
		"-Jjmeter.save.saveservice.response_message=true",
	}
}

// Sample is one request of a results file.
type Sample struct {
	Start   int64   // ms since the epoch
	Elapsed float64 // ms
	Latency float64 // ms to the first response; -1 when not saved
	Connect float64 // ms to connect; -1 when not saved
	Label   string
	Code    string
	Message string
	Success bool
	Bytes   float64
}

// Results are a run's samples, in the file's order.
type Results struct {
	Samples []Sample
}

// ParseJTL reads a CSV results file with its header line.
func ParseJTL(r io.Reader) (Results, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	head, err := cr.Read()
	if err == io.EOF {
		return Results{}, errors.New("jmeter: the results file is empty (did JMeter run the plan?)")
	}
	if err != nil {
		return Results{}, fmt.Errorf("jmeter: results header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"timeStamp", "elapsed", "label", "success", "bytes"} {
		if _, ok := col[need]; !ok {
			return Results{}, fmt.Errorf("jmeter: the results file has no %s column (header %q): save it as CSV with field names", need, strings.Join(head, ","))
		}
	}
	get := func(rec []string, name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return rec[i]
		}
		return ""
	}
	num := func(rec []string, name string) (float64, error) {
		if _, ok := col[name]; !ok {
			return -1, nil
		}
		v, err := strconv.ParseFloat(get(rec, name), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) {
			return 0, fmt.Errorf("jmeter: %s %q is not a count", name, get(rec, name))
		}
		return v, nil
	}
	var res Results
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Results{}, fmt.Errorf("jmeter: results line %d: %w", line, err)
		}
		var s Sample
		start, err := strconv.ParseInt(get(rec, "timeStamp"), 10, 64)
		if err != nil {
			return Results{}, fmt.Errorf("jmeter: results line %d: timeStamp %q is not ms since the epoch (set jmeter.save.saveservice.timestamp_format=ms)", line, get(rec, "timeStamp"))
		}
		s.Start = start
		var errs []error
		var e error
		s.Elapsed, e = num(rec, "elapsed")
		errs = append(errs, e)
		s.Latency, e = num(rec, "Latency")
		errs = append(errs, e)
		s.Connect, e = num(rec, "Connect")
		errs = append(errs, e)
		s.Bytes, e = num(rec, "bytes")
		errs = append(errs, e)
		if err := errors.Join(errs...); err != nil {
			return Results{}, fmt.Errorf("results line %d: %w", line, err)
		}
		s.Label, s.Code, s.Message = get(rec, "label"), get(rec, "responseCode"), get(rec, "responseMessage")
		s.Success = get(rec, "success") == "true"
		res.Samples = append(res.Samples, s)
	}
	if len(res.Samples) == 0 {
		return Results{}, errors.New("jmeter: the results file holds no request")
	}
	return res, nil
}

// Failed returns the first failed request as an error in JMeter's words,
// or nil.
func (r Results) Failed() error {
	bad := 0
	var first Sample
	for _, s := range r.Samples {
		if !s.Success {
			if bad == 0 {
				first = s
			}
			bad++
		}
	}
	if bad == 0 {
		return nil
	}
	return fmt.Errorf("jmeter: %d of %d requests failed; %q: %s %s", bad, len(r.Samples), first.Label, first.Code, strings.TrimSpace(first.Message))
}

// Parse reads a results file and returns the run's metrics, or the first
// failed request as the error:
//
//   - transfer_time (s): from the first request's start to the last one's
//     end
//   - throughput (MB/s): the bytes received over that time
//   - file_latency_mean (ms): the mean time per request (JMeter's elapsed)
//   - latency_mean (ms): the mean time to the first response (JMeter's
//     latency), when saved
//   - requests (count)
func Parse(r io.Reader) ([]sample.Metric, error) {
	res, err := ParseJTL(r)
	if err != nil {
		return nil, err
	}
	if err := res.Failed(); err != nil {
		return nil, err
	}
	first, last := res.Samples[0].Start, res.Samples[0].Start
	var bytes, elapsed, latency float64
	haveLatency := true
	for _, s := range res.Samples {
		first = min(first, s.Start)
		if end := s.Start + int64(math.Ceil(s.Elapsed)); end > last {
			last = end
		}
		bytes += s.Bytes
		elapsed += s.Elapsed
		if s.Latency < 0 {
			haveLatency = false
		}
		latency += s.Latency
	}
	n := float64(len(res.Samples))
	secs := float64(last-first) / 1000
	if !(secs > 0) {
		return nil, fmt.Errorf("jmeter: the requests took no measurable time (%d ms)", last-first)
	}
	ms := []sample.Metric{
		{Name: "transfer_time", Value: secs, Unit: "s", Better: sample.Lower, Agg: sample.Max},
		{Name: "throughput", Value: bytes / 1e6 / secs, Unit: "MB/s", Better: sample.Higher, Agg: sample.Sum},
		{Name: "file_latency_mean", Value: elapsed / n, Unit: "ms", Better: sample.Lower, Agg: sample.Mean},
	}
	if haveLatency {
		ms = append(ms, sample.Metric{Name: "latency_mean", Value: latency / n, Unit: "ms", Better: sample.Lower, Agg: sample.Mean})
	}
	return append(ms, sample.Metric{Name: "requests", Value: n, Unit: "count", Better: sample.Higher, Agg: sample.Sum}), nil
}

// HostPort joins a plan's server and port (for messages).
func (p Plan) HostPort() string { return net.JoinHostPort(p.Server, strconv.Itoa(p.Port)) }

// Debian 12's JMeter 2.13 cannot load any plan with Debian's xstream
// 1.4.20, whose security framework refuses JMeter's own classes
// (ForbiddenClassException: org.apache.jmeter.save.ScriptWrapper; JMeter
// prints it, writes no results and exits 0). The xstream JMeter 2.13 was
// released with, 1.4.8, first on the class path loads it; on Java 17 it
// needs the JDK's packages it reflects on opened.

// XStreamArtifact is the Maven artifact JMeter 2.13 shipped with.
const XStreamArtifact = "com.thoughtworks.xstream:xstream:1.4.8"

// XPP3Jar is Debian's XML pull parser xstream 1.4.8 reads with (package
// libxpp3-java, a dependency of jmeter).
const XPP3Jar = "/usr/share/java/xpp3.jar"

// opens are the JDK packages xstream 1.4.8 reflects on.
var opens = []string{"java.base/java.util", "java.base/java.lang", "java.base/java.lang.reflect", "java.base/java.text", "java.base/java.io", "java.desktop/java.awt.font"}

// Env is the environment Debian's jmeter launcher (java-wrappers) needs to
// load plans: xstreamJar (XStreamArtifact) and xpp3Jar first on the class
// path, the packages xstream reflects on opened.
func Env(xstreamJar, xpp3Jar string) []string {
	var args []string
	for _, o := range opens {
		args = append(args, "--add-opens="+o+"=ALL-UNNAMED")
	}
	return []string{"JAVA_ARGS=" + strings.Join(args, " "), "JAVA_CLASSPATH=" + xstreamJar + ":" + xpp3Jar}
}

// CheckOutput reads JMeter's standard output: a plan it could not load or
// run is reported there while it exits 0.
func CheckOutput(stdout string) error {
	for _, line := range strings.Split(stdout, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "Error in NonGUIDriver") || strings.HasPrefix(line, "An error occurred") {
			return fmt.Errorf("jmeter: %s", line)
		}
	}
	return nil
}
