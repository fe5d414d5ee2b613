package tooladapt

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/workload"
)

func TestDefs(t *testing.T) {
	reg, err := workload.NewRegistry(Defs()...)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{Fio, Iperf3, Sockperf, SysbenchCPU, SysbenchFileIO, SysbenchMemory}
	if got := reg.Names(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("names %q, want %q", got, want)
	}
	for _, d := range Defs() {
		p, err := d.Resolve(nil)
		if err != nil {
			t.Errorf("%s defaults do not resolve: %v", d.Name, err)
			continue
		}
		if d.Timeout(p) <= p.Duration("duration") {
			t.Errorf("%s: timeout %v not above duration", d.Name, d.Timeout(p))
		}
	}
	fd, _ := reg.Lookup(Fio)
	if _, err := fd.Resolve(map[string]string{"ioengine": "libaio,rw=write"}); err == nil {
		t.Error("fio accepted an ioengine smuggling options")
	}
	id, _ := reg.Lookup(Iperf3)
	if _, err := id.Resolve(map[string]string{"server": "-x"}); err == nil {
		t.Error("iperf3 accepted an option as server")
	}
}

func TestToolMissing(t *testing.T) {
	_, err := toolPath("isobench-no-such-tool")
	if err == nil || !strings.Contains(err.Error(), "isobench-no-such-tool not found in this instance: use the tools image profile (image=tools)") {
		t.Errorf("err = %v", err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestRunTools runs every tool workload for real (1 s each) where the tool
// is installed on this machine.
func TestRunTools(t *testing.T) {
	if testing.Short() {
		t.Skip("runs external tools")
	}
	cases := []struct {
		name, bin string
		raw       map[string]string
		want      []string
	}{
		{SysbenchCPU, "sysbench", map[string]string{"threads": "2", "duration": "1s"}, []string{"events_per_sec", "latency_avg", "latency_p95", "latency_max"}},
		{SysbenchCPU + "/events", "sysbench", map[string]string{"threads": "2", "events": "500"}, []string{"total_time", "events_per_sec", "latency_avg"}},
		{SysbenchMemory, "sysbench", map[string]string{"block-size": "4k", "oper": "read", "access": "rnd", "duration": "1s"}, []string{"ops_per_sec", "mib_per_sec"}},
		{SysbenchFileIO, "sysbench", map[string]string{"total-size": "16m", "files": "2", "block-size": "4k", "duration": "1s"}, []string{"reads_per_sec", "writes_per_sec", "fsyncs_per_sec", "read_mib_per_sec", "written_mib_per_sec"}},
		{Fio, "fio", map[string]string{"pattern": "randrw", "size": "8m", "jobs": "2", "duration": "1s"}, []string{"read_iops", "write_iops", "read_mib_per_sec", "read_clat_p99", "write_clat_max"}},
		{Iperf3, "iperf3", map[string]string{"port": "", "duration": "1s"}, []string{"sent_gbit_per_sec", "received_gbit_per_sec", "retransmits"}},
		{Sockperf, "sockperf", map[string]string{"port": "", "duration": "1s"}, []string{"rtt_avg", "rtt_p99", "round_trips_per_sec"}},
		{Sockperf + "/udp", "sockperf", map[string]string{"port": "", "tcp": "false", "duration": "1s"}, []string{"rtt_avg", "rtt_p50", "rtt_max"}},
	}
	defs := map[string]workload.Def{}
	for _, d := range Defs() {
		defs[d.Name] = d
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.bin); err != nil {
				t.Skipf("%s is not installed here (apt-get install %s)", c.bin, c.bin)
			}
			scratch := t.TempDir()
			t.Setenv(workload.ScratchEnv, scratch)
			if v, ok := c.raw["port"]; ok && v == "" {
				c.raw["port"] = freePort(t)
			}
			d := defs[strings.Split(c.name, "/")[0]]
			p, err := d.Resolve(c.raw)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), d.Timeout(p))
			defer cancel()
			readies := 0
			var readyAt time.Time
			ms, err := d.Agent(ctx, p, func() error { readies++; readyAt = time.Now(); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if readies != 1 {
				t.Errorf("ready called %d times", readies)
			}
			if took := time.Since(readyAt); p.Int("events") == 0 && took < p.Duration("duration") {
				t.Errorf("timed part took %v, shorter than the duration: ready was called late", took)
			}
			got := map[string]float64{}
			for _, m := range ms {
				if err := m.Validate(); err != nil {
					t.Error(err)
				}
				got[m.Name] = m.Value
			}
			for _, name := range c.want {
				if _, ok := got[name]; !ok {
					t.Errorf("metric %s missing from %v", name, ms)
				}
			}
			first := c.want[0]
			if got[first] <= 0 {
				t.Errorf("%s = %v, want > 0", first, got[first])
			}
			t.Logf("%s: %v", c.name, got)
			left, err := os.ReadDir(scratch)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Errorf("scratch not cleaned up: %d entries left", len(left))
			}
		})
	}
}

func TestIperf3NoServer(t *testing.T) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("iperf3 not installed")
	}
	t.Setenv(workload.ScratchEnv, t.TempDir())
	var d workload.Def
	for _, x := range Defs() {
		if x.Name == Iperf3 {
			d = x
		}
	}
	p, err := d.Resolve(map[string]string{"server": "127.0.0.1", "port": freePort(t), "duration": "1s"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Agent(context.Background(), p, func() error { return nil })
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("err = %v, want iperf3's connection refused message", err)
	}
}
