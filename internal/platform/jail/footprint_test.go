package jail

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
)

// rctlUsage is `rctl -u jail:NAME` output in the form rctl(8) prints it
// (usr.bin/rctl/rctl.c show_usage: the kernel's comma-separated
// resource=amount list, one a line, amounts unscaled without -h; the
// resources of FreeBSD 13/14 in the kernel's order). Not captured on a
// real FreeBSD here: none is reachable.
const rctlUsage = `cputime=21
datasize=69632
stacksize=143360
coredumpsize=0
memoryuse=4136960
memorylocked=0
maxproc=1
openfiles=256
vmemoryuse=13631488
pseudoterminals=0
swapuse=0
nthr=1
msgqqueued=0
msgqsize=0
nmsgq=0
nsem=0
nsemop=0
nshm=0
shmsize=0
wallclock=279
pcpu=0
readbps=0
writebps=0
readiops=0
writeiops=0
`

// rctlUsageHuman is the same with -h (as published in rctl examples):
// isobench never asks for it, and the parser must refuse it rather than
// read 4040K as 4040.
const rctlUsageHuman = "cputime=21\ndatasize=68K\nstacksize=140K\ncoredumpsize=0\nmemoryuse=4040K\n"

func TestParseRctlUsage(t *testing.T) {
	u, err := ParseRctlUsage(rctlUsage)
	if err != nil {
		t.Fatal(err)
	}
	if len(u) != 25 || u["memoryuse"] != 4136960 || u["cputime"] != 21 || u["wallclock"] != 279 || u["openfiles"] != 256 {
		t.Errorf("parsed %v", u)
	}
	for _, bad := range []string{rctlUsageHuman, "", "\n\n", "memoryuse 12\n", "=3\n", "cputime=-\n"} {
		if u, err := ParseRctlUsage(bad); err == nil {
			t.Errorf("ParseRctlUsage(%q) = %v, want an error", bad, u)
		}
	}
}

func TestParseDuKiB(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"8848\t/var/db/isobench/jail-3812/\n", 8848 << 10},
		{"0\t/var/db/isobench/jail-1\n", 0},
		{"12\t/a\n30\t/b\n", 42 << 10},
	} {
		got, err := ParseDuKiB(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDuKiB(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "du: /x: No such file or directory\n", "12K\t/a\n", "12\n"} {
		if got, err := ParseDuKiB(bad); err == nil {
			t.Errorf("ParseDuKiB(%q) = %d, want an error", bad, got)
		}
	}
}

func TestFootprintCommands(t *testing.T) {
	r := &recorder{out: map[string]string{
		"rctl -u": rctlUsage,
		"du -s":   "8848\t/state/jail-1\n",
	}}
	p := newTest(t, "jail:storage=volume", r)
	inst, err := p.Create(context.Background(), platform.Spec{Name: "f1"})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.Background())
	r.cmds = nil
	fp, err := inst.(platform.Footprinter).Footprint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fp.MemoryBytes != 4136960 || fp.CPUSeconds != 21 || fp.DiskBytes != 8848<<10 || len(fp.EnginePIDs) != 0 {
		t.Errorf("footprint %+v", fp)
	}
	dir := inst.(*instance).dir
	want := []string{"rctl -u jail:isob-f1", "du -s -k -x " + dir}
	if got := r.words(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands %q, want %q", got, want)
	}
}

func TestFootprintRacctDisabled(t *testing.T) {
	exit1 := &exec.ExitError{}
	r := &recorder{
		fail: map[string]error{"rctl -u": exit1},
		errs: map[string]string{"rctl -u": "rctl: RACCT/RCTL present, but disabled; enable using kern.racct.enable=1 tunable\n"},
	}
	p := newTest(t, "jail", r)
	inst, err := p.Create(context.Background(), platform.Spec{Name: "f2"})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.Background())
	_, err = inst.(platform.Footprinter).Footprint(context.Background())
	if !errors.Is(err, errRacctDisabled) || !strings.Contains(err.Error(), "/boot/loader.conf") {
		t.Errorf("racct off: %v", err)
	}

	// another rctl failure says what rctl said, without the racct advice
	r.errs["rctl -u"] = "rctl: rctl_get_racct: No such process\n"
	_, err = inst.(platform.Footprinter).Footprint(context.Background())
	if err == nil || errors.Is(err, errRacctDisabled) || !strings.Contains(err.Error(), "No such process") {
		t.Errorf("rctl failure: %v", err)
	}

	// rctl's output without the resources needed is an error, not zeros
	delete(r.fail, "rctl -u")
	r.out = map[string]string{"rctl -u": "maxproc=1\n", "du -s": "4\t/x\n"}
	if fp, err := inst.(platform.Footprinter).Footprint(context.Background()); err == nil {
		t.Errorf("footprint without memoryuse: %+v", fp)
	}
	if err := inst.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := inst.(platform.Footprinter).Footprint(context.Background()); err == nil {
		t.Error("footprint of a closed jail")
	}
}
