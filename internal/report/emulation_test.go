package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/stats"
)

// emulatedCells are a run where qemu and docker-in-vm ran under TCG: the
// startup cells (whose samples carry no instance facts) are known
// emulated from the run's fingerprint, docker-in-vm's cpu cells from
// their samples' tags.
func emulatedCells() []Cell {
	ss := append(synthSamples(1, 14, []int{1}, 6, []synthPlatform{{"native", "", 1}, {"qemu", "", 1 / 300.0}, {"docker", "", 1 / 58.0}}, startupMetrics),
		synthSamples(1, 15, []int{1}, 6, []synthPlatform{{"native", "", 1}, {"qemu", "", 0.3}, {"docker-in-vm", "cpus=2", 0.35}}, synthMetrics[:1])...)
	for i := range ss {
		if ss[i].Platform == "docker-in-vm" {
			ss[i].Tags = map[string]string{"vm.accel": "tcg", "vm.accel_reason": "/dev/kvm: no such file"}
		}
	}
	cells := Cells(ss, Options{Baseline: "native", Stats: stats.Options{Seed: 1}})
	MarkEmulated(cells, map[string]string{"qemu.accel": "tcg", "qemu.accel_reason": "KVM probe failed: hang", "docker.accel": "tcg"})
	return cells
}

// A cell is emulated when its platform is a VM that ran under TCG: from
// its samples' tags (every cell of that platform, as the accelerator is
// settled once per run) or from the run's fingerprint; never a container
// platform, never a VM under KVM.
func TestEmulatedCells(t *testing.T) {
	n := 0
	for _, c := range emulatedCells() {
		want := map[string]string{"qemu": "KVM probe failed: hang", "docker-in-vm:cpus=2": "/dev/kvm: no such file"}[c.Label()]
		if c.Emulated != want {
			t.Errorf("%s %s: emulated %q, want %q", c.Label(), c.Metric, c.Emulated, want)
		}
		if want != "" {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no emulated cell")
	}
	kvm := Cells(synthSamples(1, 1, []int{1}, 3, []synthPlatform{{"native", "", 1}, {"qemu", "", 0.9}}, synthMetrics[:1]), Options{Baseline: "native"})
	MarkEmulated(kvm, map[string]string{"qemu.accel": "kvm"})
	if em := EmulatedLabels(kvm); len(em) != 0 {
		t.Errorf("under KVM: emulated %v", em)
	}
}

// Every output of a run with an emulated cell says so: the terminal
// summary (each such line and a note naming why), the table, Markdown,
// JSON and the HTML page (from the Doc's fingerprint alone).
func TestEmulatedInEveryOutput(t *testing.T) {
	cells := emulatedCells()
	var sum bytes.Buffer
	if err := Summary(&sum, cells, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"qemu: " + EmulatedNote + " (KVM probe failed: hang)",
		"docker-in-vm:cpus=2: " + EmulatedNote + " (/dev/kvm: no such file)",
	} {
		if !strings.Contains(sum.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, sum.String())
		}
	}
	for _, line := range strings.Split(sum.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.Contains(line, EmulatedNote) {
			continue
		}
		marked := strings.HasSuffix(line, "— "+EmulatedMark)
		if emu := f[0] == "qemu" || f[0] == "docker-in-vm:cpus=2"; emu != marked {
			t.Errorf("summary line %q: marked %v", line, marked)
		}
	}
	var tab bytes.Buffer
	if err := Table(&tab, cells); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tab.String(), "qemu: "+EmulatedNote) || !strings.Contains(tab.String(), "— "+EmulatedMark) {
		t.Errorf("table does not mark qemu:\n%s", tab.String())
	}

	// The renderers of a Doc mark the cells its fingerprint names.
	d := goldenDoc(7)
	for _, c := range d.Cells {
		if c.Emulated != "" {
			t.Fatalf("goldenDoc's cells are marked already")
		}
	}
	var md, js, page bytes.Buffer
	if err := Markdown(&md, d); err != nil {
		t.Fatal(err)
	}
	if err := JSONL(&js, d); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&page, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "qemu:cpus=1: "+EmulatedNote) {
		t.Errorf("markdown does not say qemu:cpus=1 is emulated")
	}
	if !strings.Contains(page.String(), "qemu:cpus=1: emulated (TCG): not the paper&#39;s hypervisor") {
		t.Errorf("the page does not say qemu:cpus=1 is emulated")
	}
	for _, line := range strings.Split(strings.TrimSpace(js.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["emulated"]; ok != (m["platform"] == "qemu") {
			t.Errorf("json emulated %v on %v", m["emulated"], m["platform"])
		}
	}
	for _, c := range d.Cells {
		if c.Emulated != "" {
			t.Fatalf("a renderer marked the caller's cells")
		}
	}
}
