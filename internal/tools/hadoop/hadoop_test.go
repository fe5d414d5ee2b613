package hadoop

import (
	"os"
	"path/filepath"
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
	return Parse(f)
}

func TestJavaArgs(t *testing.T) {
	a, err := Job{Classpath: []string{"/c", "/l/a.jar"}, Program: "terasort", Args: []string{"in", "out"}, Reducers: 2}.JavaArgs()
	if err != nil {
		t.Fatal(err)
	}
	want := "-cp /c:/l/a.jar org.apache.hadoop.examples.ExampleDriver terasort -D mapreduce.framework.name=local -D fs.defaultFS=file:/// -D mapreduce.job.reduces=2 in out"
	if got := strings.Join(a, " "); got != want {
		t.Errorf("args %q\nwant %q", got, want)
	}
	for _, bad := range []Job{{Classpath: []string{"/c"}, Program: "pi"}, {Program: "wordcount"}, {Classpath: []string{"/c"}, Program: "wordcount", Args: []string{"-libjars"}}} {
		if _, err := bad.JavaArgs(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		file     string
		job      string
		took     time.Duration
		counters map[string]int64
	}{
		{"hadoop-3.3.6-wordcount.log", "job_local54928762_0001", 1005 * time.Millisecond,
			map[string]int64{"Map input records": 3, "Reduce output records": 9, "Bytes Read": 156, "Bytes Written": 74, "FILE: Number of bytes read": 563530}},
		{"hadoop-3.3.6-terasort.log", "job_local1347122480_0001", 1004 * time.Millisecond,
			map[string]int64{"Map input records": 10000, "Reduce output records": 10000, "Bytes Written": 1007824}},
		{"hadoop-3.3.6-teragen.log", "job_local1949504923_0001", 1008 * time.Millisecond,
			map[string]int64{"Map input records": 10000, "Bytes Written": 1007824}},
	} {
		rep, err := parseFile(t, c.file)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if rep.JobID != c.job || !rep.Succeeded || rep.Duration() != c.took {
			t.Errorf("%s: %s succeeded %v in %v, want %s in %v", c.file, rep.JobID, rep.Succeeded, rep.Duration(), c.job, c.took)
		}
		for k, v := range c.counters {
			if rep.Counters[k] != v {
				t.Errorf("%s: counter %q = %d, want %d", c.file, k, rep.Counters[k], v)
			}
		}
	}
}

func TestParseFailures(t *testing.T) {
	for file, want := range map[string]string{
		"hadoop-3.3.6-output-exists.log":     "org.apache.hadoop.mapred.FileAlreadyExistsException: Output directory file:/tmp/hd/out already exists",
		"hadoop-3.3.6-no-input-nolog4j.log":  "org.apache.hadoop.mapreduce.lib.input.InvalidInputException: Input path does not exist: file:/tmp/hd/nosuchin",
		"hadoop-3.3.6-wordcount-nolog4j.log": "no job ran",
	} {
		if _, err := parseFile(t, file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", file, err, want)
		}
	}
	// a job that ran but never ended (killed)
	b, _ := os.ReadFile(filepath.Join("testdata", "hadoop-3.3.6-wordcount.log"))
	cut := string(b)[:strings.Index(string(b), "completed successfully")]
	if _, err := Parse(strings.NewReader(cut)); err == nil || !strings.Contains(err.Error(), "never said it completed") {
		t.Errorf("a job cut short: %v", err)
	}
}
