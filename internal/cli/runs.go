package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/stats"
	"github.com/isobench/isobench/internal/store"
)

// ExitRegression is the exit status of 'compare --fail-if-slower' when a
// cell got slower beyond the threshold and outside the noise.
const ExitRegression = 3

// cmdRuns lists the runs in a store.
func cmdRuns(ctx context.Context, st *State, args []string) error {
	fs := newFlags(st, "runs", "runs [--db FILE]\n\nThe runs in a store: id, start (UTC), duration, status, host, samples, and the command line\n(or study) that started each; merged runs also say where they came from.")
	db := fs.String("db", "isobench.db", "`FILE`: result store")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usage("runs takes no arguments (give --db FILE)")
	}
	s, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer s.Close()
	runs, err := s.Runs(ctx)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		fmt.Fprintf(st.Stdout, "%s holds no run yet\n", *db)
		return nil
	}
	counts, err := s.SampleCounts(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(st.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tstarted (UTC)\ttook\tstatus\thost\tsamples\tcommand")
	for _, r := range runs {
		took := "-"
		if !r.Finished.IsZero() {
			took = r.Finished.Sub(r.Started).Round(time.Second).String()
		}
		host := r.Hostname
		if host == "" {
			host = "?"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.Started.UTC().Format("2006-01-02 15:04:05"), took, r.Status, host, counts[r.ID], runCommand(r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range runs {
		if r.Origin != "" {
			fmt.Fprintf(st.Stdout, "run %d was merged from %s\n", r.ID, r.Origin)
		}
		if r.Status != store.StatusDone && r.Status != store.StatusRunning {
			fmt.Fprintf(st.Stdout, "run %d %s: %s (continue it: isobench run --resume %d --db %s)\n", r.ID, r.Status, oneLine(r.Error), r.ID, *db)
		}
	}
	return nil
}

// runCommand is how a run was started: its command line, or for a run of
// an older isobench its plan in short.
func runCommand(r store.Run) string {
	if r.Command != "" {
		return r.Command
	}
	var study Study
	if json.Unmarshal(r.Study, &study) == nil && len(study.Platforms) > 0 {
		return fmt.Sprintf("(study: platforms %s; workloads %s)", strings.Join(study.Platforms, " "), strings.Join(study.Workloads, " "))
	}
	return "(not recorded)"
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	if s == "" {
		s = "no error recorded"
	}
	return s
}

// cmdMerge joins stores.
func cmdMerge(ctx context.Context, st *State, args []string) error {
	fs := newFlags(st, "merge", "merge OUT.db A.db [B.db]...\n\nCopies every run of A, B... into OUT (created, or extended when it is a store already): runs get\nnew ids, their samples and failures follow them, and each keeps its host, fingerprint, times, status\nand command, with where it came from. A run already in OUT is not copied twice.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 2 {
		return usage("merge takes the output store and at least one input: isobench merge OUT.db A.db B.db")
	}
	out, inputs := fs.Arg(0), fs.Args()[1:]
	for _, in := range inputs {
		if !fileExists(in) {
			return usage("merge: no store %s", in)
		}
	}
	rep, err := store.Merge(ctx, out, inputs)
	if errors.Is(err, store.ErrMergeTarget) || errors.Is(err, store.ErrNotStore) {
		return usage("%v", err)
	}
	if err != nil {
		return err
	}
	added, skipped := 0, 0
	for _, r := range rep {
		if r.ToRun == 0 {
			skipped++
			fmt.Fprintf(st.Stdout, "%s run %d: already in %s\n", r.Input, r.FromRun, out)
			continue
		}
		added++
		fmt.Fprintf(st.Stdout, "%s run %d -> %s run %d (%d samples)\n", r.Input, r.FromRun, out, r.ToRun, r.Samples)
	}
	fmt.Fprintf(st.Stdout, "%d runs merged into %s, %d already there\n", added, out, skipped)
	return nil
}

// exportDoc is one run as JSON: what ran, where, how, and every sample.
type exportDoc struct {
	Run         exportRun         `json:"run"`
	Environment map[string]string `json:"environment"`
	Plan        json.RawMessage   `json:"plan"`
	Failures    []exportFailure   `json:"failures"`
	Samples     []exportSample    `json:"samples"`
}

type exportRun struct {
	ID       int64  `json:"id"`
	Started  string `json:"started"`
	Finished string `json:"finished,omitempty"`
	Status   string `json:"status"`
	Error    string `json:"error,omitempty"`
	Host     string `json:"host"`
	PID      int    `json:"pid,omitempty"`
	Command  string `json:"command,omitempty"`
	Origin   string `json:"origin,omitempty"`
}

type exportFailure struct {
	Kind      string `json:"kind"`
	Class     string `json:"class"`
	Platform  string `json:"platform"`
	Options   string `json:"options"`
	Workload  string `json:"workload"`
	Params    string `json:"params"`
	Instances int    `json:"instances"`
	Rep       int    `json:"rep"`
	Object    string `json:"object,omitempty"`
	Error     string `json:"error"`
}

type exportSample struct {
	resultRow
	Start      string            `json:"start"`
	DurationNS int64             `json:"duration_ns"`
	Tags       map[string]string `json:"tags,omitempty"`
}

// cmdExport writes one run as one JSON document.
func cmdExport(ctx context.Context, st *State, args []string) error {
	fs := newFlags(st, "export", "export [--db FILE] [--run ID]\n\nOne run as one JSON document: the run (times, status, host, command), its environment\n(fingerprint), its plan, its failures and every sample, warm-ups included (flagged).")
	db := fs.String("db", "isobench.db", "`FILE`: result store")
	run := fs.Int64("run", 0, "`ID`: the run (default: the latest)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer s.Close()
	runs, err := s.Runs(ctx)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		return usage("%v", store.ErrNoRuns)
	}
	r := runs[len(runs)-1]
	if *run != 0 {
		if r, err = s.Run(ctx, *run); err != nil {
			return usage("no run %d in %s ('isobench runs --db %s' lists them)", *run, *db, *db)
		}
	}
	samples, err := s.Samples(ctx, store.Filter{RunID: r.ID})
	if err != nil {
		return err
	}
	fails, err := s.Failures(ctx, r.ID)
	if err != nil {
		return err
	}
	doc := exportDoc{
		Run: exportRun{ID: r.ID, Started: r.Started.UTC().Format(time.RFC3339Nano), Status: r.Status, Error: r.Error,
			Host: r.Hostname, PID: r.PID, Command: r.Command, Origin: r.Origin},
		Environment: r.Fingerprint, Plan: r.Study, Failures: []exportFailure{}, Samples: []exportSample{},
	}
	if !r.Finished.IsZero() {
		doc.Run.Finished = r.Finished.UTC().Format(time.RFC3339Nano)
	}
	if len(doc.Plan) == 0 {
		doc.Plan = json.RawMessage("{}")
	}
	for _, f := range fails {
		doc.Failures = append(doc.Failures, exportFailure{f.Kind, f.Class, f.Platform, f.Options, f.Workload, f.Params, f.Instances, f.Rep, f.Object, f.Error})
	}
	for _, x := range samples {
		doc.Samples = append(doc.Samples, exportRow(x))
	}
	enc := json.NewEncoder(st.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// parsePercent reads a threshold: "5%", "5" (percent) or "0.5%".
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || math.IsNaN(v) || v < 0 || v >= 1000 {
		return 0, fmt.Errorf("want a percentage such as 5%%, got %q", s)
	}
	return v / 100, nil
}

// slowdown is how much worse B is than A for a change the family-wise
// interval flags as slower (0 otherwise): B/A − 1 for a lower-is-better
// metric, 1 − B/A for a higher-is-better one.
func slowdown(ch report.Change) float64 {
	r := ch.Ratio
	if r.Verdict != stats.VerdictSlower || !r.Valid {
		return 0
	}
	if ch.Cell.Better == stats.BetterLower {
		return r.Ratio - 1
	}
	return 1 - r.Ratio
}
