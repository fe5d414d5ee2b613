package report

import (
	"maps"
	"slices"
	"strings"
)

// A platform whose instances are virtual machines (qemu, docker-in-vm)
// runs under KVM or, where the host has none that works, under QEMU's TCG
// emulation: every guest instruction is translated, so its cells measure
// the emulator, not a hypervisor (not the one a paper ran). Such a cell
// carries Emulated, and every output says so: the terminal summary, the
// tables, the JSON and, through the study package, the findings and the
// figures.

// EmulatedNote is what an emulated platform is called in every output.
const EmulatedNote = "emulated (TCG): not the paper's hypervisor"

// EmulatedMark is the short mark of an emulated cell or series.
const EmulatedMark = "emulated (TCG)"

// VMPlatform reports whether a platform label's instances are virtual
// machines (their facts say the accelerator).
func VMPlatform(label string) bool {
	name, _, _ := strings.Cut(label, ":")
	return name == "qemu" || name == "docker-in-vm"
}

// Accel reads the accelerator from a VM platform's facts (or a sample's
// tags, which carry its instances' facts): qemu's "accel", docker-in-vm's
// "vm.accel" ("" when they do not say).
func Accel(facts map[string]string) string {
	if a := facts["accel"]; a != "" {
		return a
	}
	return facts["vm.accel"]
}

// accelReason is why the facts' accelerator is what it is (qemu's
// accel_reason, docker-in-vm's vm.accel_reason).
func accelReason(facts map[string]string) string {
	if r := facts["accel_reason"]; r != "" {
		return r
	}
	return facts["vm.accel_reason"]
}

// tagsEmulated returns, for a sample of platform label with tags, whether
// its instance ran under TCG and why ("" when the tags do not say).
func tagsEmulated(label string, tags map[string]string) (bool, string) {
	if !VMPlatform(label) || Accel(tags) != "tcg" {
		return false, ""
	}
	return true, accelReason(tags)
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
			out[l] = accelReason(facts)
		}
	}
	return out
}

// noReason is a cell's Emulated when nothing said why it ran under TCG.
const noReason = "accel=tcg"

// MarkEmulated sets Emulated on the cells of the VM platforms that a
// run's fingerprint says ran under TCG (Cells already marks those whose
// samples' tags say so; the fingerprint covers the workloads whose
// samples do not carry their instances' facts, such as startup).
func MarkEmulated(cells []Cell, fingerprint map[string]string) {
	var labels []string
	for _, c := range cells {
		if !slices.Contains(labels, c.Label()) {
			labels = append(labels, c.Label())
		}
	}
	em := EmulatedFrom(fingerprint, labels)
	for i := range cells {
		why, ok := em[cells[i].Label()]
		if !ok {
			continue
		}
		if why == "" {
			why = noReason
		}
		if cells[i].Emulated == "" || cells[i].Emulated == noReason {
			cells[i].Emulated = why
		}
	}
}

// EmulatedLabels returns the labels of the cells marked emulated, with
// why (the first reason given for the label).
func EmulatedLabels(cells []Cell) map[string]string {
	out := map[string]string{}
	for _, c := range cells {
		if c.Emulated == "" {
			continue
		}
		if why, ok := out[c.Label()]; !ok || why == noReason {
			out[c.Label()] = c.Emulated
		}
	}
	return out
}

// emulatedLines are the notes on the emulated platforms of cells, one per
// label, sorted: "LABEL: emulated (TCG): not the paper's hypervisor
// (why)".
func emulatedLines(cells []Cell) []string {
	em := EmulatedLabels(cells)
	labels := slices.Sorted(maps.Keys(em))
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		out = append(out, l+": "+EmulatedNote+" ("+em[l]+"): its numbers measure QEMU's emulator, not a hypervisor's cost")
	}
	return out
}

// markedDoc is d with its cells marked emulated where its fingerprint
// says so (a copy: the caller's cells are left as they are).
func markedDoc(d Doc) Doc {
	cells := slices.Clone(d.Cells)
	MarkEmulated(cells, d.Fingerprint)
	d.Cells = cells
	return d
}
