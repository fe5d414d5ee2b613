package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// examples are the lines each command's -h ends with, by flag set name.
// A command without an entry gets "isobench NAME".
var examples = map[string][]string{
	"run": {
		"isobench run --platform native --platform docker --workload cpu:threads=2,duration=3s --instances 1,2 --reps 5 --db x.db",
		"isobench run study.yaml --reps auto --target 2",
	},
	"results":        {"isobench results --db x.db --format csv > samples.csv"},
	"runs":           {"isobench runs --db x.db"},
	"merge":          {"isobench merge all.db host1.db host2.db", "isobench runs --db all.db"},
	"export":         {"isobench export --db x.db --run 2 > run2.json"},
	"report":         {"isobench report --db x.db --format markdown", "isobench report --db x.db --format html -o report.html"},
	"compare":        {"isobench compare before.db after.db"},
	"image":          {"isobench image build --platform docker --image tools"},
	"image build":    {"isobench image build --platform docker --image tools"},
	"doctor":         {"isobench doctor"},
	"workloads":      {"isobench workloads", "isobench workloads disk memory"},
	"version":        {"isobench version"},
	"clean":          {"isobench clean --dry-run", "isobench clean"},
	"study":          {"isobench study list", "isobench study show 004 --scale quick > s004.yaml", "isobench study run 004 --scale quick --dry-run"},
	"study list":     {"isobench study list"},
	"study fidelity": {"isobench study fidelity 004"},
	"platformd":      {"isobench platformd --state-dir /var/lib/isobench docker (run by isobench over SSH, not by hand)"},
	"study run":      {"isobench study run 004 --scale quick --db s004.db -o report.html", "isobench study run 003 --dry-run"},
	"study show":     {"isobench study show 000 --scale quick > s000.yaml && isobench run s000.yaml"},
}

// printHelp writes a command's help: "Usage: isobench" and the synopsis,
// the flags spelled --name as the README spells them (a one-letter flag as
// -o), each with its real default, and examples. A usage text may start
// with its backquoted value name ("`FILE`: ..."), shown once.
func printHelp(w io.Writer, fs *flag.FlagSet, synopsis string) {
	fmt.Fprintf(w, "Usage: isobench %s\n", strings.TrimRight(synopsis, "\n"))
	var flags strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		name, use := flag.UnquoteUsage(f)
		if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); isBool {
			name = ""
		}
		if name == "value" {
			name = "VALUE"
		}
		use = strings.TrimPrefix(use, name+": ")
		dashes := "--" // as the README spells them; one letter as -o
		if len(f.Name) == 1 {
			dashes = "-"
		}
		fmt.Fprintf(&flags, "  %s%s", dashes, f.Name)
		if name != "" {
			fmt.Fprintf(&flags, " %s", name)
		}
		fmt.Fprintf(&flags, "\n        %s", strings.ReplaceAll(use, "\n", "\n        "))
		if d := f.DefValue; d != "" && d != "0" && d != "false" {
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				d = fmt.Sprintf("%q", d)
			}
			fmt.Fprintf(&flags, " (default %s)", d)
		}
		flags.WriteString("\n")
	})
	if flags.Len() > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s", flags.String())
	}
	ex := examples[fs.Name()]
	if len(ex) == 0 {
		ex = []string{"isobench " + fs.Name()}
	}
	fmt.Fprintf(w, "\nExample:\n")
	for _, e := range ex {
		fmt.Fprintf(w, "  %s\n", e)
	}
}
