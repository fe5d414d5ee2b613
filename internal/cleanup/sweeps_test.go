package cleanup

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/runrec"
)

// TestScanUsesPlatformSweeps: what a platform's factory lists in its Sweep
// (platform.Factory.Sweep) is judged here: a dead run's instance is
// removed with its parts (instance first, its veth, then its directory),
// by its label's token or, without one, by the token in its spec name; a
// live run's instance and its parts are kept; a Sweep that fails is kept
// with why; with no registry in the options no Sweep is called.
func TestScanUsesPlatformSweeps(t *testing.T) {
	records := t.TempDir()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(records, strconv.Itoa(c.Process.Pid)+".json"),
		[]byte(`{"pid":`+strconv.Itoa(c.Process.Pid)+`,"start":1,"token":"dead02"}`), 0o644)
	live, err := runrec.Begin(records, runrec.Record{Token: "live02"})
	if err != nil {
		t.Fatal(err)
	}
	defer live.End()

	var removed []string
	rm := func(what string) func(context.Context) error {
		return func(context.Context) error { removed = append(removed, what); return nil }
	}
	called := 0
	sweep := func(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error) {
		called++
		if len(env.StateDirs) == 0 || env.StateDirs[0] != "/the/state" {
			t.Errorf("sweep got state dirs %v", env.StateDirs)
		}
		return []platform.Leftover{
			// parts may come before their instance
			{Kind: "dir", Name: "/the/state/z-volumes/isob-z00000001", Owner: "isob-z00000001", Remove: rm("dir 1")},
			{Kind: "z-instance", Name: "isob-z00000001", Token: "dead02", Remove: rm("instance 1")},
			{Kind: "veth", Name: "isvz00000001", Owner: "isob-z00000001", Remove: rm("veth 1")},
			{Kind: "z-instance", Name: "isob-z00000002", Token: "live02", Remove: rm("instance 2")},
			{Kind: "dir", Name: "/the/state/z-volumes/isob-z00000002", Owner: "isob-z00000002", Remove: rm("dir 2")},
			{Kind: "z-instance", Name: "isob-z00000003", SpecName: "r7dead02-1", Remove: rm("instance 3")},
		}, nil
	}
	reg := platform.NewRegistry(
		platform.Factory{Name: "zplat", Sweep: sweep},
		platform.Factory{Name: "broken", Sweep: func(context.Context, platform.SweepEnv) ([]platform.Leftover, error) {
			return nil, errors.New("no daemon")
		}},
		platform.Factory{Name: "plain"},
	)
	ctx := context.Background()
	o := Options{StateDirs: []string{"/the/state"}, RecordDir: records, TempDirs: []string{t.TempDir()}, QEMUDir: t.TempDir()}
	if _, err := Scan(ctx, o); err != nil || called != 0 {
		t.Fatalf("no registry: sweep called %d times (%v)", called, err)
	}
	o.Platforms = reg
	p, err := Scan(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var mine []Object
	for _, ob := range p.Objects {
		if strings.Contains(ob.Name, "z0000000") {
			mine = append(mine, ob)
		}
	}
	var got []string
	for _, ob := range mine {
		got = append(got, ob.Kind+" "+ob.Name)
		if ob.Owner == "" && !strings.Contains(ob.Why, "dead02") {
			t.Errorf("%s %s: why %q, want its dead run", ob.Kind, ob.Name, ob.Why)
		}
	}
	want := "z-instance isob-z00000001,z-instance isob-z00000003,veth isvz00000001,dir /the/state/z-volumes/isob-z00000001"
	if strings.Join(got, ",") != want {
		t.Errorf("planned %q\nwant    %q", strings.Join(got, ","), want)
	}
	keptBroken := false
	for _, k := range p.Kept {
		if strings.Contains(k.Name, "z00000002") {
			t.Errorf("a live run's %s %s reported kept (%s): a live run's objects are kept silently", k.Kind, k.Name, k.Why)
		}
		if k.Kind == "broken" && strings.Contains(k.Why, "no daemon") {
			keptBroken = true
		}
	}
	if !keptBroken {
		t.Errorf("a failed sweep is not kept with why: %+v", p.Kept)
	}
	if fails := Remove(ctx, &Plan{Objects: mine}); len(fails) > 0 {
		t.Fatal(fails)
	}
	if strings.Join(removed, ",") != "instance 1,instance 3,veth 1,dir 1" {
		t.Errorf("removed %v", removed)
	}
}

// TestOrderOf: a Sweep's kinds are removed in cleanup's order.
func TestOrderOf(t *testing.T) {
	for kind, want := range map[string]int{"lxd-instance": orderContainer, "docker-container": orderContainer, "veth": orderLink, "tap": orderLink,
		"cgroup": orderCgroup, "dir": orderDir, "volume": orderDir, "process": orderProcess, "mount": orderMount, "netns": orderNetns} {
		if got := orderOf(kind); got != want {
			t.Errorf("orderOf(%q) = %d, want %d", kind, got, want)
		}
	}
}

// TestScanJudgedLeftovers: an instance a Sweep judges itself
// (Leftover.Judge, QEMU's by its owner's pid) is removed with its parts
// when judged dead, whatever its token; one judged not dead is kept with
// the why it gives (its parts silently), and one judged live without a
// why is kept silently.
func TestScanJudgedLeftovers(t *testing.T) {
	var removed []string
	rm := func(what string) func(context.Context) error {
		return func(context.Context) error { removed = append(removed, what); return nil }
	}
	judge := func(dead bool, why string) func() (bool, string) { return func() (bool, string) { return dead, why } }
	reg := platform.NewRegistry(platform.Factory{Name: "jplat", Sweep: func(context.Context, platform.SweepEnv) ([]platform.Leftover, error) {
		return []platform.Leftover{
			{Kind: "tap", Name: "jtap1", Owner: "/j/isoq-1", Remove: rm("tap 1")},
			{Kind: "dir", Name: "/j/isoq-1", Judge: judge(true, "its owner j1 is gone"), Remove: rm("dir 1")},
			{Kind: "dir", Name: "/j/isoq-2", Token: "anydead", Judge: judge(false, "its record is bad"), Remove: rm("dir 2")},
			{Kind: "qemu-disk", Name: "/j/disk-2", Owner: "/j/isoq-2", Remove: rm("disk 2")},
			{Kind: "dir", Name: "/j/isoq-3", Judge: judge(false, ""), Remove: rm("dir 3")},
		}, nil
	}})
	p, err := Scan(context.Background(), Options{Platforms: reg, RecordDir: t.TempDir(), TempDirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	var mine []Object
	var got []string
	for _, o := range p.Objects {
		if strings.HasPrefix(o.Name, "/j/") || strings.HasPrefix(o.Name, "jtap") {
			mine = append(mine, o)
			got = append(got, o.Kind+" "+o.Name+" ("+o.Why+")")
		}
	}
	if want := "tap jtap1 (),dir /j/isoq-1 (its owner j1 is gone)"; strings.Join(got, ",") != want {
		t.Errorf("planned %q, want %q", strings.Join(got, ","), want)
	}
	var kept []string
	for _, k := range p.Kept {
		if strings.HasPrefix(k.Name, "/j/") {
			kept = append(kept, k.Name+": "+k.Why)
		}
	}
	if want := "/j/isoq-2: its record is bad"; strings.Join(kept, ",") != want {
		t.Errorf("kept %q, want %q", kept, want)
	}
	if fails := Remove(context.Background(), &Plan{Objects: mine}); len(fails) > 0 {
		t.Fatal(fails)
	}
	if strings.Join(removed, ",") != "tap 1,dir 1" {
		t.Errorf("removed %v", removed)
	}
}

// TestScanUntokenedLeftovers: an instance a Sweep lists without a run
// token (Leftover.Untokened, the local platforms') is decided by what it
// left: dead when its engine process was orphaned or its state directory
// was used only by dead runs, alive (kept silently) while its process has
// a live parent; the instance has nothing to remove itself, so its first
// part listed says why, and a runtime's container among its parts goes
// after its processes, even when listed first.
func TestScanUntokenedLeftovers(t *testing.T) {
	for _, tool := range []string{"bash", "sleep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("needs " + tool)
		}
	}
	records, dead := t.TempDir(), t.TempDir()
	pid := strconv.Itoa(deadPID(t))
	os.WriteFile(filepath.Join(records, pid+".json"), []byte(`{"pid":`+pid+`,"start":1,"token":"dead03","state_dir":"`+dead+`"}`), 0o644)
	orphan := startOrphan(t, "isob-u00000001")
	live := exec.Command("sleep", "600")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })

	var removed []string
	rm := func(what string) func(context.Context) error {
		return func(context.Context) error { removed = append(removed, what); return nil }
	}
	reg := platform.NewRegistry(platform.Factory{Name: "uplat", Sweep: func(context.Context, platform.SweepEnv) ([]platform.Leftover, error) {
		return []platform.Leftover{
			{Kind: "instance", Name: "isob-u00000001", Untokened: true},
			{Kind: "u-container", Name: "isob-u00000001", Owner: "isob-u00000001", Remove: rm("container 1")},
			{Kind: "process", Name: strconv.Itoa(orphan) + " engine", Owner: "isob-u00000001", PID: orphan, Remove: rm("process 1")},
			{Kind: "instance", Name: "isob-u00000002", Untokened: true, StateDir: dead},
			{Kind: "netns", Name: "isob-u00000002", Owner: "isob-u00000002", Remove: rm("netns 2")},
			{Kind: "dir", Name: dead + "/instances/isob-u00000002", Owner: "isob-u00000002", Remove: rm("dir 2")},
			{Kind: "instance", Name: "isob-u00000003", Untokened: true, StateDir: dead},
			{Kind: "process", Name: strconv.Itoa(live.Process.Pid) + " engine", Owner: "isob-u00000003", PID: live.Process.Pid, Remove: rm("process 3")},
		}, nil
	}})
	p, err := Scan(context.Background(), Options{Platforms: reg, RecordDir: records, TempDirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	var mine []Object
	var got []string
	for _, o := range p.Objects {
		if strings.Contains(o.Name, "isob-u") || strings.Contains(o.Name, " engine") {
			mine = append(mine, o)
			got = append(got, o.String())
		}
	}
	want := []string{
		"process " + strconv.Itoa(orphan) + " engine",
		"u-container isob-u00000001 (its engine process " + strconv.Itoa(orphan) + " outlived the isobench that started it)",
		"netns isob-u00000002 (its state directory " + dead + " was used only by dead runs)",
		"dir " + dead + "/instances/isob-u00000002",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("planned\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, k := range p.Kept {
		if strings.HasPrefix(k.Name, "isob-u") {
			t.Errorf("kept %s %s: %s", k.Kind, k.Name, k.Why)
		}
	}
	if fails := Remove(context.Background(), &Plan{Objects: mine}); len(fails) > 0 {
		t.Fatal(fails)
	}
	if strings.Join(removed, ",") != "process 1,container 1,netns 2,dir 2" {
		t.Errorf("removed %v", removed)
	}
}

// TestScanSweepsOnce: what two platforms' Sweeps both list (docker-in-vm's
// VM is a QEMU VM) is planned once, and every Sweep gets the temporary
// directories and whether this is 'isobench clean' (SweepEnv).
func TestScanSweepsOnce(t *testing.T) {
	var envs []platform.SweepEnv
	sweep := func(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error) {
		envs = append(envs, env)
		return []platform.Leftover{{Kind: "dir", Name: "/twice/vm", Judge: func() (bool, string) { return true, "gone" }, Remove: func(context.Context) error { return nil }}}, nil
	}
	reg := platform.NewRegistry(platform.Factory{Name: "vm-a", Sweep: sweep}, platform.Factory{Name: "vm-b", Sweep: sweep})
	temp := t.TempDir()
	for _, clean := range []bool{false, true} {
		envs = nil
		p, err := Scan(context.Background(), Options{Platforms: reg, RecordDir: t.TempDir(), TempDirs: []string{temp}, Clean: clean})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, o := range p.Objects {
			if o.Name == "/twice/vm" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("planned %d times, want once", n)
		}
		if len(envs) != 2 {
			t.Fatalf("%d sweeps, want 2", len(envs))
		}
		for _, e := range envs {
			if e.Clean != clean || !slices.Contains(e.TempDirs, temp) {
				t.Errorf("SweepEnv %+v: want Clean %v and temp dir %s", e, clean, temp)
			}
		}
	}
}
