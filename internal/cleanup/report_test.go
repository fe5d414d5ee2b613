package cleanup

import (
	"bytes"
	"errors"
	"testing"

	"github.com/isobench/isobench/internal/runrec"
)

// What 'isobench clean --dry-run' prints for a plan (the dead runs, what
// would be removed with why, what is kept with why), and what 'clean'
// prints once it removed it, a failure included: the lines pinned.
func TestReportLines(t *testing.T) {
	p := &Plan{
		DeadRuns: []*runrec.Record{{Pid: 4242, Token: "r7dead02", DB: "/root/x.db", RunID: 3, StateDir: "/var/lib/isobench"}},
		Objects: []Object{
			{Kind: "container", Name: "isob-r7dead02-1", Why: "its run (token r7dead02) is dead: pid 4242 is gone"},
			{Kind: "veth", Name: "isvr7dead021", Owner: "isob-r7dead02-1"},
			{Kind: "dir", Name: "/var/lib/isobench/volumes/isob-r7dead02-1", Owner: "isob-r7dead02-1"},
		},
		Kept: []Kept{{Kind: "dir", Name: "/run/isobench/qemu/isoq-1", Why: "its disk is in /srv, which is no state directory of a recorded run: name it with --state-dir"}},
	}
	var dry bytes.Buffer
	Report(&dry, p, false, nil)
	want := "dead run: pid 4242 (token r7dead02, store /root/x.db, run 3, state /var/lib/isobench)\n" +
		"would remove container isob-r7dead02-1 (its run (token r7dead02) is dead: pid 4242 is gone)\n" +
		"would remove veth isvr7dead021\n" +
		"would remove dir /var/lib/isobench/volumes/isob-r7dead02-1\n" +
		"kept dir /run/isobench/qemu/isoq-1: its disk is in /srv, which is no state directory of a recorded run: name it with --state-dir\n"
	if dry.String() != want {
		t.Fatalf("dry run:\n%s\nwant:\n%s", dry.String(), want)
	}
	var done bytes.Buffer
	Report(&done, p, true, []Failure{{Object: p.Objects[1], Err: errors.New("device busy")}})
	want = "dead run: pid 4242 (token r7dead02, store /root/x.db, run 3, state /var/lib/isobench)\n" +
		"removed container isob-r7dead02-1 (its run (token r7dead02) is dead: pid 4242 is gone)\n" +
		"removed dir /var/lib/isobench/volumes/isob-r7dead02-1\n" +
		"kept dir /run/isobench/qemu/isoq-1: its disk is in /srv, which is no state directory of a recorded run: name it with --state-dir\n" +
		"failed to remove veth isvr7dead021: device busy\n"
	if done.String() != want {
		t.Fatalf("removed:\n%s\nwant:\n%s", done.String(), want)
	}
}
