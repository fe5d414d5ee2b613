// Package study holds the studies isobench reproduces as study files
// embedded in the binary, in the same format `isobench run study.yaml`
// reads: the matrix (platforms, workloads, instances, reps, baseline) at
// the paper's own parameters, plus, under `study:`, what the paper was
// (citation, platforms, including those this host cannot run and why),
// how to shrink it (scales), and what it found, as data, per figure and
// table. It also turns a study into a plan (cells, repetitions, a time
// estimate) and compares a run's results with the paper's findings.
package study

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/isobench/isobench/internal/spec"
)

//go:embed files/*.yaml
var files embed.FS

// File is a study file: the keys `isobench run` reads plus the study
// metadata under `study:`.
type File struct {
	Platforms []string `yaml:"platforms,flow"`
	Workloads []string `yaml:"workloads"`
	Instances []int    `yaml:"instances,flow"`
	Reps      string   `yaml:"reps"`
	// RepsCap is the most repetitions with reps: auto (which stops a cell
	// once its medians are precise, after at least 5).
	RepsCap int `yaml:"reps_cap,omitempty"`
	// PlatformReps caps some platforms' measured repetitions below Reps
	// (label -> count): `study run` gives an emulated VM EmulatedReps at
	// the standard scale (CapEmulated).
	PlatformReps map[string]int `yaml:"platform_reps,omitempty"`
	Warmup       int            `yaml:"warmup,omitempty"`
	Baseline     string         `yaml:"baseline,omitempty"`
	Image        string         `yaml:"image,omitempty"`
	Study        *Meta          `yaml:"study,omitempty"`
}

// Meta describes the paper a study file reproduces.
type Meta struct {
	ID       string `yaml:"id" json:"id"`
	Title    string `yaml:"title" json:"title"`
	Citation string `yaml:"citation" json:"citation"`
	// Central is the statistic the paper reports (median, mean).
	Central string `yaml:"central,omitempty" json:"central,omitempty"`
	// PaperBaseline says what the paper compared against, when it differs
	// from the file's baseline (e.g. "native@1": one run of the host
	// against N containers).
	PaperBaseline string `yaml:"paper_baseline,omitempty" json:"paper_baseline,omitempty"`
	// Scale is the scale the matrix is at ("paper" in the embedded
	// files; `study show --scale quick` writes "quick").
	Scale string `yaml:"scale,omitempty" json:"scale,omitempty"`
	// paperReps are the repetitions at the paper's scale, kept by AtScale
	// for the ledger ("" when the file was read at another scale).
	paperReps string
	// runOf is the run each platform label ran in, when a study ran as
	// several (SeparateRuns).
	runOf map[string]int
	// emulated are the platform labels that ran under TCG, with why
	// (MarkEmulated).
	emulated  map[string]string
	Platforms []Platform       `yaml:"platforms" json:"platforms"`
	Scales    map[string]Scale `yaml:"scales,omitempty" json:"scales,omitempty"`
	// Fidelity holds the ledger items every experiment shares (an
	// experiment's own items replace them; fidelity.go).
	Fidelity    *Fidelity    `yaml:"fidelity,omitempty" json:"fidelity,omitempty"`
	Experiments []Experiment `yaml:"experiments" json:"experiments"`
	Notes       []string     `yaml:"notes,omitempty" json:"notes,omitempty"`
}

// Platform is one platform of the paper: either run here as Label (one of
// the file's platforms), or not, with why and what would make it run.
type Platform struct {
	Paper    string `yaml:"paper" json:"paper"`
	Label    string `yaml:"label,omitempty" json:"label,omitempty"`
	NotRun   string `yaml:"not_run,omitempty" json:"not_run,omitempty"`
	WouldRun string `yaml:"would_run,omitempty" json:"would_run,omitempty"`
	// Image, when set, is the image profile this platform's instances
	// run from instead of the file's (which it cannot run): 'study run'
	// runs it in a run of its own into the same store and reports both
	// as one (comparisons across the two runs are unpaired).
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
}

// Scale shrinks (or grows) a study: every cell stays, parameters and
// repetitions change; it may leave out some platforms (Drop).
type Scale struct {
	Reps string `yaml:"reps,omitempty" json:"reps,omitempty"`
	// RepsCap bounds reps: auto at this scale.
	RepsCap int `yaml:"reps_cap,omitempty" json:"reps_cap,omitempty"`
	// Drop are platform labels this scale leaves out (its note says why);
	// every cell of the others stays.
	Drop   []string `yaml:"drop,omitempty,flow" json:"drop,omitempty"`
	Warmup *int     `yaml:"warmup,omitempty" json:"warmup,omitempty"`
	// Params maps a workload name to "k=v,k=v" set on every entry of that
	// workload (a sweep keeps its values unless its key is set here). A
	// key may be a selector, "scp:tree=2500/75m": then only the entries
	// it selects get the values, after those of the plain name.
	Params map[string]string `yaml:"params,omitempty" json:"params,omitempty"`
	Note   string            `yaml:"note,omitempty" json:"note,omitempty"`
}

// Experiment is one figure or table of the paper.
type Experiment struct {
	ID    string `yaml:"id" json:"id"` // as numbered in the paper: fig3, table2
	Title string `yaml:"title" json:"title"`
	// Workload selects the matrix entries of this experiment: a name with
	// optional parameters that must match ("disk:pattern=randread").
	Workload string `yaml:"workload,omitempty" json:"workload,omitempty"`
	Metric   string `yaml:"metric,omitempty" json:"metric,omitempty"`
	// Metrics, when set, are the metrics the report draws (one chart
	// each); by default the experiment's metric and its findings' ones.
	Metrics []string `yaml:"metrics,omitempty,flow" json:"metrics,omitempty"`
	// Figure is the shape of the paper's figure or table in the report:
	// bars, lines-instances, "lines-param: NAME" (a swept parameter on the
	// x axis) or table; by default one chosen from the data (Shape).
	Figure string `yaml:"figure,omitempty" json:"figure,omitempty"`
	// Pending are workload specs the experiment needs that this binary
	// cannot run yet, with the reason in NotRunnable.
	Pending     []string  `yaml:"pending,omitempty" json:"pending,omitempty"`
	NotRunnable string    `yaml:"not_runnable,omitempty" json:"not_runnable,omitempty"`
	Findings    []Finding `yaml:"findings,omitempty" json:"findings,omitempty"`
	// Score, when set, makes this experiment a table of 1 − Op per row
	// against the baseline, summed (study 004's Table 2).
	Score *Score `yaml:"score,omitempty" json:"score,omitempty"`
	// Fidelity is the experiment's ledger against the paper, over the
	// study's (fidelity.go).
	Fidelity *Fidelity `yaml:"fidelity,omitempty" json:"fidelity,omitempty"`
	// PaperValues are the numbers the paper reports for it (paper.go).
	PaperValues *PaperValues `yaml:"paper_values,omitempty" json:"paper_values,omitempty"`
}

// Score defines a study-004-style overall score: each row is the mean of
// the medians of some metrics of one workload (RAM: copy, scale, add,
// triad), scored 1 − Op against the baseline; Paper holds the paper's
// totals per platform label for comparison.
type Score struct {
	Rows  map[string]ScoreRow `yaml:"rows" json:"rows"`
	Paper map[string]float64  `yaml:"paper,omitempty" json:"paper,omitempty"`
	// PaperCorrected are the paper's totals recomputed from its own Op
	// where a printed row is inconsistent with them, and PaperNote says
	// how (study 004's CPU row subtracts a percentage as a fraction).
	PaperCorrected map[string]float64 `yaml:"paper_corrected,omitempty" json:"paper_corrected,omitempty"`
	PaperNote      string             `yaml:"paper_note,omitempty" json:"paper_note,omitempty"`
}

// ScoreRow is one row of a Score.
type ScoreRow struct {
	Workload string   `yaml:"workload" json:"workload"`
	Metrics  []string `yaml:"metrics,flow" json:"metrics"`
}

// Finding is one thing the paper found. Text says it in the paper's words;
// Better, Ranking or Same make it checkable against a run (platform
// labels of the file). Without them it is reported, not checked.
type Finding struct {
	Text string `yaml:"text" json:"text"`
	// Metric overrides the experiment's metric.
	Metric string `yaml:"metric,omitempty" json:"metric,omitempty"`
	// Params narrows the cells to those with these parameter values
	// ("threads=1").
	Params string `yaml:"params,omitempty" json:"params,omitempty"`
	// Instances narrows the instance counts (empty: every count run).
	Instances []int `yaml:"instances,omitempty,flow" json:"instances,omitempty"`
	// Better: [A, B] means A did better than B. A label may be pinned to
	// an instance count, "native@1": the host run once, compared with
	// the other platform at every count (studies 001 and 002).
	Better []string `yaml:"better,omitempty,flow" json:"better,omitempty"`
	// Ranking: best first; every ordered pair (i before j) is a Better.
	Ranking []string `yaml:"ranking,omitempty,flow" json:"ranking,omitempty"`
	// Same: these platforms perform alike: within Margin of each other.
	Same []string `yaml:"same,omitempty,flow" json:"same,omitempty"`
	// Margin is how far apart a Same finding's platforms may be and still
	// count as the same (0.03: within 3%, as a paper says "within 3% of
	// native"); 0 means DefaultMargin.
	Margin float64 `yaml:"margin,omitempty" json:"margin,omitempty"`
}

// DefaultMargin is a Same finding's margin when it states none: the ratio's
// 95% interval must lie within 1 ± 10% for the finding to agree.
const DefaultMargin = 0.10

// margin is the finding's equivalence margin.
func (fd Finding) margin() float64 {
	if fd.Margin > 0 {
		return fd.Margin
	}
	return DefaultMargin
}

// Scales every study has: paper is the file as written; quick runs every
// cell in about ten minutes, for trends; DefaultScale, "standard", runs
// every cell with enough repetitions for verdicts, in well under an hour
// (the default of 'study show' and 'study run').
const (
	ScalePaper   = "paper"
	ScaleQuick   = "quick"
	DefaultScale = "standard"
)

// MinVerdictReps is the fewest repetitions per side that give a verdict
// (stats.MinVerdict; reps: auto never stops below it).
const MinVerdictReps = 5

// EmulatedReps is how many measured repetitions a VM platform that runs
// under QEMU's TCG gets at the standard scale: its findings are not
// comparable whatever the count (EmulatedNote), and every repetition
// boots VMs (study 002's QEMU cells took 58 of its 64 minutes at 5
// repetitions), so two give a spread and nothing more is spent.
const EmulatedReps = 2

// CapEmulated gives, at the standard scale, each VM platform that accel
// says runs under TCG ("tcg: WHY") EmulatedReps measured repetitions
// (PlatformReps), and returns those labels; other scales, and platforms
// under KVM or not yet probed, run the file's repetitions.
func (f *File) CapEmulated(accel map[string]string) []string {
	if f.Study == nil || f.Study.Scale != DefaultScale {
		return nil
	}
	var capped []string
	for _, l := range f.Platforms {
		if !VMPlatform(l) || !strings.HasPrefix(accel[l], "tcg") {
			continue
		}
		if n, err := strconv.Atoi(f.Reps); err == nil && n <= EmulatedReps {
			continue
		}
		if f.PlatformReps == nil {
			f.PlatformReps = map[string]int{}
		}
		f.PlatformReps[l] = EmulatedReps
		capped = append(capped, l)
	}
	return capped
}

// repsOn is how many measured repetitions platform label runs when the
// file's are reps: PlatformReps' cap where it is below them.
func (f File) repsOn(label string, reps int) int {
	if n := f.PlatformReps[label]; n > 0 && n < reps {
		return n
	}
	return reps
}

// givesVerdicts reports whether repetitions (a number or auto) are enough
// for a verdict.
func givesVerdicts(reps string) bool {
	if reps == "auto" {
		return true
	}
	n, err := strconv.Atoi(reps)
	return err == nil && n >= MinVerdictReps
}

// VerdictScales are the scales of the study (paper first, then the
// others by name) whose repetitions give verdicts.
func (f File) VerdictScales() []string {
	var out []string
	if f.Study == nil {
		return nil
	}
	paper := f.Study.paperReps
	if f.Study.Scale == "" || f.Study.Scale == ScalePaper {
		paper = f.Reps
	} else if paper == "" {
		// a built-in study written out at another scale and read back:
		// the paper's repetitions are the built-in file's
		if b, err := Load(f.Study.ID); err == nil {
			paper = b.Reps
		}
	}
	if givesVerdicts(paper) {
		out = append(out, ScalePaper)
	}
	names := slices.Sorted(maps.Keys(f.Study.Scales))
	for _, n := range names {
		r := f.Study.Scales[n].Reps
		if r == "" {
			r = paper
		}
		if givesVerdicts(r) {
			out = append(out, n)
		}
	}
	return out
}

// IDs lists the built-in studies, sorted.
func IDs() []string {
	ents, _ := fs.ReadDir(files, "files")
	var ids []string
	for _, e := range ents {
		ids = append(ids, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(ids)
	return ids
}

// Raw returns a built-in study file's text.
func Raw(id string) ([]byte, error) {
	b, err := files.ReadFile(path.Join("files", id+".yaml"))
	if err != nil {
		looksLikeFile := strings.ContainsRune(id, '/') || strings.HasSuffix(id, ".yaml") || strings.HasSuffix(id, ".yml")
		if looksLikeFile && fmt.Sprintf("%q", id) == `"`+id+`"` && !strings.ContainsAny(id, " '") { // printed as given
			return nil, fmt.Errorf("no built-in study %q (known: %s); a study file runs with 'isobench run %s' and its plan with 'isobench run %s --dry-run'", id, strings.Join(IDs(), ", "), id, id)
		}
		return nil, fmt.Errorf("no built-in study %q (known: %s)", id, strings.Join(IDs(), ", "))
	}
	return b, nil
}

// Load returns a built-in study at the paper's scale.
func Load(id string) (File, error) {
	b, err := Raw(id)
	if err != nil {
		return File{}, err
	}
	f, err := Decode(b)
	if err != nil {
		return File{}, fmt.Errorf("built-in study %s: %w", id, err)
	}
	return f, nil
}

// Decode reads a study file strictly (unknown keys are errors) and checks
// its metadata against its matrix.
func Decode(b []byte) (File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return File{}, err
	}
	return f, f.Check()
}

// Check verifies that the metadata refers to the matrix: run platforms
// are in platforms:, every finding names run platforms, every experiment
// with a workload selects at least one entry of workloads:.
func (f File) Check() error {
	if len(f.Platforms) == 0 || len(f.Workloads) == 0 {
		return fmt.Errorf("needs at least one entry under platforms and under workloads")
	}
	for _, l := range f.Platforms {
		if err := canonicalLabel(l); err != nil {
			return err
		}
	}
	m := f.Study
	if m == nil {
		return nil
	}
	if m.ID == "" || m.Title == "" {
		return fmt.Errorf("study: needs an id and a title")
	}
	// A label the file's scale drops is still the study's.
	known := func(l string) bool {
		return slices.Contains(f.Platforms, l) || slices.Contains(m.Scales[m.Scale].Drop, l)
	}
	for _, p := range m.Platforms {
		switch {
		case p.Label != "" && !known(p.Label):
			return fmt.Errorf("study %s: platform %q (%s) is not under platforms:", m.ID, p.Label, p.Paper)
		case p.Label == "" && p.NotRun == "":
			return fmt.Errorf("study %s: platform %q neither runs here (label) nor says why not (not_run)", m.ID, p.Paper)
		case p.Image != "" && p.Label == "":
			return fmt.Errorf("study %s: platform %q has an image but no label", m.ID, p.Paper)
		}
	}
	for name, sc := range m.Scales {
		for _, l := range sc.Drop {
			if !slices.Contains(f.Platforms, l) && (m.Scale == "" || m.Scale == ScalePaper) {
				return fmt.Errorf("study %s: scale %s drops %q, which is not under platforms:", m.ID, name, l)
			}
		}
		for w, kv := range sc.Params {
			sel, err := spec.Parse(w)
			if err == nil {
				_, err = spec.Parse(sel.Name + ":" + kv)
			}
			if err != nil {
				return fmt.Errorf("study %s: scale %s: %w", m.ID, name, err)
			}
			// A file written at another scale has its entries changed.
			if (m.Scale == "" || m.Scale == ScalePaper) && !f.selectsAny(sel) {
				return fmt.Errorf("study %s: scale %s: %q selects no entry under workloads:", m.ID, name, w)
			}
		}
	}
	if err := m.checkLedger(); err != nil {
		return err
	}
	for _, e := range m.Experiments {
		if e.Workload == "" {
			if e.NotRunnable == "" {
				return fmt.Errorf("study %s: experiment %s has no workload and no not_runnable reason", m.ID, e.ID)
			}
		} else {
			sel, err := spec.Parse(e.Workload)
			if err != nil {
				return fmt.Errorf("study %s: experiment %s: %w", m.ID, e.ID, err)
			}
			if !f.selectsAny(sel) {
				return fmt.Errorf("study %s: experiment %s selects %q, which no entry under workloads: matches", m.ID, e.ID, e.Workload)
			}
		}
		if err := f.checkPaperValues(known, e); err != nil {
			return fmt.Errorf("study %s: experiment %s: %w", m.ID, e.ID, err)
		}
		if _, _, err := ParseFigure(e.Figure); err != nil {
			return fmt.Errorf("study %s: experiment %s: %w", m.ID, e.ID, err)
		}
		if e.Score != nil {
			for name, row := range e.Score.Rows {
				sel, err := spec.Parse(row.Workload)
				if err != nil || len(row.Metrics) == 0 || !f.selectsAny(sel) {
					return fmt.Errorf("study %s: experiment %s: score row %s selects no entry under workloads: (%q) or has no metrics", m.ID, e.ID, name, row.Workload)
				}
			}
		}
		for _, fd := range e.Findings {
			for _, l := range slices.Concat(fd.Better, fd.Ranking, fd.Same) {
				if l, _ := SplitAt(l); !known(l) {
					return fmt.Errorf("study %s: experiment %s: finding %q names %q, which is not under platforms:", m.ID, e.ID, fd.Text, l)
				}
			}
			if len(fd.Better) != 0 && len(fd.Better) != 2 {
				return fmt.Errorf("study %s: experiment %s: better needs two platforms [A, B], got %v", m.ID, e.ID, fd.Better)
			}
			if fd.Margin != 0 && (len(fd.Same) == 0 || !(fd.Margin > 0 && fd.Margin < 1)) {
				return fmt.Errorf("study %s: experiment %s: finding %q: margin %g: a margin belongs to a same: finding and lies between 0 and 1 (0.03 for within 3%%)", m.ID, e.ID, fd.Text, fd.Margin)
			}
		}
	}
	return nil
}

// selectsAny reports whether sel matches an entry under workloads:.
func (f File) selectsAny(sel spec.Spec) bool {
	for _, w := range f.Workloads {
		if sp, err := spec.Parse(w); err == nil && Selects(sel, sp.Name, sp.Params) {
			return true
		}
	}
	return false
}

// Selects reports whether the selector sel (a workload name and the
// parameter values it requires) matches a workload with these params. A
// swept value in params ("1|2|4") matches a selector value among them.
func Selects(sel spec.Spec, name string, params map[string]string) bool {
	if sel.Name != name {
		return false
	}
	for k, v := range sel.Params {
		got, ok := params[k]
		if !ok || (got != v && !slices.Contains(strings.Split(got, "|"), v)) {
			return false
		}
	}
	return true
}

// AtScale returns the study at a scale: "paper" is the file as written;
// another scale replaces the repetitions and sets its parameters on every
// entry of the workloads it names. Every cell stays.
func (f File) AtScale(scale string) (File, error) {
	if scale == "" || scale == ScalePaper {
		out := f.clone()
		if out.Study != nil {
			out.Study.Scale = ScalePaper
			out.Study.paperReps = f.Reps
		}
		return out, nil
	}
	if f.Study == nil {
		return File{}, fmt.Errorf("scale %q: this study file has no scales", scale)
	}
	sc, ok := f.Study.Scales[scale]
	if !ok {
		names := []string{ScalePaper}
		for n := range f.Study.Scales {
			names = append(names, n)
		}
		sort.Strings(names)
		return File{}, fmt.Errorf("study %s has no scale %q (scales: %s)", f.Study.ID, scale, strings.Join(names, ", "))
	}
	out := f.clone()
	out.Study.Scale = scale
	if f.Study.Scale == "" || f.Study.Scale == ScalePaper {
		out.Study.paperReps = f.Reps
	}
	if sc.Reps != "" {
		out.Reps = sc.Reps
	}
	if sc.RepsCap != 0 {
		out.RepsCap = sc.RepsCap
	}
	if sc.Warmup != nil {
		out.Warmup = *sc.Warmup
	}
	out.Platforms = slices.DeleteFunc(out.Platforms, func(p string) bool { return slices.Contains(sc.Drop, p) })
	// The plain names first, then selectors by how much they select on.
	keys := make([]string, 0, len(sc.Params))
	sels := map[string]spec.Spec{}
	for k := range sc.Params {
		sel, err := spec.Parse(k)
		if err != nil {
			return File{}, fmt.Errorf("scale %s: %q: %w", scale, k, err)
		}
		keys, sels[k] = append(keys, k), sel
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := len(sels[keys[i]].Params), len(sels[keys[j]].Params)
		return a < b || a == b && keys[i] < keys[j]
	})
	for i, w := range out.Workloads {
		sp, err := spec.Parse(w)
		if err != nil {
			return File{}, fmt.Errorf("workload %q: %w", w, err)
		}
		as := spec.Spec{Name: sp.Name, Params: maps.Clone(sp.Params)} // selected on as written
		changed := false
		for _, k := range keys {
			if !Selects(sels[k], as.Name, as.Params) {
				continue
			}
			over, err := spec.Parse(sp.Name + ":" + sc.Params[k])
			if err != nil {
				return File{}, err
			}
			for k, v := range over.Params {
				sp.Params[k] = v
			}
			changed = true
		}
		if changed {
			out.Workloads[i] = sp.String()
		}
	}
	// An experiment selecting on a value the scale changes ("scp:file=450m")
	// selects the scaled entries: the values it names are rewritten too.
	out.Study.Experiments = slices.Clone(f.Study.Experiments)
	for i, e := range out.Study.Experiments {
		if e.Workload == "" {
			continue
		}
		sel, err := spec.Parse(e.Workload)
		if err != nil {
			continue // Check reports it
		}
		as := spec.Spec{Name: sel.Name, Params: maps.Clone(sel.Params)}
		changed := false
		for _, k := range keys {
			if !Selects(sels[k], as.Name, as.Params) {
				continue
			}
			over, err := spec.Parse(sel.Name + ":" + sc.Params[k])
			if err != nil {
				return File{}, err
			}
			for k, v := range over.Params {
				if _, named := sel.Params[k]; named {
					sel.Params[k], changed = v, true
				}
			}
		}
		if changed {
			out.Study.Experiments[i].Workload = sel.String()
		}
	}
	// So do the paper's values selecting on such a value (study 002's
	// "file=450m,neighbours=1").
	for i, e := range out.Study.Experiments {
		if e.PaperValues == nil || e.Workload == "" {
			continue
		}
		written, err := spec.Parse(f.Study.Experiments[i].Workload)
		if err != nil {
			continue
		}
		pv := *e.PaperValues
		pv.Values = slices.Clone(pv.Values)
		for j, v := range pv.Values {
			vp, err := spec.Parse(written.Name + ":" + v.Params)
			if v.Params == "" || err != nil {
				continue
			}
			as := spec.Spec{Name: written.Name, Params: maps.Clone(written.Params)}
			maps.Copy(as.Params, vp.Params)
			changed := false
			for _, k := range keys {
				if !Selects(sels[k], as.Name, as.Params) {
					continue
				}
				over, err := spec.Parse(written.Name + ":" + sc.Params[k])
				if err != nil {
					return File{}, err
				}
				for p, val := range over.Params {
					if _, named := vp.Params[p]; named {
						vp.Params[p], changed = val, true
					}
				}
			}
			if changed {
				pv.Values[j].Params = strings.TrimPrefix(vp.String(), vp.Name+":")
			}
		}
		out.Study.Experiments[i].PaperValues = &pv
	}
	return out, nil
}

func (f File) clone() File {
	out := f
	out.Platforms = slices.Clone(f.Platforms)
	out.Workloads = slices.Clone(f.Workloads)
	out.Instances = slices.Clone(f.Instances)
	if f.Study != nil {
		m := *f.Study
		out.Study = &m
	}
	return out
}

// Encode renders the file as YAML that `isobench run` reads back.
func (f File) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// NotRun lists the paper's platforms that do not run here.
func (m *Meta) NotRun() []Platform {
	if m == nil {
		return nil
	}
	var out []Platform
	for _, p := range m.Platforms {
		if p.Label == "" {
			out = append(out, p)
		}
	}
	return out
}

// PendingExperiments lists the experiments this binary cannot run yet.
func (m *Meta) PendingExperiments() []Experiment {
	if m == nil {
		return nil
	}
	var out []Experiment
	for _, e := range m.Experiments {
		if e.NotRunnable != "" {
			out = append(out, e)
		}
	}
	return out
}

// RunGroup is one run of a study: the platforms whose instances run from
// one image profile ("" is the file's).
type RunGroup struct {
	Image     string
	Platforms []string
}

// RunGroups splits f's platforms into the runs 'study run' makes: the
// platforms that run the file's image first, then, per other image a
// study platform needs (study.platforms[].image), those that need it.
// Groups with no platform are left out.
func (f File) RunGroups() []RunGroup {
	own := map[string]string{}
	if f.Study != nil {
		for _, p := range f.Study.Platforms {
			if p.Label != "" && p.Image != "" && p.Image != f.Image {
				own[p.Label] = p.Image
			}
		}
	}
	groups := []RunGroup{{Image: f.Image}}
	idx := map[string]int{f.Image: 0}
	for _, l := range f.Platforms {
		img, ok := own[l]
		if !ok {
			img = f.Image
		}
		i, ok := idx[img]
		if !ok {
			i = len(groups)
			idx[img] = i
			groups = append(groups, RunGroup{Image: img})
		}
		groups[i].Platforms = append(groups[i].Platforms, l)
	}
	return slices.DeleteFunc(groups, func(g RunGroup) bool { return len(g.Platforms) == 0 })
}

// SeparateRuns records which run each platform label ran in, so that
// comparisons across runs are unpaired (their repetitions did not run
// side by side).
func (m *Meta) SeparateRuns(groups []RunGroup) {
	if m == nil {
		return
	}
	m.runOf = map[string]int{}
	for i, g := range groups {
		for _, l := range g.Platforms {
			m.runOf[l] = i
		}
	}
}

// sameRun reports whether two platform labels ran in one run.
func (m *Meta) sameRun(a, b string) bool {
	if m == nil || m.runOf == nil {
		return true
	}
	return m.runOf[a] == m.runOf[b]
}

// canonicalLabel is an error unless label is written as a run's cells
// name their platform (name:options, the options in key order): findings
// and paper values are matched to cells by label, and a label with its
// options in another order matched none (study 003's LXC at standard
// scale checked 0 findings).
func canonicalLabel(label string) error {
	sp, err := spec.Parse(label)
	if err != nil {
		return fmt.Errorf("platform %q: %w", label, err)
	}
	want := sp.Name
	if c := spec.Canonical(sp.Params); c != "" {
		want += ":" + c
	}
	if want != label {
		return fmt.Errorf("platform %q: write it %q (its options in key order, as the run's cells name it), here and wherever the file names it", label, want)
	}
	return nil
}
