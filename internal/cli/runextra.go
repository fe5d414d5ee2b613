package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/isobench/isobench/internal/hostinfo"
	"github.com/isobench/isobench/internal/progress"
	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/runner"
	"github.com/isobench/isobench/internal/store"
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
	r, err := runner.Resumable(ctx, db, id, hostinfo.Fingerprint())
	if err != nil {
		return Study{}, nil, refusal(err)
	}
	var study Study
	if err := json.Unmarshal(r.Study, &study); err != nil {
		return Study{}, nil, fmt.Errorf("--resume %d: the stored plan cannot be read: %w", id, err)
	}
	return study, &r, nil
}

// refusal is a runner's refusal (runner.Refused, runner.HostChanged) as
// the usage error it is (exit 2, nothing started); other errors as they
// are.
func refusal(err error) error {
	var hc runner.HostChanged
	if errors.As(err, &hc) {
		var diff []string
		for _, c := range hc.Changes {
			diff = append(diff, fmt.Sprintf("%s was %s, is %s", c.Key, sanitize(orNone(c.Was)), sanitize(orNone(c.Is))))
		}
		return usage("--resume %d: the run began on another host or with another isobench (%s): its samples would not be comparable; start a new run", hc.ID, strings.Join(diff, "; "))
	}
	var r runner.Refused
	if errors.As(err, &r) {
		return usageError{r}
	}
	return err
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
