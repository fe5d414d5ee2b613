// Package hoststate records the state of the host that one repetition can
// leave to the next (TCP sockets by state, ephemeral ports in use, dirty,
// writeback and cached pages, the load, processes still running from
// earlier repetitions), lets what drains by itself drain before the next
// repetition starts (Settler), and flags the repetitions of a cell that
// started from a different state than their peers (Warnings).
//
// Everything is read from /proc of the machine isobench runs on, in the
// network namespace it runs in (the host's): native shares it with the
// workloads, while every container and VM gets a fresh one and leaves
// nothing there. Where /proc has no such file (FreeBSD) the field is
// simply not known.
package hoststate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TagPrefix starts the sample tags a snapshot is stored as
// (hoststate.tcp_time_wait=1234).
const TagPrefix = "hoststate."

// Snapshot is the host's state at one moment. Counts that could not be read
// are -1.
type Snapshot struct {
	// TCP sockets of this network namespace (IPv4 and IPv6 together) by
	// state name (ESTABLISHED, TIME_WAIT, ...), from /proc/net/tcp{,6}.
	TCP map[string]int
	// TimeWait is the kernel's count of TIME_WAIT sockets of this network
	// namespace (sockstat's tw, which also counts FIN_WAIT2 sockets kept
	// in time-wait form): cheap to read, so the drain polls it.
	TimeWait int
	// Orphans and TCPMemPages are sockstat's orphan and mem (pages of
	// TCP buffers).
	Orphans, TCPMemPages int
	// EphemeralPorts is how many distinct local ports inside
	// ip_local_port_range TCP sockets hold; EphemeralRange is the size of
	// that range.
	EphemeralPorts, EphemeralRange int
	// From /proc/meminfo, in KiB.
	DirtyKB, WritebackKB, CachedKB, MemTotalKB int64
	// Load1 is the one-minute load average (-1 when unknown).
	Load1 float64
	// Uptime is the time since boot, in clock ticks (1/100 s, the unit of
	// a process's start time in /proc/PID/stat); 0 when unknown.
	Uptime uint64
	// Procs are the processes running now (kernel threads left out).
	Procs []Proc
}

// Proc is one process of a snapshot.
type Proc struct {
	PID, PPID int
	Comm      string
	Start     uint64 // clock ticks after boot
	// Cgroup is /proc/PID/cgroup, read for orphans (children of pid 1)
	// only: whose they are.
	Cgroup string
}

// tcpStates names the states of /proc/net/tcp (include/net/tcp_states.h).
var tcpStates = map[string]string{
	"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
	"05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
	"09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING", "0C": "NEW_SYN_RECV",
}

// TCPTable is what ParseTCP reads from one /proc/net/tcp or tcp6 file.
type TCPTable struct {
	States map[string]int // by state name
	Ports  map[int]bool   // local ports of the sockets
}

// ParseTCP reads /proc/net/tcp or /proc/net/tcp6 text: the sockets by
// state and the local ports they hold.
func ParseTCP(r io.Reader) (TCPTable, error) {
	t := TCPTable{States: map[string]int{}, Ports: map[int]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			first = false
			if !strings.Contains(line, "local_address") {
				return t, fmt.Errorf("hoststate: tcp table: unexpected header %q", line)
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 {
			if len(f) == 0 {
				continue
			}
			return t, fmt.Errorf("hoststate: tcp table: short line %q", line)
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if !ok || err != nil {
			return t, fmt.Errorf("hoststate: tcp table: local address %q", f[1])
		}
		st, ok := tcpStates[strings.ToUpper(f[3])]
		if !ok {
			st = "STATE_" + f[3]
		}
		t.States[st]++
		t.Ports[int(port)] = true
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("hoststate: tcp table: %w", err)
	}
	return t, nil
}

// Sockstat is what ParseSockstat reads.
type Sockstat struct {
	InUse, Orphans, TimeWait, Alloc, MemPages int
}

// ParseSockstat reads the TCP line of /proc/net/sockstat.
func ParseSockstat(r io.Reader) (Sockstat, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "TCP:" {
			continue
		}
		s := Sockstat{InUse: -1, Orphans: -1, TimeWait: -1, Alloc: -1, MemPages: -1}
		for i := 1; i+1 < len(f); i += 2 {
			v, err := strconv.Atoi(f[i+1])
			if err != nil {
				return s, fmt.Errorf("hoststate: sockstat: %s %q: %w", f[i], f[i+1], err)
			}
			switch f[i] {
			case "inuse":
				s.InUse = v
			case "orphan":
				s.Orphans = v
			case "tw":
				s.TimeWait = v
			case "alloc":
				s.Alloc = v
			case "mem":
				s.MemPages = v
			}
		}
		return s, nil
	}
	if err := sc.Err(); err != nil {
		return Sockstat{}, fmt.Errorf("hoststate: sockstat: %w", err)
	}
	return Sockstat{}, errors.New("hoststate: sockstat: no TCP line")
}

// ParseMeminfo reads /proc/meminfo into KiB by field name.
func ParseMeminfo(r io.Reader) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return out, fmt.Errorf("hoststate: meminfo %s: %w", name, err)
		}
		out[name] = v
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("hoststate: meminfo: %w", err)
	}
	return out, nil
}

// ParsePortRange reads /proc/sys/net/ipv4/ip_local_port_range.
func ParsePortRange(s string) (lo, hi int, err error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("hoststate: port range %q", s)
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err := errors.Join(err1, err2); err != nil || lo < 0 || hi < lo || hi > 65535 {
		return 0, 0, fmt.Errorf("hoststate: port range %q: %w", s, cmpErr(err))
	}
	return lo, hi, nil
}

func cmpErr(err error) error {
	if err == nil {
		return errors.New("not a range of ports")
	}
	return err
}

// ParseUptime reads /proc/uptime as clock ticks since boot.
func ParseUptime(s string) (uint64, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, fmt.Errorf("hoststate: uptime %q", s)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("hoststate: uptime %q: %w", s, cmpErr(err))
	}
	return uint64(v * clockTicks), nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's start time (100 on
// every Linux architecture's user ABI).
const clockTicks = 100

// ParseLoad reads the one-minute load average of /proc/loadavg.
func ParseLoad(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, fmt.Errorf("hoststate: loadavg %q", s)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("hoststate: loadavg %q: %w", s, err)
	}
	return v, nil
}

// ParseProcStat reads a /proc/PID/stat line: the command (in parentheses,
// which may hold spaces and parentheses), the parent pid and the start
// time in clock ticks after boot.
func ParseProcStat(stat string) (comm string, ppid int, start uint64, err error) {
	i, j := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if i < 0 || j < i {
		return "", 0, 0, fmt.Errorf("hoststate: stat %q: no command name", stat)
	}
	f := strings.Fields(stat[j+1:])
	// f[0] is the state, f[1] the parent, f[19] the start time (field 22)
	if len(f) < 20 {
		return "", 0, 0, fmt.Errorf("hoststate: stat %q: too few fields", stat)
	}
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return "", 0, 0, fmt.Errorf("hoststate: stat %q: parent: %w", stat, err)
	}
	if start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return "", 0, 0, fmt.Errorf("hoststate: stat %q: start time: %w", stat, err)
	}
	return stat[i+1 : j], ppid, start, nil
}

// Read takes a snapshot of the host from the proc file system at root
// ("/proc"). What cannot be read is left unknown (-1); Read fails only
// when nothing at all can be read.
func Read(root string) (Snapshot, error) {
	s := Snapshot{TimeWait: -1, Orphans: -1, TCPMemPages: -1, EphemeralPorts: -1, EphemeralRange: -1,
		DirtyKB: -1, WritebackKB: -1, CachedKB: -1, MemTotalKB: -1, Load1: -1}
	var errs []error
	var read int
	file := func(name string) (*os.File, bool) {
		f, err := os.Open(filepath.Join(root, name))
		if err != nil {
			errs = append(errs, err)
			return nil, false
		}
		read++
		return f, true
	}
	if f, ok := file("net/sockstat"); ok {
		st, err := ParseSockstat(f)
		f.Close()
		if err != nil {
			errs = append(errs, err)
		} else {
			s.TimeWait, s.Orphans, s.TCPMemPages = st.TimeWait, st.Orphans, st.MemPages
		}
	}
	ports := map[int]bool{}
	for _, name := range []string{"net/tcp", "net/tcp6"} {
		f, ok := file(name)
		if !ok {
			continue
		}
		t, err := ParseTCP(f)
		f.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if s.TCP == nil {
			s.TCP = map[string]int{}
		}
		for k, v := range t.States {
			s.TCP[k] += v
		}
		for p := range t.Ports {
			ports[p] = true
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "sys/net/ipv4/ip_local_port_range")); err != nil {
		errs = append(errs, err)
	} else if lo, hi, err := ParsePortRange(string(b)); err != nil {
		errs = append(errs, err)
	} else {
		read++
		s.EphemeralRange = hi - lo + 1
		if s.TCP != nil {
			s.EphemeralPorts = 0
			for p := range ports {
				if p >= lo && p <= hi {
					s.EphemeralPorts++
				}
			}
		}
	}
	if f, ok := file("meminfo"); ok {
		m, err := ParseMeminfo(f)
		f.Close()
		if err != nil {
			errs = append(errs, err)
		}
		for name, dst := range map[string]*int64{"Dirty": &s.DirtyKB, "Writeback": &s.WritebackKB, "Cached": &s.CachedKB, "MemTotal": &s.MemTotalKB} {
			if v, ok := m[name]; ok {
				*dst = v
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "loadavg")); err != nil {
		errs = append(errs, err)
	} else if v, err := ParseLoad(string(b)); err != nil {
		errs = append(errs, err)
	} else {
		read++
		s.Load1 = v
	}
	if b, err := os.ReadFile(filepath.Join(root, "uptime")); err != nil {
		errs = append(errs, err)
	} else if v, err := ParseUptime(string(b)); err != nil {
		errs = append(errs, err)
	} else {
		read++
		s.Uptime = v
	}
	procs, err := readProcs(root)
	if err != nil {
		errs = append(errs, err)
	} else if len(procs) > 0 {
		read++
		s.Procs = procs
	}
	if read == 0 {
		return s, fmt.Errorf("hoststate: nothing readable under %s: %w", root, errors.Join(errs...))
	}
	return s, nil
}

// readProcs lists the processes under root, kernel threads (children of
// kthreadd, pid 2) left out. A process that ends while it is read is
// skipped.
func readProcs(root string) ([]Proc, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("hoststate: processes: %w", err)
	}
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, e.Name(), "stat"))
		if err != nil {
			continue // ended meanwhile, or unreadable: nothing to count
		}
		comm, ppid, start, err := ParseProcStat(strings.TrimSpace(string(b)))
		if err != nil || pid == 2 || ppid == 2 {
			continue
		}
		p := Proc{PID: pid, PPID: ppid, Comm: comm, Start: start}
		if ppid == 1 {
			if b, err := os.ReadFile(filepath.Join(root, e.Name(), "cgroup")); err == nil {
				p.Cgroup = string(b)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// ParseCgroup reads /proc/PID/cgroup text into the group's path by
// hierarchy ("0" for the unified one, else the numbered hierarchy's id).
func ParseCgroup(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		_, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		out[id] = path
	}
	return out
}

// within reports whether the cgroups of a process (ParseCgroup) lie at or
// below those of another (outer) in every hierarchy outer has.
func within(inner, outer map[string]string) bool {
	for id, o := range outer {
		in, ok := inner[id]
		if !ok {
			return false
		}
		if in != o && !strings.HasPrefix(in, strings.TrimSuffix(o, "/")+"/") {
			return false
		}
	}
	return true
}
