// Package progress shows how far a run is: on a terminal one line redrawn
// in place (a bar, the cell, the platform, the repetition and the time
// left), elsewhere (a log, a pipe, CI) plain lines, one as each cell
// starts, and notes as lines in both cases.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// State is where a run is.
type State struct {
	Cell      string // e.g. "cpu ×2"
	CellIndex int    // 0-based
	Cells     int
	Target    string // the platform
	Rep       int    // 0-based among measured repetitions; negative for warm-ups
	Reps      int
	Done      int // repetitions finished (all platforms)
	Total     int // repetitions planned
	Elapsed   time.Duration
	// Skipped are repetitions counted in Done that took no time (a
	// resumed run's finished ones): left out of the rate.
	Skipped int
}

// Display renders States to a writer.
type Display struct {
	w     io.Writer
	tty   bool
	width int

	mu       sync.Mutex
	drawn    bool // a bar is on the current line
	lastCell int
}

// Width is the terminal width assumed for the bar line.
const Width = 100

// New returns a display on w; tty says whether w is a terminal.
func New(w io.Writer, tty bool) *Display {
	return &Display{w: w, tty: tty, width: Width, lastCell: -1}
}

// Left estimates the time left from the rate so far.
func Left(s State) (time.Duration, bool) {
	ran := s.Done - s.Skipped
	if ran <= 0 || s.Total <= s.Done {
		return 0, s.Total > 0 && s.Total <= s.Done
	}
	return time.Duration(float64(s.Elapsed) / float64(ran) * float64(s.Total-s.Done)), true
}

// Line is the text of the bar line for s (without control characters).
func Line(s State, width int) string {
	frac := 0.0
	if s.Total > 0 {
		frac = min(1, float64(s.Done)/float64(s.Total))
	}
	const barLen = 20
	full := int(frac*barLen + 0.5)
	bar := "[" + strings.Repeat("#", full) + strings.Repeat("-", barLen-full) + "]"
	rep := fmt.Sprintf("rep %d/%d", s.Rep+1, s.Reps)
	if s.Rep < 0 {
		rep = "warm-up"
	}
	eta := "time left: ?"
	if left, ok := Left(s); ok {
		eta = "~" + roundDur(left).String() + " left"
	}
	tail := fmt.Sprintf(" %3.0f%% %s, %s", 100*frac, rep, eta)
	head := fmt.Sprintf("%s cell %d/%d %s on %s", bar, s.CellIndex+1, s.Cells, s.Cell, s.Target)
	if n := utf8.RuneCountInString(head) + utf8.RuneCountInString(tail); width > 0 && n > width {
		r := []rune(head)
		keep := max(len(r)-(n-width)-1, barLen+2)
		if keep < len(r) {
			head = string(r[:keep]) + "…"
		}
	}
	return head + tail
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	}
	return d.Round(time.Second)
}

// Update shows s: on a terminal the bar line is redrawn; otherwise a line
// is printed when a new cell starts.
func (d *Display) Update(s State) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tty {
		fmt.Fprint(d.w, "\r\033[K"+Line(s, d.width))
		d.drawn = true
		return
	}
	if s.CellIndex == d.lastCell {
		return
	}
	d.lastCell = s.CellIndex
	eta := ""
	if left, ok := Left(s); ok {
		eta = fmt.Sprintf(", ~%s left", roundDur(left))
	}
	fmt.Fprintf(d.w, "cell %d/%d: %s, %d repetitions per platform (%d/%d done%s)\n", s.CellIndex+1, s.Cells, s.Cell, s.Reps, s.Done, s.Total, eta)
}

// Note prints a line (above the bar on a terminal, which the next Update
// redraws).
func (d *Display) Note(msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	fmt.Fprintln(d.w, msg)
}

// Done clears the bar line, so what follows starts on a clean line.
func (d *Display) Done() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
}

func (d *Display) clear() {
	if d.tty && d.drawn {
		fmt.Fprint(d.w, "\r\033[K")
		d.drawn = false
	}
}
