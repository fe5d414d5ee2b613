package fio

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

// Expected values were computed independently (python json module) from
// the same files.
func TestParse(t *testing.T) {
	type side struct{ iops, mib, mean, p50, p95, p99, max float64 }
	cases := []struct {
		file  string
		jobs  []string
		sides map[string]side
	}{
		{"fio-3.33-randread-numjobs2.json", []string{"randread", "randread"}, map[string]side{
			"read": {22200.3998, 86.72031116485596, 0.08939323771481032, 0.08448, 0.13056, 0.31744, 2.084098},
		}},
		{"fio-3.33-multijob.json", []string{"seqwrite", "randrw"}, map[string]side{
			"read":  {2661.845387, 10.397832870483398, 0.37391798856999997, 0.087552, 0.132096, 8.84736, 18.082485},
			"write": {135100.132726, 8375.871370315552, 0.006637570263610627, 0.006624, 0.008384, 0.011968, 0.585066},
		}},
		{"fio-3.33-randrw-libaio-direct.json", []string{"libaio-randrw"}, map[string]side{
			"read":  {33788.059701, 131.9846076965332, 0.103775569102, 0.088576, 0.140288, 0.31744, 8.717021},
			"write": {33866.666667, 132.2916660308838, 0.124253610266, 0.101888, 0.162816, 0.48128, 8.713124},
		}},
		{"fio-2.1.4-pkb-5groups.json", []string{"sequential_write", "sequential_read", "random_write_test", "random_read_test", "random_read_test_parallel"}, map[string]side{
			"read":  {893, 129.2939453125, 106.26093597431813, 264.192, 366.592, 473.088, 528.542},
			"write": {1743, 72.8134765625, 35.12860896443433, 444.416, 724.992, 823.296, 869.891},
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, j := range rep.Jobs {
				names = append(names, j.Name)
			}
			if !reflect.DeepEqual(names, c.jobs) {
				t.Errorf("jobs %q, want %q", names, c.jobs)
			}
			ms, err := Parse(bytes.NewReader(data))
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
			if len(got) != 7*len(c.sides) || len(ms) != len(got) {
				t.Errorf("got %d metrics, want %d: %v", len(ms), 7*len(c.sides), ms)
			}
			for name, s := range c.sides {
				want := map[string]float64{
					"_iops": s.iops, "_mib_per_sec": s.mib, "_clat_mean": s.mean,
					"_clat_p50": s.p50, "_clat_p95": s.p95, "_clat_p99": s.p99, "_clat_max": s.max,
				}
				for suffix, v := range want {
					m, ok := got[name+suffix]
					if !ok {
						t.Errorf("missing %s%s", name, suffix)
						continue
					}
					if math.Abs(m.Value-v) > 1e-9*math.Max(1, math.Abs(v)) {
						t.Errorf("%s = %v, want %v", m.Name, m.Value, v)
					}
					isLat := strings.Contains(suffix, "clat")
					if isLat && (m.Unit != "ms" || m.Better != sample.Lower) || !isLat && (m.Better != sample.Higher || m.Agg != sample.Sum) {
						t.Errorf("%s: unit %s better %s agg %s", m.Name, m.Unit, m.Better, m.Agg)
					}
				}
			}
			if _, ok := got["trim_iops"]; ok {
				t.Error("trim reported although no job trimmed")
			}
		})
	}
}

func TestParseLeadingNoteAndErrors(t *testing.T) {
	data, err := os.ReadFile("testdata/fio-3.33-randrw-libaio-direct.json")
	if err != nil {
		t.Fatal(err)
	}
	noted := append([]byte("note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1 {sic}\n"), data...)
	ms, err := Parse(bytes.NewReader(noted))
	if err != nil || len(ms) != 14 {
		t.Fatalf("with a leading note: %d metrics, err %v", len(ms), err)
	}
	failed := bytes.Replace(data, []byte(`"error" : 0`), []byte(`"error" : 5`), 1)
	if _, err := Parse(bytes.NewReader(failed)); err == nil || !strings.Contains(err.Error(), "libaio-randrw") {
		t.Errorf("job error not reported: %v", err)
	}
	for _, in := range []string{"", "fio: pid=0, err=2/file:filesetup.c", `{"jobs": []}`, `{"jobs": [`} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("Parse(%q) succeeded", in)
		}
	}
}

func TestArgs(t *testing.T) {
	j := Job{Name: "isobench", Directory: "/scratch", Pattern: "randrw", BS: 4096, Size: 64 << 20, Direct: true,
		IODepth: 8, Jobs: 2, Duration: 1500 * time.Millisecond, IOEngine: "libaio"}
	base := []string{"--name=isobench", "--directory=/scratch", "--rw=randrw", "--bs=4096", "--size=67108864",
		"--direct=1", "--iodepth=8", "--numjobs=2", "--ioengine=libaio"}
	if got, want := j.Args(), append(append([]string{}, base...), "--time_based=1", "--runtime=1500ms", "--output-format=json"); !reflect.DeepEqual(got, want) {
		t.Errorf("Args %q\nwant %q", got, want)
	}
	if got, want := j.CreateArgs(), append(append([]string{}, base...), "--create_only=1", "--output-format=json"); !reflect.DeepEqual(got, want) {
		t.Errorf("CreateArgs %q\nwant %q", got, want)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"jobs":[{"read":{"iops":1e308,"clat_ns":{"max":1,"mean":1,"percentile":{"99.000000":1}}}},{"read":{"iops":1e308}}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		ms, err := Parse(bytes.NewReader(in))
		if err != nil {
			return
		}
		for _, m := range ms {
			if err := m.Validate(); err != nil {
				t.Error(err)
			}
			if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				t.Errorf("non-finite %s", m.Name)
			}
		}
	})
}

// TestDecodeStatusReports reads the output of fio --status-interval,
// several cumulative JSON reports one after another, and checks Decode
// gives the last one (the final report, not a status report) and IOs sums
// a side over the jobs; a report cut short is an error, not the status
// report before it.
func TestDecodeStatusReports(t *testing.T) {
	for _, c := range []struct {
		file            string
		reports         int
		sides           map[string]float64 // the final report's IOs
		firstRead, iops float64            // the first report's read IOs; the final read IOPS of job 1
		stampMs         int64              // the final report's timestamp_ms
	}{
		{"fio-3.33-randread-status-interval.json", 3, map[string]float64{"read": 7133 + 7127, "write": 0}, 1770 + 1765, 10175.463623, 1795810306395},
		{"fio-3.33-randrw-status-interval.json", 4, map[string]float64{"read": 4719, "write": 4784}, 917, 0, 1795810307186},
	} {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(data, []byte("\n{\n")) + 1; n != c.reports {
				t.Fatalf("%d reports in the file, want %d", n, c.reports)
			}
			rep, err := Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			for side, want := range c.sides {
				if got := rep.IOs(side); got != want {
					t.Errorf("%s IOs %v, want the final report's %v", side, got, want)
				}
			}
			if got := rep.Time.UnixMilli(); got != c.stampMs {
				t.Errorf("report made at %d ms, want the final report's timestamp_ms %d", got, c.stampMs)
			}
			if c.iops > 0 && rep.Jobs[0].Sides["read"].IOPS != c.iops {
				t.Errorf("job 1 read IOPS %v, want the final report's %v", rep.Jobs[0].Sides["read"].IOPS, c.iops)
			}
			first := data[:bytes.Index(data, []byte("\n}\n"))+3]
			r1, err := Decode(bytes.NewReader(first))
			if err != nil {
				t.Fatal(err)
			}
			if got := r1.IOs("read"); got != c.firstRead {
				t.Errorf("first report: read IOs %v, want %v", got, c.firstRead)
			}
			cut := data[:len(data)-200]
			if _, err := Decode(bytes.NewReader(cut)); err == nil {
				t.Error("a final report cut short decoded without error")
			}
		})
	}
}

// fio 2's JSON has no timestamp_ms: the report's Time is zero, and the
// agent places its counts when it reads them.
func TestDecodeNoTimestamp(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "fio-2.1.4-pkb-5groups.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Time.IsZero() {
		t.Errorf("fio 2 report made at %v, want no time", rep.Time)
	}
}
