package runner

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/workload/service"
)

// Refused is a plan or a resumption the runner will not begin: the
// input is wrong, and nothing has started (the CLI's usage error, exit 2).
type Refused struct{ Msg string }

func (e Refused) Error() string { return e.Msg }

func refused(format string, a ...any) error { return Refused{fmt.Sprintf(format, a...)} }

// CannotRun is a platform × workload pair the plan leaves out, found
// before anything starts (Preflight).
type CannotRun struct {
	Target, Workload, Params, Why string
	Shown                         string // the workload as shown (workload.Def.Label)
}

func (c CannotRun) String() string {
	w := c.Workload
	if c.Params != "" {
		w += ":" + c.Params
	}
	return fmt.Sprintf("%s cannot run on %s: %s", cmp.Or(c.Shown, w), c.Target, c.Why)
}

// Preflight finds, per platform × workload, what cannot run before
// anything starts, from each workload's declared needs
// (workload.Def.Needs): a network workload on an instance without a
// network (network=none), a workload that runs servers on an image that
// lacks them, a workload with an image of its own (spark's) on a target
// that needs another (a system container, which boots the debian
// image's init). The host itself (Target.Host) has its network and its
// servers. It is an error (Refused) when nothing at all could run.
func Preflight(plan Plan) ([]CannotRun, error) {
	var out []CannotRun
	for _, job := range plan.Jobs {
		name, params := job.Def.Name, job.Params.String()
		for _, t := range plan.Targets {
			if t.Host {
				continue // the host itself: its network and its servers
			}
			c := CannotRun{Target: t.Label, Workload: name, Params: params, Shown: job.Def.Label(params)}
			required := cmp.Or(t.Requires, t.Image) // the image the platform itself needs
			switch {
			case job.Def.Needs.Network && t.Base.Network == platform.NetNone && !bothOnHost(params):
				c.Why = "the instance has no network (network=none); leave network out (bridge by default) or give network=bridge"
			case job.Def.Needs.Image != "" && required != "" && required != job.Def.Needs.Image:
				// a system container boots the debian image's init, which
				// the workload's own image has not (issue 27, defect 15),
				// also when the debian image is the plan's (study 003)
				c.Why = fmt.Sprintf("it runs in the %s image of its own, and %s runs the %s image (a system container boots its init; image= asks for one); run it on %s without init=system, boot=true or image=", job.Def.Needs.Image, t.Label, required, t.Name)
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
		return nil, refused("nothing in the plan can run: %s", strings.Join(why, "; "))
	}
	return out, nil
}

// bothOnHost: a network workload whose server and clients both run on the
// host needs no instance network.
func bothOnHost(params string) bool {
	return strings.Contains(","+params+",", ",server=host,") && strings.Contains(","+params+",", ",client=host,")
}

// RecordCannot stores a pair the plan leaves out as a failed cell of the
// run (class unsupported), so the store says why it has no samples.
func RecordCannot(ctx context.Context, s *store.Store, runID int64, c CannotRun) {
	name, opts, _ := strings.Cut(c.Target, ":")
	s.AddFailure(ctx, store.Failure{RunID: runID, Kind: store.FailedCell, Class: "unsupported", Platform: name, Options: opts,
		Workload: c.Workload, Params: c.Params, Error: "not run (pre-flight check): " + c.Why})
}

// Skipper is a Runner's Skip: the pairs Preflight left out, and, for a
// resumed run, the repetitions its store has (finished, Resume). skipped
// counts the latter (they take no time, for the progress estimate).
func Skipper(plan Plan, cannot []CannotRun, finished map[store.RepKey]bool, skipped *int) func(string, Cell, int) bool {
	out := map[[3]string]bool{}
	for _, c := range cannot {
		out[[3]string{c.Target, c.Workload, c.Params}] = true
	}
	names := map[string][2]string{}
	for _, t := range plan.Targets {
		names[t.Label] = [2]string{t.Name, t.Options}
	}
	return func(target string, cell Cell, rep int) bool {
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
