package hostos

import (
	"os"
	"slices"
	"strconv"
	"strings"
)

// Proc is one process on the host.
type Proc struct {
	PID, PPID int
	Argv      []string
}

// Procs lists the host's processes but the calling one (kernel threads,
// whose command line is empty, with no Argv).
func Procs() []Proc {
	var out []Proc
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		p := Proc{PID: pid, PPID: ParentPID(pid)}
		for _, a := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
			if a != "" {
				p.Argv = append(p.Argv, a)
			}
		}
		out = append(out, p)
	}
	return out
}

// RootsMentioning lists the processes of procs whose command line holds s
// and whose parent's does not, by pid: the roots of the trees of
// processes that name s.
func RootsMentioning(procs []Proc, s string) []Proc {
	in := map[int]bool{}
	var all []Proc
	for _, p := range procs {
		for _, a := range p.Argv {
			if strings.Contains(a, s) {
				all = append(all, p)
				in[p.PID] = true
				break
			}
		}
	}
	var roots []Proc
	for _, p := range all {
		if !in[p.PPID] {
			roots = append(roots, p)
		}
	}
	slices.SortFunc(roots, func(a, b Proc) int { return a.PID - b.PID })
	return roots
}

// Parents maps every process of procs to its parent.
func Parents(procs []Proc) map[int]int {
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.PID] = p.PPID
	}
	return parent
}
