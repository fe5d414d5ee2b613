package cleanup

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isobench/isobench/internal/runrec"
)

func TestRunRecords(t *testing.T) {
	dir := t.TempDir()
	r, err := runrec.Begin(dir, runrec.Record{Token: "abc123", StateDir: "/s", DB: "x.db"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetRunID(7); err != nil {
		t.Fatal(err)
	}
	list := runrec.List(dir)
	if len(list) != 1 || list[0].Pid != os.Getpid() || list[0].RunID != 7 || list[0].Token != "abc123" || !filepath.IsAbs(list[0].DB) {
		t.Fatalf("records %+v", list)
	}
	if !list[0].Alive() {
		t.Fatal("this process's record is not alive")
	}
	if runrec.Alive(os.Getpid(), list[0].Start+1) {
		t.Fatal("a process with another start time (a reused pid) counted alive")
	}
	// a process that ended is dead
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if runrec.Alive(c.Process.Pid, 0) {
		t.Fatalf("exited process %d counted alive", c.Process.Pid)
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
	if len(runrec.List(dir)) != 0 {
		t.Fatal("record left after End")
	}
}

// startOrphan starts a process whose command line names id and whose
// parent exits at once, as an engine process does when the isobench that
// started it is killed; it returns its pid.
func startOrphan(t *testing.T, id string) int {
	t.Helper()
	out, err := exec.Command("bash", "-c", `(exec -a `+id+` sleep 600) >/dev/null 2>&1 & echo $!`).Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("kill", "-9", strconv.Itoa(pid)).Run() })
	waitArgv0(t, pid, id)
	return pid
}

// waitArgv0 waits until process pid has exec'd into argv[0] == name: until
// then its command line is bash's, or empty while the exec is under way,
// and a scan taken in that window does not see the process as the
// instance's (CI caught this once: the live instance was planned for
// removal because its process was mid-exec).
func waitArgv0(t *testing.T, pid int, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if argv := strings.Split(string(b), "\x00"); argv[0] == name {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not exec as %s within 10s (cmdline %q)", pid, name, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestScanFindsADeadRunsInstance: a run recorded as dead (its process
// exited), with an instance directory in its state directory and an
// engine process orphaned by it, is found and removed; an instance in the
// same state directory whose engine process has a live parent (this test)
// is kept.
func TestScanFindsADeadRunsInstance(t *testing.T) {
	for _, tool := range []string{"bash", "sleep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("needs " + tool)
		}
	}
	records := t.TempDir()
	state := t.TempDir()
	// the dead run: a record written for a process that has exited
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(records, strconv.Itoa(c.Process.Pid)+".json"),
		[]byte(`{"pid":`+strconv.Itoa(c.Process.Pid)+`,"start":1,"token":"dead01","state_dir":"`+state+`"}`), 0o644)
	deadID, liveID := "isob-t0badc0de", "isob-t00c0ffee"
	for _, id := range []string{deadID, liveID} {
		if err := os.MkdirAll(filepath.Join(state, "instances", id, "upper"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	orphan := startOrphan(t, deadID)
	live := exec.Command("bash", "-c", `exec -a `+liveID+` sleep 600`)
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	waitArgv0(t, live.Process.Pid, liveID)

	ctx := context.Background()
	p, err := Scan(ctx, Options{StateDirs: []string{state}, RecordDir: records, TempDirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, o := range p.Objects {
		if strings.Contains(o.Name, liveID) {
			t.Errorf("live instance's %s %s planned for removal (%s)", o.Kind, o.Name, o.Why)
		}
		if strings.Contains(o.Name, deadID) {
			found = append(found, o.Kind)
		}
	}
	if !strings.Contains(strings.Join(found, " "), "process") || !strings.Contains(strings.Join(found, " "), "dir") {
		t.Fatalf("dead instance: found %v, want its process and its directory", found)
	}
	if len(p.DeadRuns) != 1 || p.DeadRuns[0].Token != "dead01" {
		t.Fatalf("dead runs %+v", p.DeadRuns)
	}
	var out bytes.Buffer
	Report(&out, p, false, nil)
	if !strings.Contains(out.String(), "would remove process "+strconv.Itoa(orphan)) {
		t.Errorf("dry-run report lacks the orphan:\n%s", out.String())
	}
	// only this test's objects are removed
	var mine []Object
	for _, o := range p.Objects {
		if strings.Contains(o.Name, deadID) {
			mine = append(mine, o)
		}
	}
	p.Objects = mine
	if fails := Remove(ctx, p); len(fails) > 0 {
		t.Fatalf("failures: %v", fails)
	}
	if _, err := os.Stat(filepath.Join(state, "instances", deadID)); err == nil {
		t.Error("dead instance's directory left")
	}
	if runrec.Alive(orphan, 0) {
		t.Error("orphaned engine process left running")
	}
	if _, err := os.Stat(filepath.Join(state, "instances", liveID)); err != nil {
		t.Error("live instance's directory removed")
	}
	if live.ProcessState != nil || !runrec.Alive(live.Process.Pid, 0) {
		t.Error("live instance's process killed")
	}
	if len(runrec.List(records)) != 0 {
		t.Error("dead run's record left")
	}
}

// TestScanFindsADeadRunsContainers: Docker and Podman containers labelled
// with a dead run's token are found and removed; one with a live run's
// token is kept.
func TestScanFindsADeadRunsContainers(t *testing.T) {
	for _, eng := range []string{"docker", "podman"} {
		t.Run(eng, func(t *testing.T) {
			if _, err := exec.LookPath(eng); err != nil {
				t.Skipf("no %s", eng)
			}
			img, _ := exec.Command(eng, "images", "--format", "{{.Repository}}:{{.Tag}}").Output()
			ref := ""
			for _, l := range strings.Fields(string(img)) {
				if strings.Contains(l, "isobench/minimal:") {
					ref = l
					break
				}
			}
			if ref == "" {
				t.Skipf("no isobench/minimal image in %s to create a container from", eng)
			}
			records := t.TempDir()
			c := exec.Command("true")
			if err := c.Run(); err != nil {
				t.Fatal(err)
			}
			dead := "d" + strconv.Itoa(c.Process.Pid%100000)
			for len(dead) < 6 {
				dead += "0"
			}
			dead = dead[:6]
			os.WriteFile(filepath.Join(records, "dead.json"), []byte(`{"pid":`+strconv.Itoa(c.Process.Pid)+`,"start":1,"token":"`+dead+`"}`), 0o644)
			live, err := runrec.Begin(records, runrec.Record{Token: "a11ve0"})
			if err != nil {
				t.Fatal(err)
			}
			defer live.End()
			names := map[string]string{dead: "isobench-cleanup-test-" + dead, "a11ve0": "isobench-cleanup-test-live-" + dead}
			for tok, name := range names {
				if out, err := exec.Command(eng, "create", "--label", "isobench=1", "--label", "isobench.run="+tok, "--name", name, ref, "/bin/true").CombinedOutput(); err != nil {
					t.Fatalf("%s create: %v: %s", eng, err, out)
				}
				t.Cleanup(func() { exec.Command(eng, "rm", "-f", name).Run() })
			}
			ctx := context.Background()
			p, err := Scan(ctx, Options{RecordDir: records, StateDirs: []string{t.TempDir()}, TempDirs: []string{t.TempDir()}})
			if err != nil {
				t.Fatal(err)
			}
			var mine []Object
			for _, o := range p.Objects {
				switch o.Name {
				case names[dead]:
					mine = append(mine, o)
				case names["a11ve0"]:
					t.Errorf("live run's container planned for removal: %s", o)
				}
			}
			if len(mine) != 1 || mine[0].Kind != eng+"-container" {
				t.Fatalf("dead run's container: found %v", mine)
			}
			if fails := Remove(ctx, &Plan{Objects: mine}); len(fails) > 0 {
				t.Fatal(fails)
			}
			out, _ := exec.Command(eng, "ps", "-a", "--filter", "label=isobench.run="+dead, "--format", "{{.Names}}").Output()
			if strings.TrimSpace(string(out)) != "" {
				t.Errorf("left: %s", out)
			}
			out, _ = exec.Command(eng, "ps", "-a", "--filter", "name="+names["a11ve0"], "--format", "{{.Names}}").Output()
			if strings.TrimSpace(string(out)) != names["a11ve0"] {
				t.Errorf("live run's container gone: %q", out)
			}
		})
	}
}
