package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/runrec"
)

// TestSweep: what a local platform's Sweep lists for its instances found
// in the state directories (the instance, Untokened, with the state
// directory it is in), for one found by its engine's process alone, and
// their parts in removal order (processes naming the instance first, with
// their pids; then its directories, the engine's own state directory
// included); another code's instance and an unrelated process are not
// listed, and removing the parts removes them.
func TestSweep(t *testing.T) {
	state := t.TempDir()
	id, other, byProc := Prefix+"z0badc0de", Prefix+"y0badc0de", Prefix+"z00c0ffee"
	for _, d := range []string{InstanceDir(state, id), filepath.Join(state, "zdirs", id), InstanceDir(state, other)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	start := func(argv0, arg string) int {
		c := exec.Command("bash", "-c", `exec -a `+argv0+` tail -F /dev/null "$0"`, arg)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(c.Process.Pid) + "/cmdline")
			if strings.HasPrefix(string(b), argv0+"\x00") {
				return c.Process.Pid
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not start", argv0)
			}
		}
	}
	engine := start("zengine", "/x/"+id)
	start("zengine", "/x/"+byProc)
	start("notengine", "/x/"+Prefix+"z0dead000")
	sweep := Sweep(Traits{Code: "z", Engines: []string{"zeng*"}, StateSubdirs: []string{"zdirs"}})
	found, err := sweep(context.Background(), platform.SweepEnv{StateDirs: []string{state}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range found {
		if strings.Contains(l.Name, other) || strings.Contains(l.Name, "z0dead000") {
			t.Errorf("listed %s", l)
		}
		if !strings.Contains(l.Name, id) && !strings.Contains(l.Name, byProc) {
			continue // the host's own
		}
		got = append(got, l.String())
		switch {
		case l.Owner == "" && (l.Kind != "instance" || !l.Untokened || l.Remove != nil):
			t.Errorf("instance %+v: want Kind instance, Untokened, no Remove", l)
		case l.Name == id && l.StateDir != state, l.Name == byProc && l.StateDir != "":
			t.Errorf("%s: state dir %q", l.Name, l.StateDir)
		case l.Kind == "process" && l.Owner == id && l.PID != engine:
			t.Errorf("%s: pid %d, want %d", l, l.PID, engine)
		}
	}
	want := []string{
		"instance " + byProc, "process ", // its engine process
		"instance " + id, "process " + strconv.Itoa(engine) + " zengine -F /dev/null /x/" + id,
		"dir " + InstanceDir(state, id), "dir " + filepath.Join(state, "zdirs", id),
	}
	if len(got) != len(want) {
		t.Fatalf("listed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("listed %q, want %q", got[i], want[i])
		}
	}
	for _, l := range found {
		if l.Owner == id {
			if err := l.Remove(context.Background()); err != nil {
				t.Errorf("removing %s: %v", l, err)
			}
		}
	}
	for _, d := range []string{InstanceDir(state, id), filepath.Join(state, "zdirs", id)} {
		if _, err := os.Lstat(d); err == nil {
			t.Errorf("%s left", d)
		}
	}
	if _, err := os.Stat(InstanceDir(state, other)); err != nil {
		t.Error("another code's instance was removed")
	}
	if runrec.Alive(engine, 0) {
		t.Error("the engine process was not killed")
	}
}
