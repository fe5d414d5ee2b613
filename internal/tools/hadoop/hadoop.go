// Package hadoop adapts Hadoop MapReduce's example jobs (wordcount,
// teragen, terasort: what HiBench runs for study 003's figure 9) run in
// local mode by a JVM from Hadoop's jars (Maven Central): the jars to
// fetch, the log configuration that makes the job report itself, the
// command line of one job, and a parser for its log.
//
// With Log4j set up as Log4jProperties says, a job logs, with timestamps,
// "Running job: job_local…" when it starts, "Job job_local… completed
// successfully" (or "… failed with state …") when it ends and then its
// counters ("Counters: 30", groups of "Name=value"). A job that cannot
// start ends with the exception that stopped it
// ("org.apache.hadoop.mapred.FileAlreadyExistsException: Output directory
// … already exists") and the JVM exits 255.
package hadoop

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/tools/toolparse"
)

// Version is the Hadoop release isobench runs.
const Version = "3.3.6"

// Artifacts are the Maven artifacts whose jars (with their run-time
// dependencies) make a local-mode MapReduce: the example jobs, the job
// client and Hadoop's common library.
var Artifacts = []string{
	"org.apache.hadoop:hadoop-mapreduce-examples:" + Version,
	"org.apache.hadoop:hadoop-mapreduce-client-jobclient:" + Version,
	"org.apache.hadoop:hadoop-common:" + Version,
}

// Driver is the example jobs' main class.
const Driver = "org.apache.hadoop.examples.ExampleDriver"

// Log4jProperties is a log4j.properties (put its directory first on the
// class path) that logs warnings and the job's own progress and counters,
// with timestamps, to standard error.
const Log4jProperties = `log4j.rootLogger=WARN,console
log4j.logger.org.apache.hadoop.mapreduce.Job=INFO
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
`

// Job is one example job in local mode (the job runs in the JVM, on the
// local file system).
type Job struct {
	Classpath []string // the log configuration's directory first, then the jars
	Program   string   // wordcount, teragen, terasort, teravalidate
	Args      []string // the program's own arguments (input, output, rows)
	Reducers  int      // mapreduce.job.reduces; 0: the job's default
}

// Programs are the example jobs Job runs.
var Programs = []string{"wordcount", "teragen", "terasort", "teravalidate"}

// JavaArgs builds the java command line (without "java").
func (j Job) JavaArgs() ([]string, error) {
	ok := false
	for _, p := range Programs {
		ok = ok || p == j.Program
	}
	if !ok {
		return nil, fmt.Errorf("hadoop: program %q: want one of %s", j.Program, strings.Join(Programs, ", "))
	}
	if len(j.Classpath) == 0 {
		return nil, errors.New("hadoop: no class path")
	}
	a := []string{"-cp", strings.Join(j.Classpath, ":"), Driver, j.Program,
		"-D", "mapreduce.framework.name=local", "-D", "fs.defaultFS=file:///"}
	if j.Reducers > 0 {
		a = append(a, "-D", "mapreduce.job.reduces="+strconv.Itoa(j.Reducers))
	}
	for _, x := range j.Args {
		if strings.HasPrefix(x, "-") {
			return nil, fmt.Errorf("hadoop: argument %q looks like an option", x)
		}
	}
	return append(a, j.Args...), nil
}

// Report is what a job's log says.
type Report struct {
	JobID     string
	Started   time.Time // "Running job"
	Ended     time.Time // "completed successfully" or "failed"
	Succeeded bool
	// Counters by name ("Map input records", "FILE: Number of bytes
	// read", "Bytes Written").
	Counters map[string]int64
}

// Duration is the job's time from its log: from "Running job" to its end.
func (r Report) Duration() time.Duration { return r.Ended.Sub(r.Started) }

var (
	reStamp    = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) \S+ \S+: (.*)$`)
	reRunning  = regexp.MustCompile(`^Running job: (\S+)$`)
	reDone     = regexp.MustCompile(`^Job (\S+) completed successfully$`)
	reFailed   = regexp.MustCompile(`^Job (\S+) failed with state (\S+)(?: due to: (.*))?$`)
	reCounter  = regexp.MustCompile(`^\s+([^=]+?)=(-?\d+)$`)
	reThrown   = regexp.MustCompile(`^((?:[a-z][a-z0-9_]*\.)+[A-Z][A-Za-z0-9_$]*(?:Exception|Error)): (.*)$`)
	stampClock = "2006-01-02 15:04:05,000"
)

// Parse reads a job's log (its standard error). A job that did not
// complete successfully is an error saying why, in Hadoop's words.
func Parse(r io.Reader) (Report, error) {
	rep := Report{Counters: map[string]int64{}}
	var thrown, failed string
	sc := toolparse.Scanner(r)
	for sc.Scan() {
		line := sc.Text()
		if m := reCounter.FindStringSubmatch(line); m != nil && !rep.Ended.IsZero() {
			v, err := strconv.ParseInt(m[2], 10, 64)
			if err != nil {
				return Report{}, fmt.Errorf("hadoop: counter %q: %w", line, err)
			}
			rep.Counters[strings.TrimSpace(m[1])] = v
			continue
		}
		if m := reThrown.FindStringSubmatch(strings.TrimSpace(line)); m != nil && thrown == "" {
			thrown = m[1] + ": " + m[2]
			continue
		}
		m := reStamp.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.Parse(stampClock, m[1])
		if err != nil {
			return Report{}, fmt.Errorf("hadoop: time %q: %w", m[1], err)
		}
		msg := strings.TrimSpace(m[2])
		if x := reRunning.FindStringSubmatch(msg); x != nil {
			rep.JobID, rep.Started = x[1], at
		} else if x := reDone.FindStringSubmatch(msg); x != nil {
			rep.Ended, rep.Succeeded = at, true
		} else if x := reFailed.FindStringSubmatch(msg); x != nil {
			rep.Ended = at
			failed = "job " + x[1] + " failed with state " + x[2]
			if x[3] != "" {
				failed += ": " + x[3]
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Report{}, fmt.Errorf("hadoop: reading the log: %w", err)
	}
	switch {
	case failed != "":
		return Report{}, fmt.Errorf("hadoop: %s", failed)
	case rep.Succeeded && !rep.Started.IsZero():
		if rep.Ended.Before(rep.Started) {
			return Report{}, fmt.Errorf("hadoop: job %s ended before it started", rep.JobID)
		}
		return rep, nil
	case thrown != "":
		return Report{}, fmt.Errorf("hadoop: %s", thrown)
	case rep.Started.IsZero():
		return Report{}, errors.New("hadoop: the log says no job ran (no \"Running job\"; is log4j.properties first on the class path?)")
	}
	return Report{}, fmt.Errorf("hadoop: job %s never said it completed", rep.JobID)
}
