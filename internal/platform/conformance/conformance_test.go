package conformance

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
)

func TestParseCgroupLimits(t *testing.T) {
	for _, c := range []struct {
		out  string
		cpus float64
		mem  int64
		ok   bool
	}{
		{"v1\n100000\n100000\n268435456\n", 1, 268435456, true},
		{"v1\n-1\n100000\n9223372036854771712\n", -1, -1, true},
		{"v2\n150000 100000\n536870912\n", 1.5, 536870912, true},
		{"v2\nmax 100000\nmax\n", -1, -1, true},
		{"v2\nmax 100000\n", 0, 0, false},
		{"v3\n1\n2\n3\n", 0, 0, false},
		{"v1\nx\n100000\n1\n", 0, 0, false},
		{"v1\n100\n0\n1\n", 0, 0, false},
	} {
		cpus, mem, err := parseCgroupLimits(c.out)
		if (err == nil) != c.ok || cpus != c.cpus || mem != c.mem {
			t.Errorf("parseCgroupLimits(%q) = %v, %v, %v; want %v, %v ok=%v", c.out, cpus, mem, err, c.cpus, c.mem, c.ok)
		}
	}
}

func TestDiff(t *testing.T) {
	added, gone := diff([]string{"a", "b"}, []string{"b", "d", "c"})
	if !slices.Equal(added, []string{"c", "d"}) || !slices.Equal(gone, []string{"a"}) {
		t.Errorf("diff = %q, %q", added, gone)
	}
	if a, g := diff(nil, nil); a != nil || g != nil {
		t.Errorf("diff of nothing = %q, %q", a, g)
	}
}

func TestRequired(t *testing.T) {
	t.Setenv(RequireEnv, "native, docker")
	if !Required("docker") || !Required("native") || Required("lxc") {
		t.Error("list not honoured")
	}
	t.Setenv(RequireEnv, "all")
	if !Required("qemu") {
		t.Error("all not honoured")
	}
	t.Setenv(RequireEnv, "")
	if Required("docker") {
		t.Error("empty list requires docker")
	}
}

func TestHasHello(t *testing.T) {
	if !hasHello("noise\n{\"event\":\"hello\"}\n") || hasHello("{\"event\":\"ready\"}\nhello\n") {
		t.Error("hasHello")
	}
}

func TestConfinement(t *testing.T) {
	status := "Name:\tcat\nUmask:\t0022\nCapInh:\t0000000000000000\nCapPrm:\t00000000a80425fb\n" +
		"CapEff:\t00000000a80425fb\nCapBnd:\t00000000a80425fb\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n"
	f, err := Confinement(status)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cap_eff": "00000000a80425fb", "cap_bnd": "00000000a80425fb", "seccomp": "2", "no_new_privs": "1"}
	if !maps.Equal(f, want) {
		t.Errorf("Confinement = %v, want %v", f, want)
	}
	if _, err := Confinement("Name:\tcat\nCapEff:\t0\n"); err == nil {
		t.Error("a status without CapBnd and Seccomp was accepted")
	}
}

func TestDiffConfinement(t *testing.T) {
	got := DockerConfinement()
	got["cwd"] = "/"
	if d := DiffConfinement(got); len(d) != 0 {
		t.Errorf("Docker's own confinement differs: %q", d)
	}
	// not readable on every host: left out, not a difference
	delete(got, "devices_list")
	delete(got, "seccomp_filters")
	if d := DiffConfinement(got); len(d) != 0 {
		t.Errorf("without devices_list and seccomp_filters: %q", d)
	}
	got["seccomp_filters"] = "2" // the engine's filter on top of Docker's
	got["cap_bnd"] = "000001ffffffffff"
	got["cwd"] = "(unreachable)/var/lib"
	delete(got, "seccomp_probe")
	d := DiffConfinement(got)
	if len(d) != 4 || !strings.HasPrefix(d[0], "cap_bnd=") || !strings.HasPrefix(d[1], "cwd=") ||
		!strings.HasPrefix(d[2], "seccomp_filters=") || !strings.HasPrefix(d[3], "seccomp_probe=") {
		t.Errorf("differences %q", d)
	}
	if f, err := ParseProbe(`{"cap_eff":"00000000a80425fb"}` + "\n"); err != nil || f["cap_eff"] != "00000000a80425fb" {
		t.Errorf("ParseProbe: %v, %v", f, err)
	}
	if _, err := ParseProbe("not json"); err == nil {
		t.Error("ParseProbe accepted garbage")
	}
}

// TestSweepLeftovers: without a Leftovers function the suite lists what
// the platform's Sweep lists, searching its state directory.
func TestSweepLeftovers(t *testing.T) {
	var got platform.SweepEnv
	sweep := func(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error) {
		got = env
		return []platform.Leftover{{Kind: "z-instance", Name: "isob-z1"}, {Kind: "dir", Name: "/s/z/isob-z1", Owner: "isob-z1"}}, nil
	}
	list, err := sweepLeftovers(sweep, "/s")(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(list, ",") != "z-instance isob-z1,dir /s/z/isob-z1" || len(got.StateDirs) != 1 || got.StateDirs[0] != "/s" {
		t.Errorf("listed %q searching %v", list, got.StateDirs)
	}
	if _, err := sweepLeftovers(func(context.Context, platform.SweepEnv) ([]platform.Leftover, error) {
		return nil, errors.New("no daemon")
	}, "")(context.Background()); err == nil {
		t.Error("a failed sweep is no error")
	}
}

// TestSplitGone: an engine pid gone at the check is an error only when a
// later footprint names it again.
func TestSplitGone(t *testing.T) {
	alive := map[int]bool{10: true, 12: true}
	gone := missingPIDs([]int{10, 11, 12, 13}, func(p int) bool { return alive[p] })
	if !slices.Equal(gone, []int{11, 13}) {
		t.Fatalf("missingPIDs = %v, want [11 13]", gone)
	}
	bogus, ended := splitGone(gone, []int{10, 13})
	if !slices.Equal(bogus, []int{13}) || !slices.Equal(ended, []int{11}) {
		t.Errorf("splitGone = bogus %v, ended %v; want [13], [11]", bogus, ended)
	}
}
