package study

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/isobench/isobench/internal/spec"
)

// A paper names its tools (sysbench, iperf2, fio, JMeter, postal,
// Hadoop); where this host has one, a reader reproducing the paper expects
// that tool's numbers, with the paper's flags. The study files are written
// with isobench's own workloads (their scales and selectors name those);
// PaperTools says, per study, which paper's tool stands in for which of
// them and how their parameters and metrics translate, and WithTools
// applies it: the paper's tool where the host has it, isobench's own
// otherwise or when asked (--tools builtin).

// Tool modes: how a study chooses between a paper's tool and isobench's
// own workload.
const (
	// ToolsAuto runs the paper's tool at the paper's and the standard
	// scale where the host has it, and isobench's own workloads at the
	// quick scale (whose runs are too short for the tools' own start-up).
	ToolsAuto = "auto"
	// ToolsPaper runs the paper's tool wherever the host has it, at
	// every scale.
	ToolsPaper = "paper"
	// ToolsBuiltin runs isobench's own workloads only.
	ToolsBuiltin = "builtin"
)

// ToolModes are the accepted values of --tools.
var ToolModes = []string{ToolsAuto, ToolsPaper, ToolsBuiltin}

// PaperTool is one paper's tool standing in for one of isobench's
// workloads in one study.
type PaperTool struct {
	Study string
	// Builtin selects the file's entries the tool replaces (a workload
	// name and the parameter values it requires,
	// "tcp-stream:server=instance,client=instance").
	Builtin string
	// Tool is the workload that runs the paper's tool.
	Tool string
	// Keep are the builtin's parameters passed on as they are, Rename
	// those passed on under another name, Set the tool's parameters the
	// paper fixes. The parameters Builtin selects on are dropped. An
	// entry with any other parameter keeps isobench's workload (the tool
	// cannot express it).
	Keep   []string
	Rename map[string]string
	Set    map[string]string
	// Values translates the values of a builtin's parameter (by its
	// builtin name); a value it does not list has no translation.
	Values map[string]map[string]string
	// Metrics renames the builtin's metrics where the tool's differ.
	Metrics map[string]string
	// Binaries are the host's executables the tool needs (the tools
	// image profile copies them into instances; host-side clients run
	// them on the host).
	Binaries []string
	// Images are the image profiles whose instances carry the tool; the
	// first is set when the file names none. Empty: the tool runs on the
	// host (a client), whatever the instances run.
	Images []string
	// Name is the tool as a report names it ("sysbench 1.0.20").
	Name string
	// Here is the tool's ledger item's verdict with it ("same", or
	// "differs: WHY" when even the tool differs from the paper's, e.g. its
	// version), and Params, when set, the experiments' params item with
	// it (the paper's flags the builtin could not take).
	Here   string
	Params *Item
}

// PaperTools are the paper's tools this binary can run, per study.
var PaperTools = []PaperTool{
	{
		Study: "000", Builtin: "cpu", Tool: "tool:sysbench-cpu",
		Keep: []string{"threads", "max-prime", "duration"}, Binaries: []string{"sysbench"}, Images: []string{"tools", "debian"},
		Name: "sysbench 1.0 (the host's, in the tools image)", Here: Same,
	},
	{
		Study: "000", Builtin: "memory", Tool: "tool:sysbench-memory",
		Keep: []string{"threads", "block-size", "total-size", "oper", "access", "duration"}, Binaries: []string{"sysbench"}, Images: []string{"tools", "debian"},
		Name: "sysbench 1.0 (the host's, in the tools image)", Here: Same,
	},
	{
		Study: "000", Builtin: "tcp-stream:server=instance,client=instance", Tool: "tool:iperf2",
		Keep: []string{"duration"}, Set: map[string]string{"window": "64k"}, Binaries: []string{"iperf"}, Images: []string{"tools"},
		Name: "iperf 2.1 (the host's, in the tools image; one server instance, N client instances, -w 64K)", Here: Same,
		Params: &Item{Paper: "TCP with iperf's defaults: a 64 KByte window (section 7.2.4)", Here: Same},
	},
	{
		Study: "004", Builtin: "cpu", Tool: "tool:sysbench-cpu",
		Keep: []string{"threads", "max-prime", "events", "duration"}, Binaries: []string{"sysbench"}, Images: []string{"debian", "tools"},
		Name: "sysbench 1.0 (Debian's, in the instance; --events=N --time=0)",
		Here: "differs: sysbench 1.0 of today's Debian, not 0.4.12 (the same prime test; --events=N --time=0 is 0.4.12's fixed work, --max-requests)",
	},
	{
		Study: "004", Builtin: "ftp", Tool: "ftp",
		Keep: []string{"direction", "file", "tree", "seed", "clients", "neighbours", "neighbours-busy", "inject"}, Set: map[string]string{"client": "jmeter"},
		Binaries: []string{"jmeter"},
		Name:     "JMeter 2.13's FTP sampler (Debian's, on the host; a plan isobench writes, one request per file)", Here: Same,
	},
	{
		Study: "004", Builtin: "smtp", Tool: "smtp",
		Keep: []string{"size", "threads", "clients", "neighbours", "neighbours-busy", "inject"}, Rename: map[string]string{"messages": "postal-messages"},
		Set: map[string]string{"client": "postal"}, Binaries: []string{"postal"},
		Name: "postal 0.75 (Debian's, on the host; stopped once it has sent the messages)", Here: Same,
	},
	{
		Study: "003", Tool: "mapreduce", Binaries: []string{"java", "mvn"},
		Name: "Hadoop 3.3.6 MapReduce (local mode in each instance; its jars from Maven Central)",
	},
	fio003("randread", "read"),
	fio003("randwrite", "write"),
}

// fio003 is study 003's figure 4 with fio itself: the disk entry of one
// pattern, its metrics those of fio's side (read or write).
func fio003(pattern, side string) PaperTool {
	return PaperTool{
		Study: "003", Builtin: "disk:pattern=" + pattern, Tool: "tool:fio",
		Keep:   []string{"pattern", "bs", "size", "direct", "iodepth", "jobs", "duration"},
		Rename: map[string]string{"engine": "ioengine"},
		Values: map[string]map[string]string{"engine": {"aio": "libaio"}},
		Metrics: map[string]string{
			"iops": side + "_iops", "mib_per_sec": side + "_mib_per_sec",
			"lat_p50": side + "_clat_p50", "lat_p95": side + "_clat_p95", "lat_p99": side + "_clat_p99", "lat_max": side + "_clat_max",
		},
		Binaries: []string{"fio"}, Images: []string{"debian", "tools"},
		Name: "fio 3 (Debian's; libaio, O_DIRECT, numjobs, every job aggregated)",
		Here: "differs: fio 3 of today's Debian, not 2.1.3 (the same engine, flags and job layout)",
	}
}

// HostHas reports whether the host has an executable: on PATH or in the
// usual binary directories (postal lives in /usr/sbin, which a user's PATH
// may lack).
func HostHas(bin string) bool {
	if _, err := exec.LookPath(bin); err == nil {
		return true
	}
	for _, dir := range []string{"/usr/bin", "/usr/sbin", "/usr/local/bin", "/bin", "/sbin"} {
		if st, err := os.Stat(filepath.Join(dir, bin)); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// ToolsFor are the paper's tools of study id.
func ToolsFor(id string) []PaperTool {
	var out []PaperTool
	for _, t := range PaperTools {
		if t.Study == id {
			out = append(out, t)
		}
	}
	return out
}

// usesPaperTools reports whether mode runs the paper's tools at scale.
func usesPaperTools(mode, scale string) (bool, error) {
	switch mode {
	case ToolsBuiltin:
		return false, nil
	case ToolsPaper:
		return true, nil
	case ToolsAuto, "":
		return scale == "" || scale == ScalePaper || scale == "standard", nil
	}
	return false, fmt.Errorf("--tools %q: want %s", mode, strings.Join(ToolModes, ", "))
}

// WithTools returns the study with the paper's tools in place of
// isobench's workloads as mode says (ToolModes), where has (HostHas)
// finds their executables and the file's image carries them. Notes say,
// per tool, what runs and, when isobench's own runs instead, why. A file
// without a study (or a study with no paper's tool) is returned as it is.
func (f File) WithTools(mode string, has func(bin string) bool) (File, []string, error) {
	if f.Study == nil {
		if _, err := usesPaperTools(mode, ""); err != nil {
			return File{}, nil, err
		}
		return f, nil, nil
	}
	use, err := usesPaperTools(mode, f.Study.Scale)
	if err != nil {
		return File{}, nil, err
	}
	tools := ToolsFor(f.Study.ID)
	if len(tools) == 0 {
		return f, nil, nil
	}
	if mode == ToolsBuiltin {
		var notes []string
		for _, t := range tools {
			if t.Builtin == "" {
				notes = append(notes, t.Name+": not run: --tools builtin runs isobench's own workloads only, and isobench has none for it")
			}
		}
		if slices.ContainsFunc(tools, func(t PaperTool) bool { return t.Builtin != "" }) {
			notes = append(notes, "isobench's own workloads run in place of the paper's tools (--tools builtin)")
		}
		return f.WithoutTools(), notes, nil
	}
	out := f.clone()
	out.Study.Experiments = slices.Clone(f.Study.Experiments)
	var notes []string
	// The paper's tools with no isobench equivalent (Hadoop) run unless
	// --tools builtin or the host lacks them.
	for _, t := range tools {
		if t.Builtin != "" {
			continue
		}
		why := "--tools builtin runs isobench's own workloads only, and isobench has none for it"
		if mode != ToolsBuiltin {
			missing := slices.DeleteFunc(slices.Clone(t.Binaries), has)
			if len(missing) == 0 {
				notes = append(notes, t.Name+" runs (isobench has no workload of its own for it)")
				continue
			}
			why = strings.Join(missing, ", ") + " is not on this host"
		}
		out.drop(t, why)
		notes = append(notes, fmt.Sprintf("%s: not run: %s", t.Name, why))
	}
	if !use {
		why := "--tools builtin"
		if mode != ToolsBuiltin {
			why = fmt.Sprintf("the %s scale runs isobench's own; --tools paper runs the paper's", f.Study.Scale)
		}
		if slices.ContainsFunc(tools, func(t PaperTool) bool { return t.Builtin != "" }) {
			notes = append(notes, "isobench's own workloads run in place of the paper's tools ("+why+")")
		}
		return out, notes, nil
	}
	for _, t := range tools {
		if t.Builtin == "" {
			continue
		}
		if missing := slices.DeleteFunc(slices.Clone(t.Binaries), has); len(missing) > 0 {
			notes = append(notes, fmt.Sprintf("%s: isobench's %s runs: %s is not on this host", t.Name, builtinName(t), strings.Join(missing, ", ")))
			continue
		}
		img := out.Image
		if len(t.Images) > 0 && !slices.Contains(t.Images, img) {
			if img != "" && img != "minimal" {
				notes = append(notes, fmt.Sprintf("%s: isobench's %s runs: the %s image does not carry it", t.Name, builtinName(t), img))
				continue
			}
			img = t.Images[0]
		}
		n, err := out.swap(t)
		if err != nil {
			return File{}, nil, err
		}
		if n == 0 {
			continue
		}
		out.Image = img
		notes = append(notes, fmt.Sprintf("%s runs in place of isobench's %s", t.Name, builtinName(t)))
		for _, p := range out.Study.Platforms {
			if p.Label != "" && p.Image != "" && len(t.Images) > 0 && !slices.Contains(t.Images, p.Image) {
				notes = append(notes, fmt.Sprintf("%s: %s runs from the %s image, which does not carry it: those cells fail saying so (--tools builtin runs isobench's %s there)", t.Name, p.Label, p.Image, builtinName(t)))
			}
		}
	}
	return out, notes, nil
}

func builtinName(t PaperTool) string {
	sel, _ := spec.Parse(t.Builtin)
	return sel.Name
}

// translate turns a builtin entry's (or selector's) parameters into the
// tool's; ok is false when a parameter has no translation. set adds the
// paper's fixed values (entries, not selectors).
func (t PaperTool) translate(params map[string]string, set bool) (map[string]string, bool) {
	sel, _ := spec.Parse(t.Builtin)
	out := map[string]string{}
	for k, v := range params {
		if vm, ok := t.Values[k]; ok {
			var vs []string
			for _, x := range strings.Split(v, "|") { // a sweep's values each
				if vm[x] == "" {
					return nil, false
				}
				vs = append(vs, vm[x])
			}
			v = strings.Join(vs, "|")
		}
		switch {
		case slices.Contains(t.Keep, k):
			out[k] = v
		case t.Rename[k] != "":
			out[t.Rename[k]] = v
		case sel.Params[k] != "":
			// selected on (server=instance): the tool is that layout
		default:
			return nil, false
		}
	}
	if set {
		maps.Copy(out, t.Set)
	}
	return out, true
}

func (t PaperTool) metric(m string) string {
	if r := t.Metrics[m]; r != "" {
		return r
	}
	return m
}

// swap replaces the entries t.Builtin selects by t.Tool, and the
// experiments, score rows and findings that select them; it returns how
// many entries it replaced.
func (f *File) swap(t PaperTool) (int, error) {
	sel, err := spec.Parse(t.Builtin)
	if err != nil {
		return 0, fmt.Errorf("paper tool %s: %w", t.Tool, err)
	}
	n := 0
	for i, w := range f.Workloads {
		sp, err := spec.Parse(w)
		if err != nil || !Selects(sel, sp.Name, sp.Params) {
			continue
		}
		p, ok := t.translate(sp.Params, true)
		if !ok {
			continue // a parameter the tool cannot take: isobench's own runs
		}
		f.Workloads[i] = spec.Spec{Name: t.Tool, Params: p}.String()
		n++
	}
	if n == 0 || f.Study == nil {
		return n, nil
	}
	for i, e := range f.Study.Experiments {
		es, err := spec.Parse(e.Workload)
		if e.Workload == "" || err != nil || es.Name != sel.Name {
			continue
		}
		p, ok := t.translate(es.Params, true)
		if !ok {
			continue
		}
		// The experiment must select what was swapped (not an entry that
		// kept the builtin).
		ns := spec.Spec{Name: t.Tool, Params: p}
		if !f.selectsAny(ns) {
			continue
		}
		e.Workload = ns.String()
		e.Metric = t.metric(e.Metric)
		if e.Metrics != nil {
			e.Metrics = slices.Clone(e.Metrics)
			for j, m := range e.Metrics {
				e.Metrics[j] = t.metric(m)
			}
		}
		if e.Findings != nil {
			e.Findings = slices.Clone(e.Findings)
			for j, fd := range e.Findings {
				if fd.Metric != "" {
					fd.Metric = t.metric(fd.Metric)
				}
				if fd.Params != "" {
					if fp, err := spec.Parse(sel.Name + ":" + fd.Params); err == nil {
						if q, ok := t.translate(fp.Params, false); ok {
							fd.Params = spec.Canonical(q)
						}
					}
				}
				e.Findings[j] = fd
			}
		}
		e.Fidelity = t.ledger(f.Study, e)
		f.Study.Experiments[i] = e
	}
	f.swapScales(t, sel)
	rewriteScoreRows(f.Study.Experiments, sel.Name, func(params map[string]string) (spec.Spec, bool) {
		p, ok := t.translate(params, true)
		to := spec.Spec{Name: t.Tool, Params: p}
		return to, ok && f.selectsAny(to)
	}, t.metric)
	return n, nil
}

// rewriteScoreRows rewrites, in every experiment's score (a copy, so the
// original's rows are left alone), the rows of workload from: conv gives
// the workload that replaces a row's (false: the row stays as it is) and
// metric renames the row's metrics.
func rewriteScoreRows(exps []Experiment, from string, conv func(params map[string]string) (spec.Spec, bool), metric func(string) string) {
	for i, e := range exps {
		if e.Score == nil {
			continue
		}
		sc := *e.Score
		sc.Rows = maps.Clone(e.Score.Rows)
		for name, row := range sc.Rows {
			rs, err := spec.Parse(row.Workload)
			if err != nil || rs.Name != from {
				continue
			}
			to, ok := conv(rs.Params)
			if !ok {
				continue
			}
			row.Workload = to.String()
			row.Metrics = slices.Clone(row.Metrics)
			for j, m := range row.Metrics {
				row.Metrics[j] = metric(m)
			}
			sc.Rows[name] = row
		}
		exps[i].Score = &sc
	}
}

// ledger is experiment e's ledger with the paper's tool: its tool item
// says what runs (the paper's words kept), and its params item is t's
// where the tool takes flags isobench's own could not.
func (t PaperTool) ledger(m *Meta, e Experiment) *Fidelity {
	if !m.HasLedger() {
		return e.Fidelity
	}
	var fd Fidelity
	if e.Fidelity != nil {
		fd = *e.Fidelity
	}
	paper := t.Name
	if it, ok := m.Ledger(e, "").Get("tool"); ok {
		paper = it.Paper
	}
	fd.Tool = &Item{Paper: paper, Here: t.Here}
	if t.Params != nil {
		p := *t.Params
		fd.Params = &p
	}
	return &fd
}

// swapScales renames the scales' keys that select swapped entries, so a
// scale still shortens the tool's runs and the ledger still says so: the
// key and its values translated, the builtin's key kept while an entry of
// the builtin remains.
func (f *File) swapScales(t PaperTool, sel spec.Spec) {
	if len(f.Study.Scales) == 0 {
		return
	}
	f.Study.Scales = rewriteScales(f.Study.Scales, func(params map[string]string, k, kv string) {
		ks, err := spec.Parse(k)
		if err != nil || ks.Name != sel.Name {
			params[k] = kv
			return
		}
		kp, vp, ok := translateScale(ks, kv, t.translate)
		if ok && len(vp) > 0 {
			params[spec.Spec{Name: t.Tool, Params: kp}.String()] = spec.Canonical(vp)
		}
		if f.selectsAny(ks) || !ok {
			params[k] = kv
		}
	})
}

// rewriteScales rebuilds every scale's parameter overrides: rewrite is
// called with each key and value and puts what stands for them into
// params (nothing: they are dropped).
func rewriteScales(scales map[string]Scale, rewrite func(params map[string]string, k, v string)) map[string]Scale {
	out := make(map[string]Scale, len(scales))
	for name, sc := range scales {
		if len(sc.Params) > 0 {
			params := map[string]string{}
			for k, v := range sc.Params {
				rewrite(params, k, v)
			}
			sc.Params = params
		}
		out[name] = sc
	}
	return out
}

// translateScale translates a scale's key ks (a workload selector) and
// its value kv (that workload's parameters) with tr; ok is false when
// either has no translation.
func translateScale(ks spec.Spec, kv string, tr func(map[string]string, bool) (map[string]string, bool)) (kp, vp map[string]string, ok bool) {
	kp, ok1 := tr(ks.Params, false)
	over, err := spec.Parse(ks.Name + ":" + kv)
	if err != nil {
		return kp, nil, false
	}
	vp, ok2 := tr(over.Params, false)
	return kp, vp, ok1 && ok2
}

// drop removes the entries of a paper's tool that has no isobench
// equivalent, its scales' keys, and makes the experiments that select it
// not runnable, saying why.
func (f *File) drop(t PaperTool, why string) {
	f.Workloads = slices.DeleteFunc(f.Workloads, func(w string) bool {
		sp, err := spec.Parse(w)
		return err == nil && sp.Name == t.Tool
	})
	for i, e := range f.Study.Experiments {
		if es, err := spec.Parse(e.Workload); err == nil && e.Workload != "" && es.Name == t.Tool {
			e.Pending, e.Workload = []string{e.Workload}, ""
			e.NotRunnable = t.Name + ": " + why
			f.Study.Experiments[i] = e
		}
	}
	f.Study.Scales = rewriteScales(f.Study.Scales, func(params map[string]string, k, v string) {
		if ks, err := spec.Parse(k); err != nil || ks.Name != t.Tool {
			params[k] = v
		}
	})
}

// back turns a tool's entry (or selector) parameters into the builtin's:
// the tool's fixed values must be there (an entry) and are dropped, the
// rest translate back; ok is false when something has no translation.
// set adds the builtin selector's own values (entries and selectors).
func (t PaperTool) back(params map[string]string, entry bool) (map[string]string, bool) {
	sel, _ := spec.Parse(t.Builtin)
	inv := map[string]string{}
	for b, tk := range t.Rename {
		inv[tk] = b
	}
	out := map[string]string{}
	for k, v := range params {
		if sv, ok := t.Set[k]; ok {
			if v != sv {
				return nil, false
			}
			continue
		}
		b := k
		if r, ok := inv[k]; ok {
			b = r
		} else if !slices.Contains(t.Keep, k) {
			return nil, false
		}
		if vm, ok := t.Values[b]; ok {
			var vs []string
			for _, x := range strings.Split(v, "|") {
				found := ""
				for bv, tv := range vm {
					if tv == x {
						found = bv
					}
				}
				if found == "" {
					return nil, false
				}
				vs = append(vs, found)
			}
			v = strings.Join(vs, "|")
		}
		out[b] = v
	}
	if entry {
		for k := range t.Set {
			if _, ok := params[k]; !ok {
				return nil, false // not an entry this tool's swap made
			}
		}
	}
	for k, v := range sel.Params {
		if ov, ok := out[k]; ok && ov != v {
			return nil, false // another builtin entry (disk:pattern=randwrite for randread's tool)
		}
	}
	maps.Copy(out, sel.Params)
	return out, true
}

// WithoutTools undoes WithTools on a study file (one 'study show' wrote,
// perhaps edited): the paper's tools' entries become isobench's own
// workloads again, with the experiments, score rows, findings and scale
// keys that select them, and their ledger items as the built-in study
// states them (else "differs: isobench's own"); a tool with no isobench
// equivalent is left out, its experiment not runnable.
func (f File) WithoutTools() File {
	if f.Study == nil {
		return f
	}
	out := f.clone()
	out.Study.Experiments = slices.Clone(f.Study.Experiments)
	orig, _ := Load(f.Study.ID)
	origExp := map[string]Experiment{}
	if orig.Study != nil {
		for _, e := range orig.Study.Experiments {
			origExp[e.ID] = e
		}
	}
	for _, t := range ToolsFor(f.Study.ID) {
		if t.Builtin == "" {
			out.drop(t, "--tools builtin runs isobench's own workloads only, and isobench has none for it")
			continue
		}
		sel, _ := spec.Parse(t.Builtin)
		inv := map[string]string{}
		for b, m := range t.Metrics {
			inv[m] = b
		}
		metric := func(m string) string {
			if b, ok := inv[m]; ok {
				return b
			}
			return m
		}
		for i, w := range out.Workloads {
			sp, err := spec.Parse(w)
			if err != nil || sp.Name != t.Tool {
				continue
			}
			if p, ok := t.back(sp.Params, true); ok {
				out.Workloads[i] = spec.Spec{Name: sel.Name, Params: p}.String()
			}
		}
		for i, e := range out.Study.Experiments {
			es, err := spec.Parse(e.Workload)
			if e.Workload == "" || err != nil || es.Name != t.Tool {
				continue
			}
			p, ok := t.back(es.Params, false)
			if !ok || !out.selectsAny(spec.Spec{Name: sel.Name, Params: p}) {
				continue
			}
			e.Workload = spec.Spec{Name: sel.Name, Params: p}.String()
			e.Metric = metric(e.Metric)
			if e.Metrics != nil {
				e.Metrics = slices.Clone(e.Metrics)
				for j, m := range e.Metrics {
					e.Metrics[j] = metric(m)
				}
			}
			if e.Findings != nil {
				e.Findings = slices.Clone(e.Findings)
				for j, fd := range e.Findings {
					if fd.Metric != "" {
						fd.Metric = metric(fd.Metric)
					}
					e.Findings[j] = fd
				}
			}
			if e.Fidelity != nil {
				fd := *e.Fidelity
				if o, ok := origExp[e.ID]; ok && o.Fidelity != nil {
					fd.Tool, fd.Params = o.Fidelity.Tool, o.Fidelity.Params
				} else if fd.Tool != nil {
					fd.Tool = &Item{Paper: fd.Tool.Paper, Here: "differs: isobench's " + sel.Name + " in place of " + t.Name}
				}
				e.Fidelity = &fd
			}
			out.Study.Experiments[i] = e
		}
		rewriteScoreRows(out.Study.Experiments, t.Tool, func(params map[string]string) (spec.Spec, bool) {
			p, ok := t.back(params, false)
			return spec.Spec{Name: sel.Name, Params: p}, ok
		}, metric)
		out.Study.Scales = rewriteScales(out.Study.Scales, func(params map[string]string, k, kv string) {
			ks, err := spec.Parse(k)
			if err != nil || ks.Name != t.Tool {
				params[k] = kv
				return
			}
			kp, vp, ok := translateScale(ks, kv, t.back)
			for k := range sel.Params {
				delete(vp, k)
			}
			if ok && len(vp) > 0 {
				params[spec.Spec{Name: sel.Name, Params: kp}.String()] = spec.Canonical(vp)
			} else {
				params[k] = kv
			}
		})
	}
	if out.Image == "tools" && orig.Study != nil {
		out.Image = orig.Image
	}
	return out
}

// realTools name the real tools the service and transfer workloads drive
// (by workload, and by its tool or client parameter).
var realTools = map[string]string{
	"redis":     "redis-benchmark against redis-server (Debian's)",
	"oltp":      "sysbench 1.0's OLTP scripts against MariaDB (Debian's)",
	"http":      "%s against %s (Debian's)",
	"scp":       "scp against OpenSSH (Debian's)",
	"wget":      "wget against Apache (Debian's)",
	"smb":       "smbclient against Samba (Debian's)",
	"ftp":       "lftp against vsftpd (Debian's)",
	"smtp":      "isobench's SMTP client against Postfix",
	"footprint": "isobench's footprint (cgroup and /proc accounting)",
}

// ProducedBy names what produces experiment e's figure in study id: the
// paper's tool when it runs (PaperTools), a real tool a workload drives,
// or isobench's own workload, saying what it re-implements.
func ProducedBy(id string, e Experiment) string {
	sel, err := spec.Parse(e.Workload)
	if e.Workload == "" || err != nil {
		return ""
	}
	for _, t := range PaperTools {
		if t.Study != id || t.Tool != sel.Name {
			continue
		}
		ok := true
		for k, v := range t.Set {
			ok = ok && sel.Params[k] == v
		}
		if ok {
			return t.Name
		}
	}
	if r := reimplementedBy(e); r != "" {
		return r
	}
	switch n := realTools[sel.Name]; {
	case sel.Name == "http":
		tool, server := cmp.Or(sel.Params["tool"], "ab"), cmp.Or(sel.Params["server"], "nginx")
		return fmt.Sprintf(n, tool, server)
	case n != "":
		return n
	case strings.HasPrefix(sel.Name, "tool:"):
		return strings.TrimPrefix(sel.Name, "tool:") + " (the host's, in the instance)"
	}
	return "isobench's " + sel.Name
}

// WithToolsOf takes the study with the paper's tools that a run's
// workloads show it ran (a report of a stored run names what produced each
// figure): a tool counts as run when one of ran is its workload with its
// fixed values.
func (f File) WithToolsOf(ran []string) (File, error) {
	if f.Study == nil {
		return f, nil
	}
	did := map[string]bool{}
	for _, t := range ToolsFor(f.Study.ID) {
		for _, w := range ran {
			sp, err := spec.Parse(w)
			if err != nil || sp.Name != t.Tool {
				continue
			}
			ok := true
			for k, v := range t.Set {
				ok = ok && sp.Params[k] == v
			}
			if ok {
				for _, b := range t.Binaries {
					did[b] = true
				}
			}
		}
	}
	g, _, err := f.WithTools(ToolsPaper, func(b string) bool { return did[b] })
	return g, err
}
