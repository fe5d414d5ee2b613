package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/isobench/isobench/internal/hostinfo"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/progress"
	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/runner"
	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/workload/service"
)

// resumeStudy reads the plan of run id from the store at db for
// --resume: the run's study as stored. Flags that would change the plan
// are refused (the resumed run must be the run that was begun).
func resumeStudy(ctx context.Context, fs *flag.FlagSet, db string, id int64) (Study, *store.Run, error) {
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "platform", "workload", "host", "spread", "duet", "instances", "reps", "reps-cap", "target", "warmup", "baseline", "image":
			bad = append(bad, "--"+f.Name)
		}
	})
	if fs.NArg() > 0 {
		bad = append(bad, fs.Arg(0))
	}
	if len(bad) > 0 {
		return Study{}, nil, usage("--resume replays the run's own plan: leave out %s", strings.Join(bad, ", "))
	}
	if !fileExists(db) {
		return Study{}, nil, usage("--resume %d: no store %s (give its --db)", id, db)
	}
	s, err := store.OpenReadOnly(ctx, db)
	if err != nil {
		return Study{}, nil, err
	}
	defer s.Close()
	r, err := s.Run(ctx, id)
	if errors.Is(err, store.ErrNoSuchRun) {
		return Study{}, nil, usage("--resume %d: %s holds no run %d ('isobench runs --db %s' lists them)", id, db, id, db)
	}
	if err != nil {
		return Study{}, nil, err
	}
	if r.Status == store.StatusDone {
		return Study{}, nil, usage("--resume %d: the run finished (done): there is nothing to resume", id)
	}
	if diff := resumeDiff(r.Fingerprint, hostinfo.Fingerprint()); len(diff) > 0 {
		return Study{}, nil, usage("--resume %d: the run began on another host or with another isobench (%s): its samples would not be comparable; start a new run", id, strings.Join(diff, "; "))
	}
	var study Study
	if err := json.Unmarshal(r.Study, &study); err != nil {
		return Study{}, nil, fmt.Errorf("--resume %d: the stored plan cannot be read: %w", id, err)
	}
	return study, &r, nil
}

// resumeKeys are the fingerprint entries a resumed run must share with
// the run as it began: the same host, kernel, hardware and isobench build.
var resumeKeys = []string{"hostname", "kernel", "cpu_model", "cores", "memory_total", "cgroup_version", "isobench_version", "isobench_commit"}

// resumeDiff lists, as "key was X, is Y", where the host and build now
// differ from those a run began with (a key the old fingerprint lacks is
// a difference too: a store from elsewhere cannot be vouched for).
func resumeDiff(was, now map[string]string) []string {
	var out []string
	for _, k := range resumeKeys {
		if was[k] != now[k] {
			out = append(out, fmt.Sprintf("%s was %s, is %s", k, sanitize(orNone(was[k])), sanitize(orNone(now[k]))))
		}
	}
	return out
}

// cannotRun is a platform × workload pair the plan leaves out, found
// before anything starts.
type cannotRun struct {
	Target, Workload, Params, Why string
	Shown                         string // the workload as shown (workload.Def.Label)
}

func (c cannotRun) String() string {
	return fmt.Sprintf("%s cannot run on %s: %s", cmp.Or(c.Shown, report.Label(c.Workload, c.Params)), c.Target, c.Why)
}

// preflight finds, per platform × workload, what cannot run before
// anything starts: a network workload on an instance without a network
// (network=none), a service workload on an image that lacks the server.
// It is an error when nothing at all could run.
func preflight(plan runner.Plan) ([]cannotRun, error) {
	var out []cannotRun
	for _, job := range plan.Jobs {
		name, params := job.Def.Name, job.Params.String()
		for _, t := range plan.Targets {
			if t.Host {
				continue // the host itself: its network and its servers
			}
			c := cannotRun{Target: t.Label, Workload: name, Params: params, Shown: job.Def.Label(params)}
			switch {
			case job.Def.Needs.Network && t.Base.Network == platform.NetNone && !bothOnHost(params):
				c.Why = "the instance has no network (network=none); leave network out (bridge by default) or give network=bridge"
			case job.Def.Needs.Servers && service.ImageFor(cmp.Or(t.Image, plan.Image)) != service.Image:
				c.Why = fmt.Sprintf("the %s image has no server for it; give --image debian (or leave --image out: the service workloads then choose it)", cmp.Or(t.Image, plan.Image))
			default:
				continue
			}
			out = append(out, c)
		}
	}
	if len(out) > 0 && len(out) == len(plan.Jobs)*len(plan.Targets) {
		var why []string
		for _, c := range out {
			why = append(why, c.String())
		}
		return nil, usage("nothing in the plan can run: %s", strings.Join(why, "; "))
	}
	return out, nil
}

// bothOnHost: a network workload whose server and clients both run on the
// host needs no instance network.
func bothOnHost(params string) bool {
	return strings.Contains(","+params+",", ",server=host,") && strings.Contains(","+params+",", ",client=host,")
}

// recordCannot stores a pair the plan leaves out as a failed cell of the
// run (class unsupported), so the store says why it has no samples.
func recordCannot(ctx context.Context, s *store.Store, runID int64, c cannotRun) {
	name, opts, _ := strings.Cut(c.Target, ":")
	s.AddFailure(ctx, store.Failure{RunID: runID, Kind: store.FailedCell, Class: "unsupported", Platform: name, Options: opts,
		Workload: c.Workload, Params: c.Params, Error: "not run (pre-flight check): " + c.Why})
}

// skipper is the runner's Skip: pairs the pre-flight check left out, and
// for a resumed run the repetitions its store has. skipped counts the
// latter (they take no time, for the progress estimate).
func skipper(plan runner.Plan, cannot []cannotRun, finished map[store.RepKey]bool, skipped *int) func(string, runner.Cell, int) bool {
	out := map[[3]string]bool{}
	for _, c := range cannot {
		out[[3]string{c.Target, c.Workload, c.Params}] = true
	}
	names := map[string][2]string{}
	for _, t := range plan.Targets {
		names[t.Label] = [2]string{t.Name, t.Options}
	}
	return func(target string, cell runner.Cell, rep int) bool {
		if out[[3]string{target, cell.Workload, cell.Params}] {
			return true
		}
		k := store.RepKey{Platform: names[target][0], Options: names[target][1], Workload: cell.Workload, Params: cell.Params,
			Instances: cell.Instances, Rep: rep, Warmup: rep < 0}
		if rep < 0 {
			k.Rep = rep + plan.Warmup
		}
		if finished[k] {
			*skipped++
			return true
		}
		return false
	}
}

// progressFunc feeds the runner's progress to the display; notes are
// shown even with --quiet. label shows a cell's workload (workload.Registry.Label).
func progressFunc(d *progress.Display, quiet bool, skipped *int, label func(workload, params string) string) func(runner.Progress) {
	return func(p runner.Progress) {
		if p.Note != "" {
			d.Note(p.Note)
			return
		}
		if quiet {
			return
		}
		d.Update(progress.State{Cell: fmt.Sprintf("%s ×%d", label(p.Cell.Workload, p.Cell.Params), p.Cell.Instances), CellIndex: p.CellIndex, Cells: p.Cells,
			Target: p.Target, Rep: p.Rep, Reps: p.Reps, Done: p.Done, Total: p.Total, Elapsed: p.Elapsed, Skipped: *skipped})
	}
}

// commandLine is the command as the user would type it again.
func commandLine(cmd string, args []string) string {
	parts := []string{"isobench", cmd}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`|&;<>()*?[]#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// reportPath is the run's HTML report next to its store: DB-runN.html.
func reportPath(db string, runID int64) string {
	base := strings.TrimSuffix(db, filepath.Ext(db))
	return fmt.Sprintf("%s-run%d.html", base, runID)
}

func writeHTML(path, db string, d report.Doc) error {
	return writeOutput("--html", path, db, func(w io.Writer) error { return report.HTML(w, d) })
}
