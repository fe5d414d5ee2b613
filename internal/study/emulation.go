package study

import (
	"maps"
	"slices"
	"sort"

	"github.com/isobench/isobench/internal/report"
)

// A platform whose instances are virtual machines (qemu, docker-in-vm)
// runs under KVM or, where this host has none that works, under QEMU's TCG
// emulation: every guest instruction is translated, so its cells measure
// the emulator, not the hypervisor the paper ran. Such cells are said to
// be emulated wherever they appear (the plan, the terminal summary, the
// figures), and a finding that compares one is not comparable rather than
// agreeing or disagreeing.

// EmulatedNote is what an emulated platform is called (the report's
// words, so every output says the same).
const EmulatedNote = report.EmulatedNote

// NotComparable is a check's outcome when one of its sides is emulated.
const NotComparable = "not comparable"

// VMPlatform reports whether a platform label's instances are virtual
// machines (their facts say the accelerator).
func VMPlatform(label string) bool { return report.VMPlatform(label) }

// Accel reads the accelerator from a VM platform's facts: qemu's "accel",
// docker-in-vm's "vm.accel" ("" when they do not say).
func Accel(facts map[string]string) string { return report.Accel(facts) }

// EmulatedFrom returns, of labels, the VM platforms a run's fingerprint
// (the platforms' facts under "LABEL.KEY") says ran under TCG, with why
// (qemu's accel_reason).
func EmulatedFrom(fingerprint map[string]string, labels []string) map[string]string {
	return report.EmulatedFrom(fingerprint, labels)
}

// MarkEmulated records which platform labels ran emulated (label -> why);
// checks involving them are not comparable, and the report says so.
func (m *Meta) MarkEmulated(emulated map[string]string) {
	if m == nil {
		return
	}
	m.emulated = maps.Clone(emulated)
}

// Emulated returns the labels marked emulated, sorted.
func (m *Meta) Emulated() []string {
	if m == nil {
		return nil
	}
	out := slices.Collect(maps.Keys(m.emulated))
	sort.Strings(out)
	return out
}

// emulatedIn returns the platforms marked emulated (MarkEmulated) and
// those whose cells say they ran emulated (report.MarkEmulated, or their
// samples' tags), label -> why: a study drawn from a stored run knows its
// emulated platforms from the cells alone.
func (m *Meta) emulatedIn(cells []report.Cell) map[string]string {
	out := report.EmulatedLabels(cells)
	if m != nil {
		maps.Copy(out, m.emulated)
	}
	return out
}

// emulatedLabel reports whether a finding's label (maybe pinned,
// "qemu@1") names a platform of emulated (label -> why).
func emulatedLabel(emulated map[string]string, label string) bool {
	l, _ := SplitAt(label)
	_, ok := emulated[l]
	return ok
}
