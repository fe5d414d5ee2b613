package study

import (
	"maps"
	"slices"
	"sort"
	"strings"
)

// A platform whose instances are virtual machines (qemu, docker-in-vm)
// runs under KVM or, where this host has none that works, under QEMU's TCG
// emulation: every guest instruction is translated, so its cells measure
// the emulator, not the hypervisor the paper ran. Such cells are said to
// be emulated wherever they appear (the plan, the terminal summary, the
// figures), and a finding that compares one is not comparable rather than
// agreeing or disagreeing.

// EmulatedNote is what an emulated platform is called.
const EmulatedNote = "emulated (TCG): not the paper's hypervisor"

// NotComparable is a check's outcome when one of its sides is emulated.
const NotComparable = "not comparable"

// VMPlatform reports whether a platform label's instances are virtual
// machines (their facts say the accelerator).
func VMPlatform(label string) bool {
	name, _, _ := strings.Cut(label, ":")
	return name == "qemu" || name == "docker-in-vm"
}

// Accel reads the accelerator from a VM platform's facts: qemu's "accel",
// docker-in-vm's "vm.accel" ("" when they do not say).
func Accel(facts map[string]string) string {
	if a := facts["accel"]; a != "" {
		return a
	}
	return facts["vm.accel"]
}

// EmulatedFrom returns, of labels, the VM platforms a run's fingerprint
// (the platforms' facts under "LABEL.KEY") says ran under TCG, with why
// (qemu's accel_reason).
func EmulatedFrom(fingerprint map[string]string, labels []string) map[string]string {
	out := map[string]string{}
	for _, l := range labels {
		if !VMPlatform(l) {
			continue
		}
		facts := map[string]string{}
		for k, v := range fingerprint {
			if rest, ok := strings.CutPrefix(k, l+"."); ok {
				facts[rest] = v
			}
		}
		if Accel(facts) == "tcg" {
			why := facts["accel_reason"]
			if why == "" {
				why = facts["vm.accel_reason"]
			}
			out[l] = why
		}
	}
	return out
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

// emulatedLabel reports whether a finding's label (maybe pinned,
// "qemu@1") names an emulated platform.
func (m *Meta) emulatedLabel(label string) bool {
	if m == nil || m.emulated == nil {
		return false
	}
	l, _ := SplitAt(label)
	_, ok := m.emulated[l]
	return ok
}
