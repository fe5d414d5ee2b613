package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/isobench/isobench/internal/platform"
)

// These tests' way of doing what package cleanup does with the
// platform's Sweep: decide each leftover (its Judge, or dead of its run
// token), say one line per one on w ("removed ...", "would remove ..."
// with dryRun, "kept ...") and remove the dead ones.
func apply(ctx context.Context, w io.Writer, found []platform.Leftover, dead func(token string) (bool, string), dryRun bool) error {
	var errs []error
	for _, l := range found {
		what := l.Kind + " " + l.Name
		var isDead bool
		var why string
		if l.Judge != nil {
			isDead, why = l.Judge()
		} else {
			isDead, why = dead(l.Token)
		}
		switch {
		case !isDead:
			if why != "" {
				fmt.Fprintf(w, "kept %s: %s\n", what, why)
			}
		case dryRun:
			fmt.Fprintf(w, "would remove %s (%s)\n", what, why)
		default:
			if err := l.Remove(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", what, err))
				continue
			}
			fmt.Fprintf(w, "removed %s (%s)\n", what, why)
		}
	}
	return errors.Join(errs...)
}

// CleanPods applies sweepPods.
func CleanPods(ctx context.Context, w io.Writer, kubeconfig string, dead func(token string) (bool, string), dryRun bool) error {
	found, err := sweepPods(ctx, kubeconfig)
	if err != nil {
		return err
	}
	return apply(ctx, w, found, dead, dryRun)
}

// clean applies n.leftovers.
func (n node) clean(ctx context.Context, w io.Writer, dryRun bool) error {
	return apply(ctx, w, n.leftovers(), nil, dryRun)
}

// TestSweepOnlyForClean: the sweep before a run (SweepEnv.Clean false)
// lists nothing: it asks no cluster and looks at no node.
func TestSweepOnlyForClean(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent/isobench-test-kubeconfig")
	found, err := Sweep(context.Background(), platform.SweepEnv{})
	if err != nil || len(found) != 0 {
		t.Errorf("without Clean: %v, %v; want nothing", found, err)
	}
}
