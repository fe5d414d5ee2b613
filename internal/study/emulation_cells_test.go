package study

import (
	"bytes"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/report"
)

// 'isobench report --study ID' draws a stored run: its cells know which
// VM platforms ran under TCG (report.MarkEmulated from the run's
// fingerprint, or their samples' tags), and the findings printed after
// the table and the study's sections say so without MarkEmulated.
func TestEmulatedFromCells(t *testing.T) {
	f, cells := synthStudyCells(t, "002")
	report.MarkEmulated(cells, map[string]string{"qemu.accel": "tcg", "qemu.accel_reason": "KVM probe failed: hang"})
	checks := Checks(f, cells)
	n := 0
	for _, c := range checks {
		involves := c.A == "qemu" || c.B == "qemu" || strings.HasPrefix(c.A, "qemu@") || strings.HasPrefix(c.B, "qemu@")
		if involves != (c.Outcome == NotComparable) {
			t.Errorf("%s %s vs %s: %s", c.Experiment, c.A, c.B, c.Outcome)
		}
		if involves {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no check involves qemu")
	}
	var b bytes.Buffer
	CompareFindings(&b, f, cells)
	out := b.String()
	for _, s := range []string{"qemu: " + EmulatedNote + " (KVM probe failed: hang); its comparisons are not comparable", "→ NOT COMPARABLE", "not comparable (" + EmulatedNote + ")"} {
		if !strings.Contains(out, s) {
			t.Errorf("findings lack %q", s)
		}
	}
	head, secs := Sections(f, cells, nil)
	if head.NotComparable != n {
		t.Errorf("heading counts %d not comparable, want %d", head.NotComparable, n)
	}
	if !strings.Contains(strings.Join(head.Notes, "\n"), "qemu: "+EmulatedNote) {
		t.Errorf("heading notes %q", head.Notes)
	}
	marked := false
	for _, s := range secs {
		if s.Marks["qemu"] == report.EmulatedMark {
			marked = true
		}
	}
	if !marked {
		t.Error("no section marks qemu emulated")
	}
}
