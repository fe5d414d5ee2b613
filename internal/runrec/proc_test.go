package runrec

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// parents reads every process's parent from /proc.
func parents(t *testing.T) map[int]int {
	t.Helper()
	out := map[int]int{}
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 {
			out[pid], _ = strconv.Atoi(f[1])
		}
	}
	return out
}

// TestKillTree: a shell and its two children are all killed, the
// children first, and KillTree returns only once the shell is gone.
func TestKillTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 300 & sleep 300 & wait")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	var kids []int
	for end := time.Now().Add(5 * time.Second); len(kids) < 2 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		kids = kids[:0]
		for p, pp := range parents(t) {
			if pp == cmd.Process.Pid {
				kids = append(kids, p)
			}
		}
	}
	if len(kids) != 2 {
		t.Fatalf("the shell has %d children, want 2", len(kids))
	}
	if err := KillTree(cmd.Process.Pid, parents(t)); err != nil {
		t.Fatal(err)
	}
	<-done
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if !Alive(kids[0], 0) && !Alive(kids[1], 0) {
			return
		}
	}
	t.Fatalf("children %v still alive", kids)
}
