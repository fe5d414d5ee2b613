package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/isobench/isobench/internal/hostinfo"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/store"
	"github.com/isobench/isobench/internal/workload"
)

func openExisting(ctx context.Context, path string) (*store.Store, error) {
	if path == "" {
		return nil, usage("%v", store.ErrEmptyPath)
	}
	if !fileExists(path) {
		return nil, usage("no result store at %s: run 'isobench run ... --db %s' first", path, path)
	}
	// Reading commands open the store read-only: they never create tables
	// in, migrate or switch to WAL a file that is not a store.
	s, err := store.OpenReadOnly(ctx, path)
	if errors.Is(err, store.ErrNotStore) {
		return nil, usage("%s is not an isobench result store (written by 'isobench run --db %s'); it was left unchanged", path, path)
	}
	return s, err
}

// cmdResults prints every sample, one per line.
func cmdResults(ctx context.Context, st *State, args []string) error {
	fs := newFlags(st, "results", "results [--db FILE] [--format jsonl|csv] [--run ID] [--warmup]")
	db := fs.String("db", "isobench.db", "`FILE`: result store")
	format := fs.String("format", "jsonl", "`jsonl|csv`: one JSON object per sample, or CSV with a header; each sample with its run id, start time and duration")
	run := fs.Int64("run", 0, "`ID`: only this run (default: all runs)")
	warm := fs.Bool("warmup", false, "include warm-up samples")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *format != "jsonl" && *format != "csv" {
		return usage("--format %q: want jsonl or csv", *format)
	}
	s, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer s.Close()
	samples, err := s.Samples(ctx, store.Filter{RunID: *run, NoWarmup: !*warm})
	if err != nil {
		return err
	}
	header := []string{"run_id", "platform", "options", "workload", "params", "instances", "instance", "rep", "warmup", "metric", "unit", "better", "value", "start", "duration_ns"}
	if *format == "csv" {
		w := csv.NewWriter(st.Stdout)
		w.Write(header)
		for _, x := range samples {
			w.Write(row(x))
		}
		w.Flush()
		return w.Error()
	}
	enc := json.NewEncoder(st.Stdout)
	for _, x := range samples {
		if err := enc.Encode(sampleRow{x.RunID, exportRow(x)}); err != nil {
			return err
		}
	}
	return nil
}

// resultRow is a sample's keys and value (export and `results` add
// its run id, start time, duration and tags).
type resultRow struct {
	Platform  string  `json:"platform"`
	Options   string  `json:"options"`
	Workload  string  `json:"workload"`
	Params    string  `json:"params"`
	Instances int     `json:"instances"`
	Instance  int     `json:"instance"`
	Rep       int     `json:"rep"`
	Warmup    bool    `json:"warmup"`
	Metric    string  `json:"metric"`
	Unit      string  `json:"unit"`
	Better    string  `json:"better"`
	Value     float64 `json:"value"`
	// Tags are the sample's tags (network, storage, host, sweep, wake...);
	// CSV leaves them out to keep its fixed columns.
	Tags map[string]string `json:"tags,omitempty"`
}

func jsonRow(x sample.Sample) resultRow {
	return resultRow{x.Platform, x.Options, x.Workload, x.Params, x.Instances, x.Instance, x.Rep, x.Warmup, x.Metric, x.Unit, string(x.Better), x.Value, x.Tags}
}

// sampleRow is one line of `results --format jsonl`: the sample's run,
// its keys and value, when it started and how long it took, and its tags.
type sampleRow struct {
	RunID int64 `json:"run_id"`
	exportSample
}

func exportRow(x sample.Sample) exportSample {
	return exportSample{jsonRow(x), x.Start.UTC().Format(time.RFC3339Nano), int64(x.Duration), x.Tags}
}

func row(x sample.Sample) []string {
	return []string{strconv.FormatInt(x.RunID, 10), x.Platform, x.Options, x.Workload, x.Params, strconv.Itoa(x.Instances), strconv.Itoa(x.Instance), strconv.Itoa(x.Rep),
		strconv.FormatBool(x.Warmup), x.Metric, x.Unit, string(x.Better), strconv.FormatFloat(x.Value, 'g', -1, 64),
		x.Start.UTC().Format(time.RFC3339Nano), strconv.FormatInt(int64(x.Duration), 10)}
}

// cmdDoctor lists every platform: available, or why not and how to fix it.
func cmdDoctor(ctx context.Context, st *State, args []string) error {
	fs := newFlags(st, "doctor", "doctor [--state-dir DIR] [--host ssh://USER@ADDR]...")
	stateDir := fs.String("state-dir", "", "`DIR`: where images are kept")
	var hosts multi
	fs.Var(&hosts, "host", "`ssh://USER@ADDR[:PORT]`: also ask this host, over SSH (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usage("doctor takes no arguments")
	}
	defer doctorHosts(ctx, st, hosts)
	env := platform.Env{AgentBinary: st.Executable, StateDir: st.stateDir(*stateDir), Log: st.Stderr}
	tw := tabwriter.NewWriter(st.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "platform\tstatus\tdetail")
	for _, name := range st.Platforms.Names() {
		f := st.Platforms[name]
		status, detail := "available", f.Help
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		p, err := f.New(cctx, platform.Options{Name: name, Raw: map[string]string{}, Extra: map[string]string{}}, env)
		if err == nil {
			err = p.Available(cctx)
			if err == nil {
				var facts []string
				for k, v := range p.Facts(cctx) {
					facts = append(facts, k+"="+v)
				}
				if len(facts) > 0 {
					detail = strings.Join(sortedStrings(facts), " ")
				}
			}
			p.Close(cctx)
		}
		cancel()
		if err != nil {
			status, detail = "unavailable", err.Error()
		}
		doctorRow(tw, name, status, detail)
	}
	return tw.Flush()
}

// doctorRow writes one platform's row; a detail of several lines (an
// engine's multi-line error) goes on in the detail column, each further
// line under the first, so the table's columns hold.
func doctorRow(w io.Writer, name, status, detail string) {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(detail, "\r\n", "\n")), "\n")
	fmt.Fprintf(w, "%s\t%s\t%s\n", name, status, strings.TrimSpace(lines[0]))
	for _, l := range lines[1:] {
		if l = strings.TrimSpace(l); l != "" {
			fmt.Fprintf(w, "\t\t  %s\n", l)
		}
	}
}

// cmdWorkloads lists the workloads (or those named) and their parameters:
// each one's default as declared (or what it is computed to), the values
// an enum parameter allows, and what it means.
func cmdWorkloads(st *State, args []string) error {
	fs := newFlags(st, "workloads", "workloads [NAME]...\n\nLists every workload (or those named) with its parameters, their defaults, the values\nthey allow and what they mean. A run names them as W[:PARAMS], e.g. cpu:threads=2,duration=10s.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	names := st.Workloads.Names() // not the internal halves of host-driven workloads
	if fs.NArg() > 0 {
		names = fs.Args()
		for _, n := range names {
			if _, err := st.lookupWorkload(n); err != nil {
				return usage("%v", err)
			}
		}
	} else {
		fmt.Fprintf(st.Stdout, "Workloads, named as W[:PARAMS] (e.g. cpu:threads=2,duration=10s). %s\n\n", workload.KindsNote)
	}
	for _, name := range names {
		d := st.Workloads[name]
		where := "in-guest"
		if d.Host != nil {
			where = "host-driven"
		}
		fmt.Fprintf(st.Stdout, "%s (%s): %s\n", d.Name, where, d.Help)
		for _, p := range d.Params {
			def, help := p.Describe()
			// a default longer than its column is still set off by two spaces
			fmt.Fprintf(st.Stdout, "    %-16s default %-*s %s\n", p.Name, max(10, len(def)+1), def, help)
		}
	}
	return nil
}

func cmdVersion(st *State, args []string) error {
	fs := newFlags(st, "version", "version\n\nPrints isobench's version and the commit it was built from.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usage("version takes no arguments")
	}
	fmt.Fprintf(st.Stdout, "isobench %s (commit %s)\n", hostinfo.Version, hostinfo.Commit())
	return nil
}

// cmdImage builds and imports images for platforms that use them.
func cmdImage(ctx context.Context, st *State, args []string) error {
	fs := newFlags(st, "image build", "image build [--platform P]... [--image PROFILE]\n\nBuilds the instance image and imports it into each platform that uses images\n('isobench run' does it too, before it times anything).")
	var platforms multi
	fs.Var(&platforms, "platform", "`P[:OPTIONS]`: a platform to build for (repeatable; default: every available one that uses images)")
	image := fs.String("image", "minimal", "`PROFILE`: image profile (minimal or tools)")
	stateDir := fs.String("state-dir", "", "`DIR`: where images are kept")
	if len(args) == 0 || args[0] != "build" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fs.Usage()
			return flag.ErrHelp
		}
		return usage("usage: isobench image build [--platform P]... [--image PROFILE] (see 'isobench image -h')")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	env := platform.Env{AgentBinary: st.Executable, StateDir: st.stateDir(*stateDir), Log: st.Stderr}
	explicit := len(platforms) > 0
	if !explicit {
		platforms = st.Platforms.Names()
	}
	built := 0
	for _, ps := range platforms {
		f, o, err := st.parsePlatform(ps)
		if err != nil {
			return usage("%v", err)
		}
		p, err := f.New(ctx, o, env)
		if err != nil {
			return usage("%v", err)
		}
		pr, ok := p.(platform.Preparer)
		if !ok {
			p.Close(ctx)
			continue
		}
		if err := p.Available(ctx); err != nil {
			p.Close(ctx)
			if explicit {
				return unavailable(o.Name, err)
			}
			fmt.Fprintf(st.Stderr, "skipping %s: %v\n", o.Name, err)
			continue
		}
		err = pr.Prepare(ctx, *image)
		p.Close(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", o.Name, err)
		}
		fmt.Fprintf(st.Stdout, "%s: image %s ready\n", o.Name, *image)
		built++
	}
	if built == 0 {
		fmt.Fprintln(st.Stdout, "no available platform uses images")
	}
	return nil
}
