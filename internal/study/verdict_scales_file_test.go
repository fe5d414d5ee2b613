package study

import (
	"slices"
	"testing"
)

// A built-in study written out at a scale ('study show 004 > s.yaml') and
// read back has lost the paper's repetitions (kept unexported by AtScale);
// its plan still names the same scales that give verdicts as the built-in's
// ('run s.yaml --dry-run' said "scales that do: standard" where 'study run
// 004 --dry-run' said "paper, standard").
func TestVerdictScalesOfAShownFile(t *testing.T) {
	for _, id := range IDs() {
		b, err := Load(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, scale := range []string{"standard", "quick"} {
			at, err := b.AtScale(scale)
			if err != nil {
				continue
			}
			shown := at.clone()
			shown.Study.paperReps = "" // as read back from the file
			if got, want := shown.VerdictScales(), at.VerdictScales(); !slices.Equal(got, want) {
				t.Errorf("study %s at %s read back: verdict scales %v, want %v", id, scale, got, want)
			}
		}
	}
}
