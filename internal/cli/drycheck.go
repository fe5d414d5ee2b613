package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/study"
	"github.com/isobench/isobench/internal/workload"
)

// hostHas is study.HostHas (a seam for the tests).
var hostHas = study.HostHas

// pyImports reports whether python3 here imports module (a Tool with
// Module set: spark's native run uses pyspark when there is no
// spark-submit).
var pyImports = func(module string) bool {
	if !hostHas("python3") {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "python3", "-c", "import "+module).Run() == nil
}

// toolHere reports whether t is here: its executable on PATH, or, for a
// Module, python3 imports it.
func toolHere(t workload.Tool) bool {
	return hostHas(t.Bin) || t.Module && pyImports(t.Bin)
}

// missingTool is how a dry run names t when neither it nor any of its
// Alt is here, with how to get it; "" when one is here.
func missingTool(t workload.Tool) string {
	var names []string
	for _, u := range append([]workload.Tool{t}, t.Alt...) {
		if toolHere(u) {
			return ""
		}
		n := u.Bin
		if u.Module {
			n = "python3's " + n
		}
		names = append(names, n)
	}
	return fmt.Sprintf("%s (%s)", strings.Join(names, " or "), t.HowToGet())
}

// coldImages is what a dry run says of the image profiles the plan's
// instances run (the file's image, or minimal; what platforms and
// workloads ask for themselves): which are not built on this host yet, so
// that the first run builds a Debian tree first, minutes the plan's
// estimate does not count.
func (st *State) coldImages(ctx context.Context, w io.Writer, labels, workloads []string, img string, env platform.Env) {
	profiles := []string{cmp.Or(img, image.Minimal)}
	add := func(p string) {
		if p != "" && !slices.Contains(profiles, p) {
			profiles = append(profiles, p)
		}
	}
	for _, l := range labels {
		if f, o, err := st.Platforms.Parse(l); err == nil && f.Image != nil {
			add(f.Image(o))
		}
	}
	for _, ws := range workloads {
		if sp, err := spec.Parse(ws); err == nil {
			if def, err := st.lookupWorkload(sp.Name); err == nil {
				add(def.Needs.Image)
			}
		}
	}
	b := image.Builder{AgentBinary: env.AgentBinary, StateDir: env.StateDir}
	for _, p := range profiles {
		cold, err := b.Cold(ctx, p)
		switch {
		case err != nil:
			fmt.Fprintf(w, "warning: image %s: %v\n", p, err)
		case cold:
			fmt.Fprintf(w, "image %s: not built on this host yet: the first run builds its Debian tree with mmdebstrap first (a few minutes, not in the estimate)\n", p)
		}
	}
}

// dryChecks is what a dry run says of this host, as warnings (the plan
// stands): per platform whether it is available here (doctor's check:
// the platform is constructed and asked, nothing is started), and the
// executables the plan's workloads need on the host that it lacks (what
// each declares in its Needs.HostTools).
func (st *State) dryChecks(ctx context.Context, w io.Writer, labels, workloads []string, img, stateDir string) {
	env := platform.Env{AgentBinary: st.Executable, StateDir: stateDir, Log: io.Discard}
	fmt.Fprintln(w, "\nhere (isobench doctor's check; warnings, the plan stands):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range labels {
		fmt.Fprintf(tw, "  %s\t%s\n", l, st.availableHere(ctx, l, env))
	}
	tw.Flush()
	st.coldImages(ctx, w, labels, workloads, img, env)
	missing := map[string][]string{} // "bin (apt-get install pkg)" -> what needs it
	var order []string
	note := func(what, who string) {
		if !slices.Contains(missing[what], who) {
			if missing[what] == nil {
				order = append(order, what)
			}
			missing[what] = append(missing[what], who)
		}
	}
	for _, ws := range workloads {
		sp, err := spec.Parse(ws)
		if err != nil {
			continue
		}
		def, err := st.lookupWorkload(sp.Name)
		if err != nil || def.Needs.HostTools == nil {
			continue
		}
		variants, err := workload.Expand(sp.Params)
		if err != nil {
			continue
		}
		for _, v := range variants {
			params, err := def.Resolve(v.Raw)
			if err != nil {
				continue
			}
			for _, l := range labels {
				native := st.Platforms[strings.SplitN(l, ":", 2)[0]].IsHost && !strings.Contains(l, "host=")
				who := def.Name
				if native {
					who += " on native"
				}
				for _, t := range def.Needs.HostTools(params, native) {
					if what := missingTool(t); what != "" {
						note(what, who)
					}
				}
			}
		}
	}
	if len(order) == 0 {
		fmt.Fprintln(w, "host tools: every one the workloads need is here")
		return
	}
	fmt.Fprintln(w, "warning: missing on this host (the cells that need them will fail):")
	for _, what := range order {
		fmt.Fprintf(w, "  %s: for %s\n", what, strings.Join(missing[what], ", "))
	}
}

// availableHere is a platform label's state for a dry run: "available"
// or "NOT available: WHY" (the first line of it); a platform on a remote
// host is not contacted.
func (st *State) availableHere(ctx context.Context, label string, env platform.Env) string {
	f, o, err := st.Platforms.Parse(label)
	if err != nil {
		return "NOT available: " + firstLine(err.Error())
	}
	if o.Raw["host"] != "" || o.Extra["host"] != "" {
		return "not checked (a remote host: isobench doctor --host asks it)"
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p, err := f.New(cctx, o, env)
	if err == nil {
		err = p.Available(cctx)
		p.Close(cctx)
	}
	if err != nil {
		return "NOT available: " + firstLine(err.Error()) + " (see 'isobench doctor')"
	}
	return "available"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
