package study

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/isobench/isobench/internal/spec"
)

// The fidelity ledger says, per experiment and against the paper, what a
// reproduction keeps and what it changes: the tool (and its version), the
// parameters, the platforms and their modes, the layout (who is client,
// who is server, over what link), the statistic and the repetitions. Each
// item is "same" or "differs: WHY"; an item that differs because this
// host cannot do what the paper did names what the host lacks (Host),
// otherwise the difference is a choice.

// LedgerItems are the items of a ledger, in the order they are printed.
var LedgerItems = []string{"tool", "params", "platforms", "layout", "statistic", "reps"}

// What a host can lack: the reasons an item may differ that are not a
// choice.
const (
	HostNoFreeBSD       = "no FreeBSD"
	HostNoKVM           = "no KVM"
	HostNoSecondMachine = "no second machine"
	HostNoCloud         = "no cloud account"
	HostNoAUFS          = "no AUFS"
)

// HostLimits are the accepted values of Item.Host (several are joined
// with ", ").
var HostLimits = []string{HostNoFreeBSD, HostNoKVM, HostNoSecondMachine, HostNoCloud, HostNoAUFS}

// Same is an item's Here when nothing differs.
const Same = "same"

// Fidelity is a ledger as written in a study file: at the study level the
// items every experiment shares, at an experiment the items it states
// itself (they replace the study's).
type Fidelity struct {
	Tool      *Item `yaml:"tool,omitempty" json:"tool,omitempty"`
	Params    *Item `yaml:"params,omitempty" json:"params,omitempty"`
	Platforms *Item `yaml:"platforms,omitempty" json:"platforms,omitempty"`
	Layout    *Item `yaml:"layout,omitempty" json:"layout,omitempty"`
	Statistic *Item `yaml:"statistic,omitempty" json:"statistic,omitempty"`
	Reps      *Item `yaml:"reps,omitempty" json:"reps,omitempty"`
}

// Item is one line of a ledger.
type Item struct {
	// Paper is what the paper did, in its words and numbers.
	Paper string `yaml:"paper" json:"paper"`
	// Here is "same", or "differs: WHY".
	Here string `yaml:"here" json:"here"`
	// Host, when the item differs because this host cannot do what the
	// paper did, names what it lacks (HostLimits, several joined with
	// ", "); empty: the difference is a choice.
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
}

func (f *Fidelity) items() []*Item {
	if f == nil {
		return make([]*Item, len(LedgerItems))
	}
	return []*Item{f.Tool, f.Params, f.Platforms, f.Layout, f.Statistic, f.Reps}
}

// IsSame reports whether the item keeps what the paper did.
func (it Item) IsSame() bool { return it.Here == Same }

// Why is the reason an item differs ("" when it is the same).
func (it Item) Why() string {
	w, _ := strings.CutPrefix(it.Here, "differs:")
	if it.IsSame() {
		return ""
	}
	return strings.TrimSpace(w)
}

// Kind is "same", "host" (this host forbids it) or "choice".
func (it Item) Kind() string {
	switch {
	case it.IsSame():
		return Same
	case it.Host != "":
		return "host"
	}
	return "choice"
}

func (it Item) check() error {
	switch {
	case strings.TrimSpace(it.Paper) == "":
		return fmt.Errorf("says nothing of what the paper did (paper:)")
	case it.IsSame():
		if it.Host != "" {
			return fmt.Errorf("is the same yet names a host limit (%s)", it.Host)
		}
	case !strings.HasPrefix(it.Here, "differs:") || it.Why() == "":
		return fmt.Errorf("here: %q: want %q or \"differs: WHY\"", it.Here, Same)
	case it.Host != "":
		for _, h := range strings.Split(it.Host, ", ") {
			if !slices.Contains(HostLimits, h) {
				return fmt.Errorf("host: %q: want some of %s, joined with \", \" (or nothing: a choice)", it.Host, strings.Join(HostLimits, "; "))
			}
		}
	}
	return nil
}

// LedgerEntry is one named item of an experiment's ledger.
type LedgerEntry struct {
	Name string
	Item
}

// Ledger is an experiment's complete ledger: every item of LedgerItems,
// from the experiment or, where it states none, from the study.
type Ledger struct {
	Experiment string
	Entries    []LedgerEntry
	// Missing names the items neither the experiment nor the study states.
	Missing []string
}

// HasLedger reports whether the study states a ledger at all.
func (m *Meta) HasLedger() bool {
	if m == nil {
		return false
	}
	if m.Fidelity != nil {
		return true
	}
	return slices.ContainsFunc(m.Experiments, func(e Experiment) bool { return e.Fidelity != nil })
}

// Ledger is experiment e's ledger at the study's scale: the items it
// states over the study's, and, at a scale other than the paper's, the
// parameters and repetitions that scale changes said to differ (a choice).
func (m *Meta) Ledger(e Experiment, reps string) Ledger {
	l := Ledger{Experiment: e.ID}
	var study *Fidelity
	if m != nil {
		study = m.Fidelity
	}
	own, def := e.Fidelity.items(), study.items()
	for i, name := range LedgerItems {
		it := own[i]
		if it == nil {
			it = def[i]
		}
		if it == nil {
			l.Missing = append(l.Missing, name)
			continue
		}
		l.Entries = append(l.Entries, LedgerEntry{Name: name, Item: *it})
	}
	if m == nil {
		return l
	}
	scaled := m.Scale != "" && m.Scale != ScalePaper
	sc := m.Scales[m.Scale]
	for i, en := range l.Entries {
		switch en.Name {
		case "params":
			if kv := scaledParams(sc, e); scaled && kv != "" {
				en.Here, en.Host = fmt.Sprintf("differs: %s scale sets %s", m.Scale, kv), ""
			}
		case "reps":
			// The repetitions differ from the file's when a scale or
			// --reps changed them (or, read at another scale, when the
			// file's are unknown).
			if reps != "" && (m.paperReps != "" && reps != m.paperReps || m.paperReps == "" && scaled && sc.Reps != "") {
				en.Here, en.Host = fmt.Sprintf("differs: %s repetitions here (%s scale), not the paper's", reps, cmp.Or(m.Scale, ScalePaper)), ""
			}
		}
		l.Entries[i] = en
	}
	return l
}

// scaledParams are the parameters a scale sets on the entries experiment e
// selects ("duration=1s"), or "".
func scaledParams(sc Scale, e Experiment) string {
	if e.Workload == "" {
		return ""
	}
	sel, err := spec.Parse(e.Workload)
	if err != nil {
		return ""
	}
	var out []string
	for k, kv := range sc.Params {
		ks, err := spec.Parse(k)
		if err != nil || ks.Name != sel.Name {
			continue
		}
		// The scale key and the experiment select overlapping entries
		// when no parameter both name has different values (the
		// experiment may name the value the scale already set).
		over, _ := spec.Parse(ks.Name + ":" + kv)
		clash := false
		for p, v := range ks.Params {
			if w, ok := sel.Params[p]; ok && w != v && w != over.Params[p] {
				clash = true
			}
		}
		if !clash {
			out = append(out, kv)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// Get returns the entry named name.
func (l Ledger) Get(name string) (LedgerEntry, bool) {
	for _, en := range l.Entries {
		if en.Name == name {
			return en, true
		}
	}
	return LedgerEntry{}, false
}

// Faithful reports whether the experiment runs the paper's way here: every
// item the same, or only the platforms differ, by a platform this host
// cannot run (named in Host). A re-implemented tool, a shortened run, a
// changed layout or statistic is not faithful, whatever the reason.
func (l Ledger) Faithful() bool {
	if len(l.Missing) > 0 || len(l.Entries) == 0 {
		return false
	}
	for _, en := range l.Entries {
		if en.IsSame() || en.Name == "platforms" && en.Host != "" {
			continue
		}
		return false
	}
	return true
}

// HostLimited reports whether the experiment differs only where this host
// forbids what the paper did (not faithful when that is more than a
// platform, but not a choice either).
func (l Ledger) HostLimited() bool {
	if len(l.Missing) > 0 || len(l.Entries) == 0 {
		return false
	}
	for _, en := range l.Entries {
		if !en.IsSame() && en.Host == "" {
			return false
		}
	}
	return true
}

// Verdict is "faithful here", or "not faithful here".
func (l Ledger) Verdict() string {
	if l.Faithful() {
		return "faithful here"
	}
	return "not faithful here"
}

// Line is the ledger in one line: "fidelity: tool differs (choice) ·
// params same · platforms differs (host: no FreeBSD) · ... → not faithful
// here".
func (l Ledger) Line() string {
	var parts []string
	for _, en := range l.Entries {
		switch en.Kind() {
		case Same:
			parts = append(parts, en.Name+" same")
		case "host":
			parts = append(parts, en.Name+" differs (host: "+en.Host+")")
		default:
			parts = append(parts, en.Name+" differs (choice)")
		}
	}
	for _, n := range l.Missing {
		parts = append(parts, n+" not stated")
	}
	return "fidelity: " + strings.Join(parts, " · ") + " → " + l.Verdict()
}

// Details are the items that differ, one line each: what the paper did
// and why this run does not.
func (l Ledger) Details() []string {
	var out []string
	for _, en := range l.Entries {
		if en.IsSame() {
			continue
		}
		kind := "choice"
		if en.Host != "" {
			kind = "host: " + en.Host
		}
		out = append(out, fmt.Sprintf("%s [%s]: %s (the paper: %s)", en.Name, kind, en.Why(), en.Paper))
	}
	return out
}

// Reimplemented lists the workloads that re-implement a paper's tool (or
// stand in for it) rather than run it: a ledger whose experiment runs one
// of them cannot say its tool is the same.
var Reimplemented = map[string]string{
	"cpu":           "isobench's cpu re-implements sysbench's prime test",
	"memory":        "isobench's memory re-implements sysbench's memory test",
	"blockio":       "isobench's blockio (re-implements IO-nugget's procedure in ionugget mode)",
	"disk":          "isobench's disk re-implements fio's random I/O (libaio, O_DIRECT)",
	"stream":        "isobench's stream re-implements STREAM's four kernels in Go",
	"fs":            "isobench's fs re-implements FileBench's personalities",
	"tcp-stream":    "isobench's tcp-stream re-implements iperf's bulk TCP test",
	"tcp-rr":        "isobench's tcp-rr re-implements netperf's TCP_RR",
	"tcp-crr":       "isobench's tcp-crr re-implements netperf's TCP_CRR",
	"astar":         "an open substitute for SPEC CPU 2006 473.astar",
	"soplex":        "an open substitute for SPEC CPU 2006 450.soplex",
	"startup":       "isobench's startup timer (the agent's first instruction) in place of the paper's date script",
	"footprint":     "isobench's footprint (cgroup and /proc accounting) in place of top and du",
	"spark":         "HiBench's jobs re-implemented in PySpark (isobench's job.py and input generators)",
	"spark-cluster": "HiBench's jobs re-implemented in PySpark (isobench's job.py and input generators)",
}

// reimplementedBy reports which re-implementation an experiment's
// workload is, or "" when it runs a real tool. smtp is isobench's own
// client unless client=postal.
func reimplementedBy(e Experiment) string {
	sel, err := spec.Parse(e.Workload)
	if err != nil || e.Workload == "" {
		return ""
	}
	if sel.Name == "smtp" && sel.Params["client"] != "postal" {
		return "isobench's SMTP client in place of postal"
	}
	return Reimplemented[sel.Name]
}

// checkLedger verifies a study's ledger: when the study states one, every
// experiment has every item, each item says same or differs with a reason
// and a known host limit, and no experiment that runs a re-implementation
// (or does not run) claims the paper's tool.
func (m *Meta) checkLedger() error {
	if !m.HasLedger() {
		return nil
	}
	for i, it := range m.Fidelity.items() {
		if it != nil {
			if err := it.check(); err != nil {
				return fmt.Errorf("study %s: fidelity %s %w", m.ID, LedgerItems[i], err)
			}
		}
	}
	for _, e := range m.Experiments {
		for i, it := range e.Fidelity.items() {
			if it != nil {
				if err := it.check(); err != nil {
					return fmt.Errorf("study %s: experiment %s: fidelity %s %w", m.ID, e.ID, LedgerItems[i], err)
				}
			}
		}
		l := m.Ledger(e, "")
		if len(l.Missing) > 0 {
			return fmt.Errorf("study %s: experiment %s: the fidelity ledger does not state %s (under the experiment or the study)", m.ID, e.ID, strings.Join(l.Missing, ", "))
		}
		tool, _ := l.Get("tool")
		if tool.IsSame() {
			if r := reimplementedBy(e); r != "" {
				return fmt.Errorf("study %s: experiment %s: fidelity tool is %q, but the experiment runs %s: a re-implemented tool is not the paper's", m.ID, e.ID, Same, r)
			}
			if e.Workload == "" {
				return fmt.Errorf("study %s: experiment %s: fidelity tool is %q, but the experiment does not run", m.ID, e.ID, Same)
			}
		}
	}
	return nil
}

// PrintFidelity writes a study's ledger: one row per experiment (each
// item same, host or choice, and whether it is faithful here), then why
// each differing item differs, and last "faithful here: N of M".
func PrintFidelity(w io.Writer, f File) (faithful, total int) {
	m := f.Study
	if m == nil {
		return 0, 0
	}
	scale := m.Scale
	if scale == "" {
		scale = ScalePaper
	}
	fmt.Fprintf(w, "study %s (%s scale): %s\n", m.ID, scale, m.Title)
	width := len("experiment")
	for _, e := range m.Experiments {
		width = max(width, len(e.ID))
	}
	fmt.Fprintf(w, "  %-*s", width, "experiment")
	for _, n := range LedgerItems {
		fmt.Fprintf(w, "  %-9s", n)
	}
	fmt.Fprintln(w, "  here")
	var why []string
	for _, e := range m.Experiments {
		l := m.Ledger(e, f.Reps)
		fmt.Fprintf(w, "  %-*s", width, e.ID)
		for _, n := range LedgerItems {
			k := "-"
			if en, ok := l.Get(n); ok {
				k = en.Kind()
			}
			fmt.Fprintf(w, "  %-9s", k)
		}
		fmt.Fprintln(w, "  "+l.Verdict())
		total++
		if l.Faithful() {
			faithful++
		}
		for _, d := range l.Details() {
			why = append(why, e.ID+" "+d)
		}
		for _, n := range l.Missing {
			why = append(why, e.ID+" "+n+": not stated")
		}
	}
	if len(why) > 0 {
		fmt.Fprintln(w, "  what differs (same: as the paper; host: this host cannot do what the paper did; choice: isobench's or this file's choice):")
		for _, s := range why {
			fmt.Fprintln(w, "    "+s)
		}
	}
	fmt.Fprintf(w, "faithful here: %d of %d\n", faithful, total)
	return faithful, total
}
