package service

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/sample"
)

// OverflowMetric counts the connections the server's accept queue had no
// room for while the clients ran (the kernel's TcpExt ListenOverflows in
// the server's network namespace: the instance's own, or the host's for
// native and network=host, where other programs' count too). Each one is
// a SYN answered late or dropped, and the client's retransmission timer
// (1 s, then 3 s, 7 s...) then weighs on the total time: at thousands of
// users against Apache's backlog of 511, the times spread by whole
// seconds, and this count says why.
const OverflowMetric = sample.OverflowMetric

// listenOverflows reads TcpExt ListenOverflows from netstat (the format
// of /proc/net/netstat: a line of names, then a line of values, per
// group); ok is false when the kernel (or gVisor's netstack) has none.
func listenOverflows(netstat io.Reader) (n int64, ok bool) {
	sc := bufio.NewScanner(netstat)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var names []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "TcpExt:" {
			names = nil
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, name := range names {
			if name == "ListenOverflows" && i < len(f) {
				v, err := strconv.ParseInt(f[i], 10, 64)
				return v, err == nil
			}
		}
		names = nil
	}
	return 0, false
}

// overflowsNow is listenOverflows of this process's network namespace.
func overflowsNow() (int64, bool) {
	f, err := os.Open("/proc/net/netstat")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return listenOverflows(f)
}

// overflowMetric is the overflows between two readings, when both exist.
func overflowMetric(before int64, okBefore bool) []sample.Metric {
	after, ok := overflowsNow()
	if !ok || !okBefore || after < before {
		return nil
	}
	return []sample.Metric{{Name: OverflowMetric, Value: float64(after - before), Unit: "connections", Better: sample.Lower, Agg: sample.Sum}}
}
