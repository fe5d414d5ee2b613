// Package cli parses isobench's command line and calls the packages that do
// the work. It holds no logic of its own beyond wiring, and all of its I/O
// goes through State so tests can drive it.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/isobench/isobench/internal/agent"
	"github.com/isobench/isobench/internal/builtin"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/workload"
)

// State is everything the CLI touches outside itself.
type State struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Executable is the path of this binary (copied into instances).
	Executable string
	// StdoutTTY says whether Stdout is a terminal (progress display).
	StderrTTY bool
	Platforms platform.Registry
	Workloads workload.Registry
}

// NewState is the real process's state.
func NewState() *State {
	exe, _ := os.Executable()
	tty := false
	if fi, err := os.Stderr.Stat(); err == nil {
		tty = fi.Mode()&os.ModeCharDevice != 0
	}
	return &State{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		Executable: exe, StderrTTY: tty,
		Platforms: builtin.Platforms(), Workloads: builtin.Workloads(),
	}
}

// Exit codes.
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitInterrupted = 130
)

// usageError is bad input: one line, exit 2, nothing started.
type usageError struct{ error }

func usage(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

const help = `isobench measures what isolation costs: the same workloads on native and
inside containers, VMs and sandboxes, compared with honest statistics.

Usage:
  isobench run [flags] [study.yaml]         run a study (see 'isobench run -h')
  isobench results [flags]                  print stored samples (jsonl or csv)
  isobench report [flags]                   summarise a store (table, markdown, csv, json, jsonl, html)
  isobench compare A.db B.db                compare two stores cell by cell (--fail-if-slower 5%: a CI gate, exit 3)
  isobench runs [--db FILE]                 the runs in a store: command, host, date, status
  isobench merge OUT.db A.db B.db...        join stores from several machines or runs, keeping where each run came from
  isobench export [--db FILE] [--run ID]    one run as JSON: environment, plan and every sample
  isobench image build [flags]              build and import the instance images
  isobench doctor                           which platforms work here, and how to fix the others
  isobench clean [--dry-run]                remove what crashed runs left (containers, mounts, links...)
  isobench workloads                        list workloads and their parameters
  isobench study list|show|fidelity|run ID  the papers' studies built in (see 'isobench study -h')
  isobench version                          the version and commit of this build
  isobench help [COMMAND]                   this text, or a command's help (the same as 'isobench COMMAND -h')

Every command takes -h (or --help): its synopsis, its flags and an example.
`

// helpTopics are the commands 'isobench help COMMAND' knows: those the
// usage lists (not the hidden agent and platformd).
var helpTopics = map[string]bool{
	"run": true, "results": true, "report": true, "compare": true, "runs": true, "merge": true, "export": true,
	"image": true, "doctor": true, "clean": true, "workloads": true, "study": true, "version": true,
}

// Main runs isobench with args (without the program name).
func Main(ctx context.Context, st *State, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(st.Stderr, help)
		return ExitUsage
	}
	var err error
	switch args[0] {
	case "agent", "platformd", "export":
		// a protocol or data on stdout, passed as it is
	default:
		// what the other commands print may come from a shared store or
		// study file: no terminal escapes get through
		safe := &termSafe{w: st.Stdout}
		defer safe.Flush()
		orig := st.Stdout
		st.Stdout = safe
		defer func() { st.Stdout = orig }()
	}
	switch args[0] {
	case "agent":
		return agent.Main(ctx, st.Workloads, args[1:], st.Stdin, st.Stdout, st.Stderr)
	case "platformd": // hidden: the remote end of host=ssh://... (internal/remote)
		err = cmdPlatformd(ctx, st, args[1:])
	case "run":
		err = cmdRun(ctx, st, args[1:])
	case "results":
		err = cmdResults(ctx, st, args[1:])
	case "report":
		err = cmdReport(ctx, st, args[1:])
	case "compare":
		err = cmdCompare(ctx, st, args[1:])
	case "runs":
		err = cmdRuns(ctx, st, args[1:])
	case "merge":
		err = cmdMerge(ctx, st, args[1:])
	case "export":
		err = cmdExport(ctx, st, args[1:])
	case "image":
		err = cmdImage(ctx, st, args[1:])
	case "doctor":
		err = cmdDoctor(ctx, st, args[1:])
	case "clean":
		err = cmdClean(ctx, st, args[1:])
	case "study":
		err = cmdStudy(ctx, st, args[1:])
	case "workloads":
		err = cmdWorkloads(st, args[1:])
	case "version", "--version":
		err = cmdVersion(st, args[1:])
	case "help", "-h", "--help":
		if len(args) > 1 && args[0] == "help" {
			// isobench help run = isobench run -h (help study run = study run -h)
			if !helpTopics[args[1]] {
				return exitCode(st, usage("help: unknown command %q (the commands: isobench help)", args[1]))
			}
			return Main(ctx, st, append(append([]string{}, args[1:]...), "-h"))
		}
		fmt.Fprint(st.Stdout, help)
		return ExitOK
	default:
		err = usage("unknown command %q: run 'isobench help'", args[0])
	}
	return exitCode(st, err)
}

func exitCode(st *State, err error) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	msg := sanitize(strings.ReplaceAll(err.Error(), "\n", "; "))
	fmt.Fprintf(st.Stderr, "isobench: %s\n", msg)
	var ue usageError
	switch {
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, errRegression):
		return ExitRegression
	}
	return ExitFailed
}

// newFlags makes a flag set whose -h prints the command's help (synopsis,
// flags as --name, an example; see help.go) to stdout and exits 0, and
// whose parse errors are one usage line.
func newFlags(st *State, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, and printed once by exitCode
	fs.Usage = func() { printHelp(st.Stdout, fs, synopsis) }
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	// The flag package calls Usage on every parse error too; only -h
	// prints the help.
	help := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = help }()
	// Allow flags after positional arguments: isobench run study.yaml --reps 3
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				help()
				return err
			}
			return usageError{fmt.Errorf("%s: %w (see 'isobench %s -h')", fs.Name(), err, fs.Name())}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(append([]string{"--"}, pos...))
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func (st *State) stateDir(flagVal string) string {
	if flagVal != "" {
		return flagVal
	}
	if v := st.Getenv("ISOBENCH_STATE"); v != "" {
		return v
	}
	if os.Geteuid() == 0 {
		return "/var/lib/isobench"
	}
	if c, err := os.UserCacheDir(); err == nil {
		return c + "/isobench"
	}
	return os.TempDir() + "/isobench"
}
