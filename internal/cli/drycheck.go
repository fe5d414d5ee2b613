package cli

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/study"
	"github.com/isobench/isobench/internal/workload"
)

// hostTool is an executable a workload needs on the host, and the Debian
// package that has it.
type hostTool struct{ bin, pkg string }

// hostToolsFor are the executables a workload with params needs on this
// host: the load generators and clients that run on the host, and on
// native (the host is the instance) the servers and tools that run in an
// instance elsewhere. alt, when set, is a group of which one is enough.
func hostToolsFor(name string, p workload.Params, native bool) (need []hostTool, alt [][]hostTool) {
	add := func(bin, pkg string) { need = append(need, hostTool{bin, pkg}) }
	onHost := p.Str("client") == "" || p.Str("client") == "host"
	switch name {
	case "http":
		if onHost {
			if p.Str("tool") == "wrk" {
				add("wrk", "wrk")
			} else {
				add("ab", "apache2-utils")
			}
		}
		if native {
			if p.Str("server") == "apache" {
				add("apache2", "apache2")
			} else {
				add("nginx", "nginx")
			}
		}
	case "redis":
		if onHost {
			add("redis-benchmark", "redis-tools")
		}
		if native {
			add("redis-server", "redis-server")
		}
	case "oltp":
		if onHost {
			add("sysbench", "sysbench")
		}
		if native {
			add("mariadbd", "mariadb-server")
		}
	case "ftp":
		if p.Str("client") == "jmeter" {
			add("jmeter", "jmeter")
		} else {
			add("lftp", "lftp")
		}
		if native {
			add("vsftpd", "vsftpd")
		}
	case "scp":
		add("scp", "openssh-client")
		if native {
			add("sshd", "openssh-server")
		}
	case "smb":
		add("smbclient", "smbclient")
		if native {
			add("smbd", "samba")
		}
	case "wget":
		add("wget", "wget")
		if native {
			add("apache2", "apache2")
		}
	case "smtp":
		if p.Str("client") == "postal" {
			add("postal", "postal")
		}
		if native {
			add("postfix", "postfix")
		}
	case "mapreduce":
		add("java", "default-jre-headless")
		add("mvn", "maven")
	case "spark":
		if native {
			add("java", "openjdk-17-jre-headless")
			alt = append(alt, []hostTool{{"spark-submit", "pip install pyspark"}, {"pyspark", "pip install pyspark"}})
		}
	case "tool:fio":
		if native {
			add("fio", "fio")
		}
	case "tool:iperf2":
		if native {
			add("iperf", "iperf")
		}
	case "tool:iperf3":
		if native {
			add("iperf3", "iperf3")
		}
	case "tool:sockperf":
		if native {
			add("sockperf", "sockperf")
		}
	case "tool:sysbench-cpu", "tool:sysbench-fileio", "tool:sysbench-memory":
		if native {
			add("sysbench", "sysbench")
		}
	}
	return need, alt
}

// hostHas is study.HostHas (a seam for the tests).
var hostHas = study.HostHas

// pysparkImports reports whether python3 here has the pyspark module
// (spark's native run uses it when there is no spark-submit).
var pysparkImports = func() bool {
	if !hostHas("python3") {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "python3", "-c", "import pyspark").Run() == nil
}

// dryChecks is what a dry run says of this host, as warnings (the plan
// stands): per platform whether it is available here (doctor's check:
// the platform is constructed and asked, nothing is started), and the
// executables the plan's workloads need on the host that it lacks.
func (st *State) dryChecks(ctx context.Context, w io.Writer, labels, workloads []string, stateDir string) {
	env := platform.Env{AgentBinary: st.Executable, StateDir: stateDir, Log: io.Discard}
	fmt.Fprintln(w, "\nhere (isobench doctor's check; warnings, the plan stands):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range labels {
		fmt.Fprintf(tw, "  %s\t%s\n", l, st.availableHere(ctx, l, env))
	}
	tw.Flush()
	missing := map[string][]string{} // "bin (apt-get install pkg)" -> what needs it
	var order []string
	note := func(what, who string) {
		if !slices.Contains(missing[what], who) {
			if missing[what] == nil {
				order = append(order, what)
			}
			missing[what] = append(missing[what], who)
		}
	}
	for _, ws := range workloads {
		sp, err := spec.Parse(ws)
		if err != nil {
			continue
		}
		def, err := st.lookupWorkload(sp.Name)
		if err != nil {
			continue
		}
		variants, err := workload.Expand(sp.Params)
		if err != nil {
			continue
		}
		for _, v := range variants {
			params, err := def.Resolve(v.Raw)
			if err != nil {
				continue
			}
			for _, l := range labels {
				native := strings.SplitN(l, ":", 2)[0] == "native" && !strings.Contains(l, "host=")
				need, alt := hostToolsFor(def.Name, params, native)
				who := def.Name
				if native {
					who += " on native"
				}
				for _, t := range need {
					if !hostHas(t.bin) {
						note(fmt.Sprintf("%s (apt-get install %s)", t.bin, t.pkg), who)
					}
				}
				for _, group := range alt {
					found := false
					var names []string
					for _, t := range group {
						names = append(names, t.bin)
						found = found || hostHas(t.bin) || t.bin == "pyspark" && pysparkImports()
					}
					if !found {
						note(fmt.Sprintf("%s (%s)", strings.Join(names, " or python3's "), group[0].pkg), who)
					}
				}
			}
		}
	}
	if len(order) == 0 {
		fmt.Fprintln(w, "host tools: every one the workloads need is here")
		return
	}
	fmt.Fprintln(w, "warning: missing on this host (the cells that need them will fail):")
	for _, what := range order {
		fmt.Fprintf(w, "  %s: for %s\n", what, strings.Join(missing[what], ", "))
	}
}

// availableHere is a platform label's state for a dry run: "available"
// or "NOT available: WHY" (the first line of it); a platform on a remote
// host is not contacted.
func (st *State) availableHere(ctx context.Context, label string, env platform.Env) string {
	f, o, err := st.Platforms.Parse(label)
	if err != nil {
		return "NOT available: " + firstLine(err.Error())
	}
	if o.Raw["host"] != "" || o.Extra["host"] != "" {
		return "not checked (a remote host: isobench doctor --host asks it)"
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p, err := f.New(cctx, o, env)
	if err == nil {
		err = p.Available(cctx)
		p.Close(cctx)
	}
	if err != nil {
		return "NOT available: " + firstLine(err.Error()) + " (see 'isobench doctor')"
	}
	return "available"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
