package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	s := State{Cell: "cpu ×1", CellIndex: 1, Cells: 4, Target: "docker", Rep: 2, Reps: 5, Done: 10, Total: 40, Elapsed: 20 * time.Second}
	got := Line(s, Width)
	want := "[#####---------------] cell 2/4 cpu ×1 on docker  25% rep 3/5, ~1m0s left"
	if got != want {
		t.Fatalf("line\n got %q\nwant %q", got, want)
	}
	// Skipped (resumed) repetitions take no time: left out of the rate.
	s.Skipped = 5
	if got := Line(s, Width); !strings.HasSuffix(got, "~2m0s left") {
		t.Fatalf("with skipped repetitions: %q", got)
	}
	s.Done, s.Skipped = 0, 0
	if got := Line(s, Width); !strings.HasSuffix(got, "time left: ?") {
		t.Fatalf("nothing done: %q", got)
	}
	s.Rep = -1
	s.Target = strings.Repeat("docker:cpus=1,memory=2g,", 8)
	got = Line(s, 80)
	if n := utf8.RuneCountInString(got); n > 80 || !strings.Contains(got, "…") || !strings.Contains(got, "warm-up") {
		t.Fatalf("long line not cut to 80 (%d): %q", n, got)
	}
}

func TestDisplay(t *testing.T) {
	var tty, plain bytes.Buffer
	dt, dp := New(&tty, true), New(&plain, false)
	for i, s := range []State{
		{Cell: "cpu ×1", CellIndex: 0, Cells: 2, Target: "native", Reps: 2, Total: 8},
		{Cell: "cpu ×1", CellIndex: 0, Cells: 2, Target: "docker", Reps: 2, Done: 1, Total: 8, Elapsed: time.Second},
		{Cell: "startup ×1", CellIndex: 1, Cells: 2, Target: "native", Reps: 2, Done: 4, Total: 8, Elapsed: 4 * time.Second},
	} {
		dt.Update(s)
		dp.Update(s)
		if i == 1 {
			dt.Note("a note")
			dp.Note("a note")
		}
	}
	dt.Done()
	dp.Done()
	if !strings.Contains(tty.String(), "\r\033[K[") || !strings.HasSuffix(tty.String(), "\r\033[K") || !strings.Contains(tty.String(), "\r\033[Ka note\n") {
		t.Fatalf("terminal output %q", tty.String())
	}
	want := "cell 1/2: cpu ×1, 2 repetitions per platform (0/8 done)\na note\ncell 2/2: startup ×1, 2 repetitions per platform (4/8 done, ~4s left)\n"
	if plain.String() != want {
		t.Fatalf("plain output\n got %q\nwant %q", plain.String(), want)
	}
}
