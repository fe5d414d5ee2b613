package study

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/builtin"
)

func TestEmulatedFrom(t *testing.T) {
	fp := map[string]string{
		"qemu.accel": "tcg", "qemu.accel_reason": "KVM probe failed: hang",
		"docker-in-vm:cpus=2,memory=8g.vm.accel": "tcg", "docker-in-vm:cpus=2,memory=8g.vm.accel_reason": "/dev/kvm: no such file",
		"qemu:cpus=4.accel": "kvm",
		"lxc.accel":         "tcg", // not a VM platform: never emulated
	}
	got := EmulatedFrom(fp, []string{"native", "lxc", "qemu", "qemu:cpus=4", "docker-in-vm:cpus=2,memory=8g"})
	if len(got) != 2 || got["qemu"] != "KVM probe failed: hang" || got["docker-in-vm:cpus=2,memory=8g"] != "/dev/kvm: no such file" {
		t.Errorf("emulated %v", got)
	}
}

// A finding compared against an emulated platform is not comparable: it
// neither agrees nor disagrees, and the summary, the heading, the figure's
// notes and its legend say why.
func TestEmulatedFindingsAreNotComparable(t *testing.T) {
	f, cells := synthStudyCells(t, "002")
	before := Checks(f, cells)
	f.Study.MarkEmulated(map[string]string{"qemu": "KVM probe failed"})
	after := Checks(f, cells)
	if len(before) != len(after) {
		t.Fatalf("%d checks, then %d", len(before), len(after))
	}
	n := 0
	for i, c := range after {
		involves := c.A == "qemu" || c.B == "qemu" || strings.HasPrefix(c.A, "qemu@") || strings.HasPrefix(c.B, "qemu@")
		switch {
		case involves && c.Outcome != NotComparable:
			t.Errorf("%s %s vs %s: %s", c.Experiment, c.A, c.B, c.Outcome)
		case !involves && c.Outcome != before[i].Outcome:
			t.Errorf("%s %s vs %s changed: %s", c.Experiment, c.A, c.B, c.Outcome)
		case involves:
			n++
			if !strings.HasSuffix(c.Text(), "— "+EmulatedNote) {
				t.Errorf("check text %q", c.Text())
			}
		}
	}
	if n == 0 {
		t.Fatal("no check involves qemu")
	}
	var b bytes.Buffer
	CompareFindings(&b, f, cells)
	for _, s := range []string{"qemu: " + EmulatedNote + " (KVM probe failed)", "→ NOT COMPARABLE", "not comparable (" + EmulatedNote + ")"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("summary lacks %q", s)
		}
	}
	head, secs := Sections(f, cells, nil)
	if head.NotComparable != n {
		t.Errorf("heading counts %d not comparable, want %d", head.NotComparable, n)
	}
	page := sectionsPage(t, f, cells, nil)
	t4 := sectionHTML(t, page, "table4")
	note := html.EscapeString("qemu: " + EmulatedNote)
	for _, s := range []string{note, "<b>NOT COMPARABLE</b>", "not comparable (a side emulated)"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	if !strings.Contains(t4, note) {
		t.Errorf("table4 does not say qemu is emulated")
	}
	for _, s := range secs {
		if s.ID == "table4" && s.Marks["qemu"] != "emulated (TCG)" {
			t.Errorf("table4 marks %v", s.Marks)
		}
	}
	// A drawn figure names the emulated series in its legend.
	f3, c3 := synthStudyCells(t, "003")
	f3.Study.MarkEmulated(map[string]string{"lxc:cpus=2,init=system,memory=8g": "test"})
	if fig := sectionHTML(t, sectionsPage(t, f3, c3, nil), "fig3-astar"); !strings.Contains(fig, "lxc:cpus=2,init=system,memory=8g — emulated (TCG)") {
		t.Errorf("fig3-astar legend does not mark the emulated series")
	}
}

func TestPlanSaysWhatIsEmulated(t *testing.T) {
	f, _ := Load("002")
	q, _ := f.AtScale(ScaleQuick)
	p, err := NewPlan(q, builtin.Workloads(), builtin.Platforms())
	if err != nil {
		t.Fatal(err)
	}
	for accel, want := range map[string]string{
		"tcg: KVM probe failed": "qemu: " + EmulatedNote + " (KVM probe failed): its findings will be not comparable",
		"":                      "qemu: KVM or TCG is decided when the run starts",
		"kvm":                   "",
	} {
		p.Accel = map[string]string{"qemu": accel}
		var b bytes.Buffer
		p.Print(&b)
		if want != "" && !strings.Contains(b.String(), want) || want == "" && strings.Contains(b.String(), "qemu: ") {
			t.Errorf("accel %q: plan\n%s", accel, b.String())
		}
	}
}
