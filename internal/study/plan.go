package study

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/workload"
)

// Job is one expanded workload of a plan (one value of a sweep).
type Job struct {
	Spec     string // as written in the study (with the sweep)
	Workload string
	Params   workload.Params
	// Label is the job as shown to users: the workload and the
	// parameters that differ from their defaults (workload.Registry.Label)
	Label  string
	Sweep  []string
	PerRep time.Duration // estimated time of one repetition at one instance
	// Fixed says the repetition does fixed work (more instances than
	// cores take longer; workload.Def.FixedWork).
	Fixed bool
	def   workload.Def
}

// Plan is what a study will run: jobs × instance counts × platforms ×
// (warm-up + measured) repetitions, and an estimate of the time.
type Plan struct {
	File      File
	Jobs      []Job
	Cells     int // jobs × instance counts
	Runs      int // repetitions over all cells and platforms (warm-ups included)
	Reps      int // measured repetitions per cell and platform (the cap with auto)
	Estimate  time.Duration
	Available []string // pending workloads this binary has after all
	// Accel says, per VM platform label (VMPlatform), what runs its
	// guests: "kvm", "tcg: WHY", or "" when the run's KVM probe will
	// decide (a dry run).
	Accel map[string]string
	// Images are, per platform label, the image profile its instances
	// run when it is not the file's (platform.Factory.Image: a system
	// container boots the debian image's systemd).
	Images map[string]string
	// boots are the platform labels whose instances boot an init system
	// (platform.Factory.Image names an image for their options).
	boots map[string]bool
}

// refuses reports whether a platform whose instances boot an init system
// (boots) refuses workload def at once, and why: a system container cannot
// boot an image without one, such as the one a workload picks for itself
// (workload.Needs.Image: spark's), so those cells cost nothing and give
// nothing.
func refuses(boots bool, def workload.Def) (string, bool) {
	img := def.Needs.Image
	if img == "" || image.CheckBootable(img) == nil || !boots {
		return "", false
	}
	return fmt.Sprintf("a system container (init=system) cannot boot the %s image %s uses (it has no init system): those cells are left out before the run starts (pre-flight check, recorded as not run)", img, def.Name), true
}

// cores the estimate assumes fixed work is spread over.
const cores = 2

// NewPlan expands f's workloads with reg (sweeps, defaults) and estimates
// the time: each job's per-repetition estimate from its workload's
// definition, each platform's instance, system-boot and one-off costs from
// its factory in plats (platform.Factory.Cost; platform.DefaultCost for a
// platform plats does not have, or for every platform when plats is nil).
func NewPlan(f File, reg workload.Registry, plats platform.Registry) (Plan, error) {
	p := Plan{File: f}
	reps := 5
	switch {
	case f.Reps == "":
	case f.Reps == "auto":
		reps = 30 // the run's default cap
		if f.RepsCap > 0 {
			reps = f.RepsCap
		}
	default:
		n, err := strconv.Atoi(f.Reps)
		if err != nil || n < 1 {
			return Plan{}, fmt.Errorf("reps %q: want a whole number or auto", f.Reps)
		}
		reps = n
	}
	p.Reps = reps
	instances := f.Instances
	if len(instances) == 0 {
		instances = []int{1}
	}
	for _, w := range f.Workloads {
		sp, err := spec.Parse(w)
		if err != nil {
			return Plan{}, fmt.Errorf("workload %q: %w", w, err)
		}
		def, err := reg.Lookup(sp.Name)
		if err != nil {
			return Plan{}, err
		}
		vs, err := workload.Expand(sp.Params)
		if err != nil {
			return Plan{}, fmt.Errorf("workload %s: %w", sp.Name, err)
		}
		for _, v := range vs {
			params, err := def.Resolve(v.Raw)
			if err != nil {
				return Plan{}, err
			}
			p.Jobs = append(p.Jobs, Job{Spec: w, Workload: sp.Name, def: def, Params: params, Label: reg.Label(sp.Name, params.String()), Sweep: v.Sweep, PerRep: def.EstimateOf(params),
				Fixed: def.FixedWork != nil && def.FixedWork(params)})
		}
	}
	p.boots = map[string]bool{}
	for _, pl := range f.Platforms {
		if fac, o, err := plats.Parse(pl); err == nil && fac.Image != nil && fac.Image(o) != "" {
			p.boots[pl] = true
		}
	}
	p.Cells = len(p.Jobs) * len(instances)
	for _, pl := range f.Platforms {
		p.Runs += p.Cells * (f.repsOn(pl, reps) + f.Warmup)
	}
	for _, j := range p.Jobs {
		for _, n := range instances {
			// Fixed work shares the cores; timed work does not take longer.
			work := j.PerRep
			if j.Fixed && n > cores {
				work = time.Duration(float64(work) * float64(n) / cores)
			}
			for _, pl := range f.Platforms {
				if _, no := refuses(p.boots[pl], j.def); no {
					continue
				}
				name, _, _ := strings.Cut(pl, ":")
				cost := plats.Cost(name)
				c := cost.Instance
				if p.boots[pl] {
					c += cost.SystemBoot
				}
				// Instances are created concurrently, but engines
				// serialise much of it: count half of them.
				setup := time.Duration(float64(c) * math.Max(1, float64(n)/2))
				p.Estimate += time.Duration(f.repsOn(pl, reps)+f.Warmup) * (work + setup)
			}
		}
	}
	for _, pl := range f.Platforms {
		name, _, _ := strings.Cut(pl, ":")
		p.Estimate += plats.Cost(name).Once
		if fac, o, err := plats.Parse(pl); err == nil && fac.Image != nil {
			if img := fac.Image(o); img != "" && img != cmp.Or(f.Image, image.Minimal) {
				if p.Images == nil {
					p.Images = map[string]string{}
				}
				p.Images[pl] = img
			}
		}
	}
	if f.Study != nil {
		for _, e := range f.Study.Experiments {
			for _, w := range e.Pending {
				if sp, err := spec.Parse(w); err == nil {
					if _, err := reg.Lookup(sp.Name); err == nil {
						p.Available = append(p.Available, w)
					}
				}
			}
		}
	}
	return p, nil
}

// Print writes the plan for a person: what runs, what does not and why,
// and how long it should take.
func (p Plan) Print(w io.Writer) {
	f := p.File
	if m := f.Study; m != nil {
		fmt.Fprintf(w, "study %s (%s scale): %s\n  %s\n", m.ID, m.Scale, m.Title, m.Citation)
	}
	inst := f.Instances
	if len(inst) == 0 {
		inst = []int{1}
	}
	fmt.Fprintf(w, "platforms: %s   instances: %s   baseline: %s\n", strings.Join(f.Platforms, ", "), joinInts(inst), orDash(f.Baseline))
	if f.Baseline == "" {
		fmt.Fprintln(w, "  no baseline: each platform is reported alone, with no ratio and no verdict; give another platform (--platform native) to compare against")
	}
	if m := f.Study; m != nil && m.PaperBaseline != "" {
		fmt.Fprintf(w, "  the paper's baseline: %s\n", m.PaperBaseline)
	}
	for _, pl := range f.Platforms {
		if img, ok := p.Images[pl]; ok {
			fmt.Fprintf(w, "  %s runs the %s image (it boots an init system), the others %s\n", pl, img, cmp.Or(f.Image, image.Minimal))
		}
	}
	reps := "repetitions"
	if p.Reps == 1 {
		reps = "repetition"
	}
	fmt.Fprintf(w, "%d workload cells × %d instance counts = %d cells; × %d platforms × %d %s", len(p.Jobs), len(inst), p.Cells, len(f.Platforms), p.Reps, reps)
	var fewer []string // CapEmulated's caps
	for _, l := range f.Platforms {
		if n := f.repsOn(l, p.Reps); n < p.Reps {
			fewer = append(fewer, fmt.Sprintf("%s %d", l, n))
		}
	}
	if len(fewer) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(fewer, ", "))
	}
	if f.Warmup > 0 {
		fmt.Fprintf(w, " (+%d warm-up)", f.Warmup)
	}
	if f.Reps == "auto" {
		fmt.Fprintf(w, " (reps auto: at least %d, at most %d; the estimate is for %d)", MinVerdictReps, p.Reps, p.Reps)
	}
	fmt.Fprintf(w, " = %d runs, about %s\n", p.Runs, roundEstimate(p.Estimate))
	if m := f.Study; m != nil {
		scale := cmp.Or(m.Scale, ScalePaper)
		vs := f.VerdictScales()
		switch {
		case givesVerdicts(f.Reps):
			fmt.Fprintf(w, "verdicts: this %s scale gives them (at least %d repetitions per side); scales that do: %s\n", scale, MinVerdictReps, strings.Join(vs, ", "))
		case len(vs) > 0:
			fmt.Fprintf(w, "verdicts: none at this %s scale (%s repetitions, fewer than %d: trends only); for verdicts run --scale %s\n", scale, f.Reps, MinVerdictReps, strings.Join(vs, " or --scale "))
		default:
			fmt.Fprintf(w, "verdicts: none at this %s scale (%s repetitions, fewer than %d); run --reps %d or more\n", scale, f.Reps, MinVerdictReps, MinVerdictReps)
		}
	}
	for _, j := range p.Jobs {
		sw := ""
		if len(j.Sweep) > 0 {
			sw = "  [sweep " + strings.Join(j.Sweep, ",") + "]"
		}
		fmt.Fprintf(w, "  %s  ~%s per repetition%s\n", cmp.Or(j.Label, j.Workload+":"+j.Params.String()), j.PerRep.Round(100*time.Millisecond), sw)
	}
	said := map[string]bool{}
	for _, j := range p.Jobs {
		for _, l := range f.Platforms {
			if why, no := refuses(p.boots[l], j.def); no && !said[l+j.Workload] {
				said[l+j.Workload] = true
				fmt.Fprintf(w, "%s: %s\n", l, why)
			}
		}
	}
	for _, l := range f.Platforms {
		if !VMPlatform(l) {
			continue
		}
		switch a, ok := p.Accel[l]; {
		case a == "kvm":
		case strings.HasPrefix(a, "tcg"):
			why := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(a, "tcg"), ":"))
			fmt.Fprintf(w, "%s: %s (%s): its findings will be not comparable", l, EmulatedNote, orDash(why))
			if n := f.repsOn(l, p.Reps); n < p.Reps {
				fmt.Fprintf(w, "; it runs %d repetitions per cell, not %d (no verdict can come from it, and each boots VMs)", n, p.Reps)
			}
			fmt.Fprintln(w)
		case !ok || a == "":
			fmt.Fprintf(w, "%s: KVM or TCG is decided when the run starts (a probe boot); under TCG it is %s and its findings not comparable\n", l, EmulatedNote)
		}
	}
	if m := f.Study; m != nil {
		for _, pl := range m.NotRun() {
			fmt.Fprintf(w, "not run here: %s: %s", pl.Paper, pl.NotRun)
			if pl.WouldRun != "" {
				fmt.Fprintf(w, " (would run with: %s)", pl.WouldRun)
			}
			fmt.Fprintln(w)
		}
		for _, e := range m.PendingExperiments() {
			fmt.Fprintf(w, "not yet runnable: %s %s: %s\n", e.ID, e.Title, e.NotRunnable)
		}
		if m.HasLedger() {
			fmt.Fprintf(w, "against the paper ('isobench study fidelity %s' says why each item differs):\n", m.ID)
			n := 0
			for _, e := range m.Experiments {
				l := m.Ledger(e, f.Reps)
				if l.Faithful() {
					n++
				}
				fmt.Fprintf(w, "  %s %s\n", e.ID, l.Line())
			}
			fmt.Fprintf(w, "faithful here: %d of %d\n", n, len(m.Experiments))
		}
		if len(p.Available) > 0 {
			fmt.Fprintf(w, "this binary now has %s: add to workloads: (see the study's pending entries) to run them\n", strings.Join(p.Available, ", "))
		}
	}
}

func roundEstimate(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(math.Ceil(d.Minutes())))
	}
	return fmt.Sprintf("%.1f h", d.Hours())
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
