package hoststate

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestReadCapturedProc(t *testing.T) {
	s, err := Read("testdata/proc")
	if err != nil {
		t.Fatal(err)
	}
	wantTCP := map[string]int{"LISTEN": 6, "ESTABLISHED": 12, "SYN_RECV": 12, "FIN_WAIT2": 12, "TIME_WAIT": 9, "CLOSE_WAIT": 1}
	if !reflect.DeepEqual(s.TCP, wantTCP) {
		t.Errorf("TCP = %v, want %v", s.TCP, wantTCP)
	}
	if s.TimeWait != 366 || s.Orphans != 0 || s.TCPMemPages != 2544 {
		t.Errorf("sockstat: tw %d orphans %d mem %d, want 366 0 2544", s.TimeWait, s.Orphans, s.TCPMemPages)
	}
	// local ports 37135 37991 40861 45461 46341 51672 lie in 32768-60999
	if s.EphemeralPorts != 6 || s.EphemeralRange != 28232 {
		t.Errorf("ephemeral ports %d of %d, want 6 of 28232", s.EphemeralPorts, s.EphemeralRange)
	}
	if s.DirtyKB != 12960 || s.WritebackKB != 0 || s.CachedKB != 11118832 || s.MemTotalKB != 24684092 {
		t.Errorf("meminfo: dirty %d writeback %d cached %d total %d", s.DirtyKB, s.WritebackKB, s.CachedKB, s.MemTotalKB)
	}
	if s.Load1 != 11.35 || s.Uptime != 146403 {
		t.Errorf("load %v uptime %d, want 11.35 146403", s.Load1, s.Uptime)
	}
	var got []Proc
	got = append(got, s.Procs...)
	slices.SortFunc(got, func(a, b Proc) int { return a.PID - b.PID })
	want := []Proc{{PID: 1, Comm: "init", Start: 9}, {PID: 4242, PPID: 1, Comm: "apache2 (x)", Start: 140000, Cgroup: "0::/user.slice/user-0.slice/session-3.scope\n"},
		{PID: 15629, PPID: 1, Comm: "dockerd", Start: 15508, Cgroup: "0::/system.slice/docker.service\n"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("procs (kernel threads left out) = %v, want %v", got, want)
	}
}

func TestReadWhatIsThere(t *testing.T) {
	if _, err := Read(t.TempDir()); err == nil {
		t.Error("an empty proc root read without an error")
	}
	dir := t.TempDir()
	b, err := os.ReadFile("testdata/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "meminfo"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.DirtyKB != 12960 || s.TCP != nil || s.TimeWait != -1 || s.EphemeralPorts != -1 || s.Load1 != -1 {
		t.Errorf("with only meminfo: %+v", s)
	}
	tags := State{Snapshot: s}.Tags()
	for _, k := range []string{"tcp_time_wait", "ephemeral_ports", "load1", "leftovers"} {
		if _, ok := tags[TagPrefix+k]; ok {
			t.Errorf("unknown %s was tagged: %v", k, tags)
		}
	}
	if tags[TagPrefix+"dirty_kb"] != "12960" {
		t.Errorf("tags %v", tags)
	}
}

func TestParsersRefuseGarbage(t *testing.T) {
	if _, err := ParseTCP(strings.NewReader("hello\n")); err == nil {
		t.Error("ParseTCP took a file without the header")
	}
	if _, err := ParseTCP(strings.NewReader("  sl  local_address rem_address   st\n   0: 0100007F 00000000:0000 0A\n")); err == nil {
		t.Error("ParseTCP took a local address without a port")
	}
	if _, err := ParseSockstat(strings.NewReader("sockets: used 3\n")); err == nil {
		t.Error("ParseSockstat took a file without a TCP line")
	}
	if _, err := ParseSockstat(strings.NewReader("TCP: inuse x\n")); err == nil {
		t.Error("ParseSockstat took a count that is no number")
	}
	for _, r := range []string{"", "5", "9 3", "1 70000", "a b"} {
		if _, _, err := ParsePortRange(r); err == nil {
			t.Errorf("ParsePortRange(%q) took it", r)
		}
	}
	if _, _, _, err := ParseProcStat("12 (x) S 1 2 3"); err == nil {
		t.Error("ParseProcStat took a short line")
	}
	if _, _, _, err := ParseProcStat("12 x S 1"); err == nil {
		t.Error("ParseProcStat took a line without a command")
	}
	comm, ppid, start, err := ParseProcStat("7 (a) b) (c) R 5 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0")
	if err != nil || comm != "a) b) (c" || ppid != 5 || start != 777 {
		t.Errorf("ParseProcStat = %q %d %d %v", comm, ppid, start, err)
	}
}

func TestTagsOfAState(t *testing.T) {
	s, err := Read("testdata/proc")
	if err != nil {
		t.Fatal(err)
	}
	st := State{Snapshot: s, Leftovers: []Proc{{PID: 4242, PPID: 1, Comm: "apache2 (x)", Start: 140000}}, Undrained: []string{"x"}}
	tags := st.Tags()
	want := map[string]string{
		"tcp_established": "12", "tcp_time_wait": "9", "tcp_close_wait": "1", "tcp_closing": "12", "tcp_syn": "12",
		"tcp_orphans": "0", "tcp_mem_pages": "2544", "ephemeral_ports": "6", "ephemeral_range": "28232",
		"dirty_kb": "12960", "writeback_kb": "0", "cached_kb": "11118832", "mem_total_kb": "24684092",
		"load1": "11.35", "leftovers": "1", "leftover_names": "apache2 (x)", "waited_ms": "0", "undrained": "x",
	}
	for k, v := range want {
		if tags[TagPrefix+k] != v {
			t.Errorf("tag %s = %q, want %q", k, tags[TagPrefix+k], v)
		}
	}
	if len(tags) != len(want) {
		t.Errorf("%d tags, want %d: %v", len(tags), len(want), tags)
	}
	vals := Values(tags)
	if vals["tcp_time_wait"] != 9 || vals["load1"] != 11.35 || vals["leftovers"] != 1 {
		t.Errorf("Values = %v", vals)
	}
	if _, ok := vals["undrained"]; ok {
		t.Error("Values read a sentence")
	}
}

func TestParseCgroup(t *testing.T) {
	v1 := "9:name=systemd:/user.slice/session-3.scope\n4:memory:/user.slice\n0::/user.slice/session-3.scope\n"
	got := ParseCgroup(v1)
	want := map[string]string{"9": "/user.slice/session-3.scope", "4": "/user.slice", "0": "/user.slice/session-3.scope"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseCgroup = %v, want %v", got, want)
	}
	self := ParseCgroup("0::/user.slice/session-3.scope\n")
	for cg, in := range map[string]bool{
		"0::/user.slice/session-3.scope\n":            true,
		"0::/user.slice/session-3.scope/isobench-1\n": true,
		"0::/user.slice/session-30.scope\n":           false,
		"0::/system.slice/etcd.service\n":             false,
		"":                                            false,
	} {
		if got := within(ParseCgroup(cg), self); got != in {
			t.Errorf("within(%q, session-3) = %v, want %v", cg, got, in)
		}
	}
}
