package stats

import (
	"slices"
	"testing"
)

// TestOverallScoreStudy004 reproduces Table 2 of study 004 from medians
// built to give its normalised cells: CPU is a time (lower is better), the
// other rows are throughputs.
func TestOverallScoreStudy004(t *testing.T) {
	cells := map[string]map[string]float64{ // the study's normalised values
		RowIORead:  {"docker": 0.74, "lxc": 0.81, "lxd": 0.85},
		RowIOWrite: {"docker": 0.82, "lxc": 0.77, "lxd": 0.83},
		RowRAM:     {"docker": 0.98, "lxc": 0.97, "lxd": 0.99},
		RowCPU:     {"docker": 0.73, "lxc": 0.91, "lxd": 0.95},
	}
	nativeMedian := map[string]float64{RowIORead: 400, RowIOWrite: 300, RowRAM: 7176, RowCPU: 12.5}
	better := map[string]string{RowIORead: BetterHigher, RowIOWrite: BetterHigher, RowRAM: BetterHigher, RowCPU: BetterLower}
	medians := map[string]map[string]float64{}
	for row, ps := range cells {
		medians[row] = map[string]float64{"native": nativeMedian[row]}
		for p, c := range ps {
			if better[row] == BetterLower {
				medians[row][p] = nativeMedian[row] / c // slower time
			} else {
				medians[row][p] = nativeMedian[row] * c
			}
		}
	}
	tab, err := OverallScore(medians, better, "native")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tab.Rows, StudyRows()) {
		t.Errorf("rows %v, want %v", tab.Rows, StudyRows())
	}
	if !slices.Equal(tab.Platforms, []string{"native", "docker", "lxc", "lxd"}) {
		t.Errorf("platforms %v", tab.Platforms)
	}
	for row, ps := range cells {
		if tab.Score[row]["native"] != 1 {
			t.Errorf("%s: native scores %v, want 1", row, tab.Score[row]["native"])
		}
		for p, c := range ps {
			if !near(tab.Score[row][p], c, 1e-12) {
				t.Errorf("%s/%s: %v, want %v", row, p, tab.Score[row][p], c)
			}
		}
	}
	// The study's Summary and Overall performance rows.
	wantTotal := map[string]float64{"native": 4, "docker": 3.27, "lxc": 3.46, "lxd": 3.62}
	wantOverall := map[string]float64{"native": 1, "docker": 0.8175, "lxc": 0.865, "lxd": 0.905}
	for p := range wantTotal {
		if !near(tab.Total[p], wantTotal[p], 1e-9) || !near(tab.Overall[p], wantOverall[p], 1e-9) {
			t.Errorf("%s: total %v overall %v, want %v %v", p, tab.Total[p], tab.Overall[p], wantTotal[p], wantOverall[p])
		}
	}
	if len(tab.Incomplete) != 0 {
		t.Errorf("incomplete %v", tab.Incomplete)
	}
}

func TestOverallScoreBetterThanNative(t *testing.T) {
	// A platform may beat native: its score exceeds 1 in either direction.
	medians := map[string]map[string]float64{
		RowCPU: {"native": 10, "jail": 8},    // 8 s instead of 10 s
		RowRAM: {"native": 100, "jail": 110}, // 110 MB/s instead of 100
	}
	tab, err := OverallScore(medians, map[string]string{RowCPU: BetterLower, RowRAM: BetterHigher}, "native")
	if err != nil {
		t.Fatal(err)
	}
	if !near(tab.Score[RowCPU]["jail"], 1.25, 1e-12) || !near(tab.Score[RowRAM]["jail"], 1.1, 1e-12) || !near(tab.Total["jail"], 2.35, 1e-12) {
		t.Errorf("got %+v", tab)
	}
}

func TestOverallScoreMissingAndErrors(t *testing.T) {
	better := map[string]string{RowCPU: BetterLower, RowRAM: BetterHigher, "net": BetterHigher}
	medians := map[string]map[string]float64{
		RowCPU: {"native": 10, "vm": 12, "docker": 10.1},
		RowRAM: {"native": 100, "vm": 90, "docker": 0}, // a zero is not usable
		"net":  {"native": 5, "vm": 4, "docker": 5},
	}
	tab, err := OverallScore(medians, better, "native")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tab.Rows, []string{RowCPU, RowRAM, "net"}) {
		t.Errorf("rows %v: study rows first, then others", tab.Rows)
	}
	if !slices.Equal(tab.Incomplete, []string{"docker"}) {
		t.Errorf("incomplete %v, want [docker]", tab.Incomplete)
	}
	if _, ok := tab.Total["docker"]; ok {
		t.Error("an incomplete platform must have no total")
	}
	if _, ok := tab.Score[RowRAM]["docker"]; ok {
		t.Error("a zero median must leave the cell empty")
	}
	if !near(tab.Total["vm"], 10.0/12+0.9+0.8, 1e-12) || !near(tab.Overall["vm"], (10.0/12+0.9+0.8)/3, 1e-12) {
		t.Errorf("vm: total %v overall %v", tab.Total["vm"], tab.Overall["vm"])
	}

	bad := []struct {
		name    string
		medians map[string]map[string]float64
		better  map[string]string
	}{
		{"no rows", nil, better},
		{"no direction", map[string]map[string]float64{"disk": {"native": 1}}, better},
		{"no native", map[string]map[string]float64{RowCPU: {"vm": 1}}, better},
		{"zero native", map[string]map[string]float64{RowCPU: {"native": 0, "vm": 1}}, better},
	}
	for _, b := range bad {
		if _, err := OverallScore(b.medians, b.better, "native"); err == nil {
			t.Errorf("%s: want an error", b.name)
		}
	}
}
