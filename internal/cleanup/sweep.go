package cleanup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/isobench/isobench/internal/runrec"
	"github.com/isobench/isobench/internal/store"
)

// Clean scans, prints what it found to w and, unless dryRun, removes it
// and marks the dead runs "crashed" in their stores. The error lists every
// failed removal.
func Clean(ctx context.Context, w io.Writer, o Options, dryRun bool) error {
	p, err := Scan(ctx, o)
	if err != nil {
		return err
	}
	if dryRun {
		Report(w, p, false, nil)
		if len(p.Objects) == 0 && len(p.DeadRuns) == 0 {
			fmt.Fprintln(w, "nothing to remove")
		}
		return nil
	}
	fails := Remove(ctx, p)
	Report(w, p, true, fails)
	markErr := markCrashed(ctx, p)
	if len(p.Objects) == 0 && len(p.DeadRuns) == 0 {
		fmt.Fprintln(w, "nothing to remove")
	}
	return errors.Join(failErr(fails), markErr)
}

// Sweep is what `isobench run` does before it starts: Clean, printing only
// when something was found, with removal failures as warnings (a leftover
// of a dead run does not stop a new one).
func Sweep(ctx context.Context, w io.Writer, o Options) {
	p, err := Scan(ctx, o)
	if err != nil {
		fmt.Fprintf(w, "warning: looking for what dead runs left: %v\n", err)
		return
	}
	if len(p.Objects) == 0 && len(p.DeadRuns) == 0 {
		return
	}
	fails := Remove(ctx, p)
	fmt.Fprintln(w, "removing what runs that died left on this host (see 'isobench clean'):")
	var b strings.Builder
	Report(&b, p, true, fails)
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		if !strings.HasPrefix(l, "kept ") || strings.Contains(l, "cannot ") {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if err := markCrashed(ctx, p); err != nil {
		fmt.Fprintf(w, "warning: %v\n", err)
	}
}

func failErr(fails []Failure) error {
	if len(fails) == 0 {
		return nil
	}
	var s []string
	for _, f := range fails {
		s = append(s, f.String())
	}
	return fmt.Errorf("%d removal(s) failed: %s", len(fails), strings.Join(s, "; "))
}

// markCrashed ends the dead runs' rows in their stores as "crashed", with
// what was found of them.
func markCrashed(ctx context.Context, p *Plan) error {
	var errs []error
	for _, r := range p.DeadRuns {
		if r.DB == "" || r.RunID == 0 {
			continue
		}
		if _, err := os.Stat(r.DB); err != nil {
			continue
		}
		if err := MarkCrashed(ctx, r.DB, r.RunID, note(p, r)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// MarkCrashed marks run id in the store at db "crashed" with note; a run
// that is no longer "running" is left as it is.
func MarkCrashed(ctx context.Context, db string, id int64, note string) error {
	s, err := store.Open(ctx, db)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.MarkCrashed(ctx, id, note); err != nil && !errors.Is(err, store.ErrNotRunning) {
		return err
	}
	return nil
}

func note(p *Plan, r *runrec.Record) string {
	kinds := map[string]int{}
	var order []string
	for _, o := range p.Objects {
		if kinds[o.Kind] == 0 {
			order = append(order, o.Kind)
		}
		kinds[o.Kind]++
	}
	var found []string
	for _, k := range order {
		found = append(found, fmt.Sprintf("%d %s", kinds[k], k))
	}
	what := "nothing"
	if len(found) > 0 {
		what = strings.Join(found, ", ")
	}
	return fmt.Sprintf("isobench process %d died without ending the run; found and removed on the host: %s", r.Pid, what)
}
