// Package postal adapts postal (Debian package postal, Russell Coker's SMTP
// load generator): an argument builder for a run against one SMTP server,
// and a parser for its per-minute report.
//
// postal sends random messages to random users of a list, as fast as the
// server takes them (or at a given rate), and never exits by itself: run it
// for the wanted time and stop it with SIGTERM (Debian's postal 0.75 does
// not exit promptly on SIGINT). It prints a header line and then, at every
// wall-clock minute boundary, one line for the minute that ended:
//
//	time,messages,data(K),errors,connections,SSL connections
//	15:53,622,1491,0,623,0
//	15:54,1039,2520,0,1039,0
//
// The first line covers only the part of a minute from the start to the
// first boundary, so Parse leaves it out of the rates; a run needs more
// than two minutes to have a complete one.
package postal

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/tools/toolparse"
)

// Binary is the executable name looked up in PATH.
const Binary = "postal"

// Package is the Debian package providing Binary.
const Package = "postal"

// DefaultPort is the SMTP port postal uses when none is given.
const DefaultPort = 25

// StopSignal is the signal that ends a postal run (see the package
// comment). A run stopped this way prints no partial last line.
const StopSignal = syscall.SIGTERM

// Options of one postal run.
type Options struct {
	Server string // SMTP server address (name or IPv4; postal does no MX lookup)
	Port   int    // 0: 25
	// UserList is a file of recipient addresses, one a line; use fully
	// qualified addresses in a reserved domain (user1@example.test).
	UserList   string
	SenderList string // file of sender addresses (-f); "": the user list
	Threads    int    // concurrent connections (-t), at least 1
	// MaxMessageKB is the largest message body in KiB (-m); each body is
	// a random size up to it (from MinMessageKB). 0: postal's default
	// (10); HeadersOnly sends bodiless messages (-m 0).
	MaxMessageKB int
	MinMessageKB int // smallest body in KiB (-M); 0: none
	HeadersOnly  bool
	// MessagesPerConnection (-c): 0: postal's default (1); -1: unlimited;
	// N > 1: a random number from 1 to N per connection.
	MessagesPerConnection int
	MessagesPerMinute     int  // rate limit (-r); 0: unlimited
	LMTP                  bool // speak LMTP instead of SMTP (-L)
}

var reServer = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]*$`)

// Args validates o and builds the postal command line (without the binary
// name). A port other than 25 is given in postal's "[host]port" form.
func (o Options) Args() ([]string, error) {
	if !reServer.MatchString(o.Server) {
		return nil, fmt.Errorf("postal: server %q: want a host name or IPv4 address", o.Server)
	}
	if o.Port < 0 || o.Port > 65535 {
		return nil, fmt.Errorf("postal: port %d out of range", o.Port)
	}
	if o.UserList == "" || strings.HasPrefix(o.UserList, "-") || strings.HasPrefix(o.SenderList, "-") {
		return nil, fmt.Errorf("postal: a user list file is required (and file names must not start with '-')")
	}
	if o.Threads < 1 {
		return nil, fmt.Errorf("postal: threads must be at least 1, got %d", o.Threads)
	}
	if o.MaxMessageKB < 0 || o.MinMessageKB < 0 || o.MessagesPerMinute < 0 || o.MessagesPerConnection < -1 {
		return nil, fmt.Errorf("postal: sizes and rate must not be negative (messages per connection: -1 for unlimited)")
	}
	if o.HeadersOnly && (o.MaxMessageKB > 0 || o.MinMessageKB > 0) {
		return nil, fmt.Errorf("postal: headers only and a message size exclude each other")
	}
	if o.MaxMessageKB > 0 && o.MinMessageKB > o.MaxMessageKB {
		return nil, fmt.Errorf("postal: minimum message size %d KiB above the maximum %d KiB", o.MinMessageKB, o.MaxMessageKB)
	}
	a := []string{"-t", strconv.Itoa(o.Threads)}
	switch {
	case o.HeadersOnly:
		a = append(a, "-m", "0")
	case o.MaxMessageKB > 0:
		a = append(a, "-m", strconv.Itoa(o.MaxMessageKB))
	}
	if o.MinMessageKB > 0 {
		a = append(a, "-M", strconv.Itoa(o.MinMessageKB))
	}
	if o.MessagesPerConnection != 0 {
		a = append(a, "-c", strconv.Itoa(o.MessagesPerConnection))
	}
	if o.MessagesPerMinute > 0 {
		a = append(a, "-r", strconv.Itoa(o.MessagesPerMinute))
	}
	if o.LMTP {
		a = append(a, "-L")
	}
	if o.SenderList != "" {
		a = append(a, "-f", o.SenderList)
	}
	server := o.Server
	if o.Port != 0 && o.Port != DefaultPort {
		server = "[" + o.Server + "]" + strconv.Itoa(o.Port)
	}
	return append(a, server, o.UserList), nil
}

// Interval is one line of postal's report: what happened in the minute
// that ended at Time (HH:MM, the local time postal printed).
type Interval struct {
	Time           string
	Messages       int64
	DataKB         int64 // KiB of message data sent
	Errors         int64
	Connections    int64
	SSLConnections int64
	Complete       bool // a whole minute: not the first line, and one minute after the line before
}

// Result is one postal report.
type Result struct {
	Intervals []Interval
}

// Totals sums every interval, complete or not.
func (r Result) Totals() (messages, dataKB, errs, connections int64) {
	for _, iv := range r.Intervals {
		messages += iv.Messages
		dataKB += iv.DataKB
		errs += iv.Errors
		connections += iv.Connections
	}
	return
}

// rates averages the complete intervals.
func (r Result) rates() (msgs, kb, errs, conns float64, n int) {
	for _, iv := range r.Intervals {
		if !iv.Complete {
			continue
		}
		msgs += float64(iv.Messages)
		kb += float64(iv.DataKB)
		errs += float64(iv.Errors)
		conns += float64(iv.Connections)
		n++
	}
	if n > 0 {
		f := float64(n)
		msgs, kb, errs, conns = msgs/f, kb/f, errs/f, conns/f
	}
	return
}

// Metrics returns r as samples:
//
//   - messages_per_min (messages/min), data_kib_per_min (KiB/min) and
//     connections_per_min (connections/min): the mean over the complete
//     minutes; higher is better, summed over instances
//   - errors_per_min (errors/min, the same minutes) and errors (count, every
//     line including the first): lower is better, summed
func (r Result) Metrics() []sample.Metric {
	msgs, kb, errs, conns, _ := r.rates()
	_, _, total, _ := r.Totals()
	return []sample.Metric{
		{Name: "messages_per_min", Value: msgs, Unit: "messages/min", Better: sample.Higher, Agg: sample.Sum},
		{Name: "data_kib_per_min", Value: kb, Unit: "KiB/min", Better: sample.Higher, Agg: sample.Sum},
		{Name: "connections_per_min", Value: conns, Unit: "connections/min", Better: sample.Higher, Agg: sample.Sum},
		{Name: "errors_per_min", Value: errs, Unit: "errors/min", Better: sample.Lower, Agg: sample.Sum},
		{Name: "errors", Value: float64(total), Unit: "count", Better: sample.Lower, Agg: sample.Sum},
	}
}

// ErrNoResult is returned when the text holds no complete minute, or no
// message was delivered in any of them (the error then carries postal's
// own complaint, such as "Can't connect to 127.0.0.1 port 25.", and the
// error count).
var ErrNoResult = errors.New("postal: no result in output")

var (
	reHeader = regexp.MustCompile(`^time,messages,data\(K\),errors,connections(,SSL connections)?,?$`)
	reLine   = regexp.MustCompile(`^([0-9]{2}):([0-9]{2}),([0-9]+),([0-9]+),([0-9]+),([0-9]+)(?:,([0-9]+))?$`)
)

// Parse reads postal's output (stdout, and stderr if mixed in). A line is a
// complete minute when it is not the first after the header and its time
// is one minute after the line before; the rates are the mean over those.
// Parse fails when there is no complete minute, or when no message went
// through in the whole run.
func Parse(r io.Reader) (Result, error) {
	var (
		res        Result
		header     bool
		prevMinute = -1
		other      string
		firstErr   error
	)
	atoi := func(s string) int64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("postal: count %q: %w", s, err)
		}
		return v
	}
	sc := toolparse.Scanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if reHeader.MatchString(line) {
			if header {
				return Result{}, fmt.Errorf("postal: a second header line: output of two runs mixed?")
			}
			header = true
			continue
		}
		m := reLine.FindStringSubmatch(line)
		if m == nil || !header {
			if other == "" {
				other = line
			}
			continue
		}
		hh, mm := atoi(m[1]), atoi(m[2])
		if hh > 23 || mm > 59 {
			return Result{}, fmt.Errorf("postal: time %s:%s out of range", m[1], m[2])
		}
		minute := int(hh*60 + mm)
		iv := Interval{Time: m[1] + ":" + m[2], Messages: atoi(m[3]), DataKB: atoi(m[4]), Errors: atoi(m[5]), Connections: atoi(m[6])}
		if m[7] != "" {
			iv.SSLConnections = atoi(m[7])
		}
		iv.Complete = prevMinute >= 0 && minute == (prevMinute+1)%(24*60)
		prevMinute = minute
		res.Intervals = append(res.Intervals, iv)
	}
	if err := sc.Err(); err != nil {
		return Result{}, fmt.Errorf("postal: reading output: %w", err)
	}
	if firstErr != nil {
		return Result{}, firstErr
	}
	complaint := ""
	if other != "" {
		complaint = ": " + other
	}
	if !header {
		return Result{}, fmt.Errorf("%w: no report header%s", ErrNoResult, complaint)
	}
	_, _, _, _, n := res.rates()
	msgs, _, errs, _ := res.Totals()
	if msgs == 0 {
		return Result{}, fmt.Errorf("%w: no message went through (%d errors in %d report lines)%s", ErrNoResult, errs, len(res.Intervals), complaint)
	}
	if n == 0 {
		return Result{}, fmt.Errorf("%w: no complete minute in %d report lines (run postal for more than two minutes)", ErrNoResult, len(res.Intervals))
	}
	return res, nil
}

// LogFile is the file postal writes in its working directory, one line per
// message it sent: the body's MD5, the sender and the recipient
// ("c27898ab5f38bb7e732c2a5544dfd94e <u2@x.test> <u2@x.test>").
const LogFile = "postal.log"

var reLogLine = regexp.MustCompile(`^[0-9a-f]{32} <[^<>\s]*> <[^<>\s]*>$`)

// CountLog counts the messages of a postal.log: its complete lines (a line
// postal is still writing, without its newline, is not counted). A
// complete line of another form is an error.
func CountLog(r io.Reader) (int, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return 0, fmt.Errorf("postal: reading %s: %w", LogFile, err)
	}
	text := string(b)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	} else {
		return 0, nil
	}
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if !reLogLine.MatchString(line) {
			return 0, fmt.Errorf("postal: %s line %d %q is not \"MD5 <from> <to>\"", LogFile, n+1, line)
		}
		n++
	}
	return n, nil
}

// reComplaint matches what postal prints when a message cannot go
// through: it cannot connect, or the server refused it.
var reComplaint = regexp.MustCompile(`^(Can't connect to .*|Server error:.*)$`)

// Complaint is postal's first complaint in its output ("Can't connect to
// 127.0.0.1 port 25.", "Server error:554 ..."), or "".
func Complaint(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); reComplaint.MatchString(line) {
			return line
		}
	}
	return ""
}
