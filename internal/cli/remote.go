package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/platformd"
	"github.com/isobench/isobench/internal/remote"
	"github.com/isobench/isobench/internal/report"
	"github.com/isobench/isobench/internal/runner"
	"github.com/isobench/isobench/internal/sample"
	"github.com/isobench/isobench/internal/workload/netbench"
)

// cmdPlatformd is the hidden "isobench platformd SPEC": the remote end of a
// platform given host=ssh://..., started by the host over SSH; it serves
// the platform on its stdin and stdout.
func cmdPlatformd(ctx context.Context, st *State, args []string) error {
	fs := newFlags(st, "platformd", "platformd [--state-dir DIR] PLATFORM-SPEC (started by isobench over SSH)")
	stateDir := fs.String("state-dir", "", "`DIR`: where images and rootfs trees are kept")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usage("platformd takes one platform spec")
	}
	// When the SSH session dies, a write to stdout (fd 1) before platformd
	// notices must fail with EPIPE: Go kills a program on SIGPIPE from fd
	// 1 unless SIGPIPE is notified, and platformd would die before
	// removing its instances. (Notified, not ignored: children start with
	// the default action.)
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	env := platform.Env{AgentBinary: st.Executable, StateDir: st.stateDir(*stateDir), Log: st.Stderr}
	return platformd.Run(ctx, st.Platforms, env, fs.Arg(0), st.Stdin, os.Stdout)
}

// checkRemote refuses workloads whose client or server runs in isobench on
// the host when a platform runs on another machine: the host's end would
// be this machine, reaching the remote instances through the SSH
// connection, so it would measure the tunnel, not the platform. Network
// workloads run there with client=instance,server=instance. spreadHosts
// are the hosts of a spread run, where every platform runs.
func checkRemote(plan runner.Plan, targets []target, spreadHosts []string) error {
	type where struct{ platform, host string }
	var remote []where
	for _, t := range targets {
		if host := t.opts.Extra["host"]; host != "" {
			remote = append(remote, where{t.opts.Name, host})
		}
	}
	for _, h := range spreadHosts {
		if h != "local" {
			for _, t := range targets {
				remote = append(remote, where{t.opts.Name, h})
			}
		}
	}
	for _, w := range remote {
		for _, j := range plan.Jobs {
			for _, side := range []string{"client", "server"} {
				if j.Def.Host != nil && j.Params.Str(side) == netbench.OnHost {
					return fmt.Errorf("%s with %s=host cannot run on %s (on %s): the host-side %s would run on this machine and reach the remote instances through the SSH connection; use client=instance,server=instance", j.Def.Name, side, w.platform, w.host, side)
				}
			}
		}
	}
	return nil
}

// expandHosts runs every platform on every host of study.Hosts (from
// --host or hosts: in a study file): "docker" with hosts local and
// ssh://root@a becomes "docker" and "docker:host=ssh://root@a". A platform
// that names its own host= is kept as it is. The hosts are folded into
// the platforms, so the stored study says exactly what ran. A spread run
// (study.Spread) keeps its hosts: each cell runs on one of them
// (openSpread), and the stored study keeps them for --resume.
func expandHosts(study *Study) error {
	if len(study.Hosts) == 0 {
		if study.Spread {
			return errors.New("--spread needs hosts to spread the cells over: --host ssh://user@addr (repeatable; local for this machine) or hosts: in the study file")
		}
		return nil
	}
	seen := map[string]bool{}
	for _, h := range study.Hosts {
		if h != "local" {
			if _, err := remote.ParseHost(h); err != nil {
				return fmt.Errorf("--host: %w (or local for this machine)", err)
			}
		}
		if seen[h] {
			return fmt.Errorf("--host %s given twice", h)
		}
		seen[h] = true
	}
	if study.Spread {
		for _, p := range study.Platforms {
			if _, opts, ok := strings.Cut(p, ":"); ok && hasHostOption(opts) {
				return fmt.Errorf("platform %s names its own host=: a spread run runs every platform on the --host that takes each cell; leave host= out", p)
			}
		}
		return nil
	}
	var out []string
	for _, p := range study.Platforms {
		_, opts, hasOpts := strings.Cut(p, ":")
		if hasOpts && hasHostOption(opts) {
			out = append(out, p)
			continue
		}
		for _, h := range study.Hosts {
			out = append(out, withHost(p, h))
		}
	}
	study.Platforms = out
	study.Hosts = nil
	return nil
}

// withHost is platform spec p on host h ("local": p itself).
func withHost(p, h string) string {
	if h == "local" {
		return p
	}
	if _, opts, ok := strings.Cut(p, ":"); ok && strings.TrimSpace(opts) != "" {
		return p + ",host=" + h
	}
	return strings.TrimSuffix(p, ":") + ":host=" + h
}

// namedRemotes lists what a study names that makes isobench connect to
// another machine with the operator's SSH credentials: its hosts: (other
// than local) unless --host replaced them, and its platforms with a
// remote option (host=, key=, known-hosts=, binary=) unless --platform
// replaced them.
func namedRemotes(study Study, hostsFromFlags, platformsFromFlags bool) []string {
	var out []string
	if !hostsFromFlags {
		for _, h := range study.Hosts {
			if h != "local" {
				out = append(out, "hosts: "+h)
			}
		}
	}
	if !platformsFromFlags {
		for _, p := range study.Platforms {
			_, opts, _ := strings.Cut(p, ":")
			for _, kv := range strings.Split(opts, ",") {
				k, _, _ := strings.Cut(kv, "=")
				if slices.Contains([]string{"host", "key", "known-hosts", "binary"}, strings.TrimSpace(k)) {
					out = append(out, "platform "+p)
					break
				}
			}
		}
	}
	return out
}

func hasHostOption(opts string) bool {
	for _, kv := range strings.Split(opts, ",") {
		if k, _, _ := strings.Cut(kv, "="); strings.TrimSpace(k) == "host" {
			return true
		}
	}
	return false
}

// doctorHosts runs "isobench doctor" on each host over SSH (after the
// local table) and says why a host cannot be asked.
func doctorHosts(ctx context.Context, st *State, hosts []string) {
	for _, h := range hosts {
		fmt.Fprintf(st.Stdout, "\nhost %s:\n", h)
		if err := remote.RunThere(ctx, h, st.Executable, st.Stdout, st.Stderr, "doctor"); err != nil {
			fmt.Fprintf(st.Stdout, "unreachable: %v\n", err)
		}
	}
}

// A spread run (--spread with --host, or spread: true next to hosts:)
// runs each cell of the matrix on one host instead of the whole matrix on
// every host, to finish sooner: runner.Spread schedules the cells and says
// what becomes of a host lost during the run. Every sample is tagged
// host= with the host that ran it, and the run's fingerprint holds each
// host's facts as a run that compares hosts would
// (label:host=ssh://....key).

// spreadHost is one host of a spread run with every platform of the plan
// opened there.
type spreadHost struct {
	name    string            // "local" or ssh://user@addr as given
	targets []runner.Target   // the plan's targets on this host: label@host, tagged host=
	fp      map[string]string // the machine's fingerprint (kernel, cpu_model, cores...)
}

// spreadRun is a spread run's hosts as openSpread opened them; run hands
// them to runner.Spread.
type spreadRun struct {
	hosts  []*spreadHost
	runID  int64
	stderr io.Writer
	// lost says why a platform's connection to its host is gone, nil
	// while it is up (platformd.Lost).
	lost func(platform.Platform) error
}

// openSpread opens every platform of the plan on every host of the study
// (as a run comparing those hosts would), records each one's facts in
// fingerprint, prepares the image on each and warns once when the hosts'
// machines differ. What it opened is added to opened, to be closed. When
// resuming, a host that cannot be reached (one lost in the first attempt)
// is left out with a warning, as long as one host is left.
func openSpread(ctx context.Context, st *State, study *Study, targets []target, plan runner.Plan, env platform.Env, fingerprint map[string]string, opened *[]platform.Platform, resuming bool) (*spreadRun, error) {
	local := maps.Clone(fingerprint)
	sr := &spreadRun{stderr: st.Stderr, lost: platformd.Lost}
hosts:
	for _, h := range study.Hosts {
		sh := &spreadHost{name: h}
		if h == "local" {
			sh.fp = local
		}
		for i := range targets {
			f, o, err := st.Platforms.Parse(withHost(study.Platforms[i], h))
			if err != nil {
				return nil, usage("%v", err)
			}
			p, err := f.New(ctx, o, env)
			if err != nil && resuming && h != "local" {
				fmt.Fprintf(st.Stderr, "warning: host %s is left out of the resumed spread run: %v\n", h, err)
				continue hosts
			}
			if err != nil {
				return nil, usage("%v", err)
			}
			*opened = append(*opened, p)
			label := report.Label(o.Name, o.Canonical())
			if err := p.Available(ctx); err != nil {
				return nil, unavailable(label, err)
			}
			for k, v := range p.Facts(ctx) {
				fingerprint[label+"."+k] = v
			}
			if _, fp, ok := platformd.Machine(p); ok && sh.fp == nil {
				sh.fp = fp
			}
			t := plan.Targets[i]
			t.Label += "@" + h
			t.Platform = p
			t.Tags = map[string]string{"host": h}
			sh.targets = append(sh.targets, t)
		}
		sr.hosts = append(sr.hosts, sh)
	}
	if len(sr.hosts) == 0 {
		return nil, errors.New("no host of the spread run can be reached")
	}
	if w := hostsDiffer(sr.hosts); w != "" {
		fmt.Fprintln(st.Stderr, "warning:", w)
	}
	for _, h := range sr.hosts {
		for _, t := range h.targets {
			if pr, ok := t.Platform.(platform.Preparer); ok {
				if err := pr.Prepare(ctx, cmp.Or(t.Image, plan.Image)); err != nil {
					return nil, fmt.Errorf("%s: preparing image %s: %w", t.Label, cmp.Or(t.Image, plan.Image), err)
				}
			}
		}
	}
	return sr, nil
}

// hostsDiffer is one line when the hosts' machines differ in what bears
// on the results (cpu model, cores, kernel); "" when they are alike.
func hostsDiffer(hosts []*spreadHost) string {
	desc := func(fp map[string]string) string {
		return fmt.Sprintf("%s, %s cores, kernel %s", or(fp["cpu_model"], "cpu unknown"), or(fp["cores"], "?"), or(fp["kernel"], "?"))
	}
	differ := false
	var parts []string
	for _, h := range hosts {
		d := desc(h.fp)
		differ = differ || d != desc(hosts[0].fp)
		parts = append(parts, h.name+": "+d)
	}
	if !differ {
		return ""
	}
	return "the spread hosts differ (" + strings.Join(parts, "; ") + "): each cell's platforms ran on one host, so comparisons within a cell hold, but cells that ran on different hosts are not comparable with each other"
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// run runs plan's cells across the hosts with r: runner.Spread.Run.
func (sr *spreadRun) run(ctx context.Context, r *runner.Runner, plan runner.Plan) error {
	sp := &runner.Spread{RunID: sr.runID, Log: sr.stderr, Lost: sr.lost}
	for _, h := range sr.hosts {
		sp.Hosts = append(sp.Hosts, &runner.SpreadHost{Name: h.name, Targets: h.targets})
	}
	return sp.Run(ctx, r, plan)
}

// spreadHosts writes which host ran each cell of a spread run, from its
// samples' host tags (a cell resumed elsewhere names both).
func spreadHosts(w io.Writer, samples []sample.Sample) error {
	type key struct {
		workload, params string
		n                int
	}
	hosts := map[key][]string{}
	for _, s := range samples {
		k := key{s.Workload, s.Params, s.Instances}
		if h := s.Tags["host"]; !slices.Contains(hosts[k], h) {
			hosts[k] = append(hosts[k], h)
		}
	}
	keys := slices.SortedFunc(maps.Keys(hosts), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.workload, b.workload), cmp.Compare(a.params, b.params), cmp.Compare(a.n, b.n))
	})
	fmt.Fprintln(w, "\nwhich host ran each cell (spread run):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range keys {
		name := k.workload
		if k.params != "" {
			name += ":" + k.params
		}
		fmt.Fprintf(tw, "  %s ×%d\t%s\n", name, k.n, strings.Join(hosts[k], ", "))
	}
	return tw.Flush()
}
