package native

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/privdir"
	"github.com/isobench/isobench/internal/runrec"
)

// runToken is the run token in an instance name "r<run id><token>-<seq>",
// which begins a scratch directory's name.
var runToken = regexp.MustCompile(`^r\d+([0-9a-f]{6})-\d+`)

// Sweep lists what native instances may leave on this host
// (platform.Factory.Sweep): the scratch directories
// <temp dir>/isobench-native/<name>-<rand> of env.TempDirs, each an
// instance (Kind "dir") carrying its run's token (from the instance name),
// with its cgroups (isobench/<the directory's name> on every hierarchy)
// and its agents whose isobench died (processes whose scratch directory
// it is and whose parent is init or gone). An isobench-native that is not
// isobench's own (privdir.Check) is one kept item, not searched; a
// non-directory in it is kept.
func Sweep(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error) {
	var out []platform.Leftover
	keep := func(name, why string) {
		out = append(out, platform.Leftover{Kind: "native-dir", Name: name, Judge: func() (bool, string) { return false, why }})
	}
	var orphans map[string][]platform.Leftover
	var cgroups []string
	for _, td := range env.TempDirs {
		base := filepath.Join(td, "isobench-native")
		if _, err := os.Lstat(base); os.IsNotExist(err) {
			continue
		}
		if err := privdir.Check(base); err != nil {
			keep(base, fmt.Sprintf("not searched: %v", err))
			continue
		}
		if orphans == nil {
			orphans, cgroups = agents(hostos.Procs()), cgroupDirs()
		}
		es, _ := os.ReadDir(base)
		for _, e := range es {
			dir := filepath.Join(base, e.Name())
			if !e.IsDir() || e.Type()&os.ModeSymlink != 0 {
				keep(dir, "not a directory")
				continue
			}
			token := ""
			if m := runToken.FindStringSubmatch(e.Name()); m != nil {
				token = m[1]
			}
			out = append(out, platform.Leftover{Kind: "dir", Name: dir, Token: token, Remove: func(context.Context) error { return os.RemoveAll(dir) }})
			out = append(out, orphans[dir]...)
			for _, c := range cgroups {
				if filepath.Base(c) == e.Name() {
					out = append(out, platform.Leftover{Kind: "cgroup", Name: c, Owner: dir, Remove: func(context.Context) error { return cgroup.RemoveDir(c) }})
				}
			}
		}
	}
	return out, nil
}

// agents are the processes whose isobench died (their parent is init, or
// gone) by the scratch directory they run in (their environment's
// guestenv.ScratchEnv), each a part of that directory: every process's
// environment is read once, whatever the number of directories.
func agents(procs []hostos.Proc) map[string][]platform.Leftover {
	parents := hostos.Parents(procs)
	out := map[string][]platform.Leftover{}
	for _, pr := range procs {
		if _, alive := parents[pr.PPID]; pr.PPID != 1 && alive {
			continue
		}
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pr.PID))
		dir := ""
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, guestenv.ScratchEnv+"="); ok {
				dir = v
				break
			}
		}
		if dir == "" {
			continue
		}
		pid := pr.PID
		out[dir] = append(out[dir], platform.Leftover{Kind: "process", Name: fmt.Sprintf("%d %s", pid, strings.Join(pr.Argv, " ")), Owner: dir, PID: pid,
			Remove: func(context.Context) error { return runrec.KillTree(pid, parents) }})
	}
	return out
}

// cgroupDirs lists the cgroups isobench/* on every hierarchy.
func cgroupDirs() []string {
	var out []string
	for _, pat := range []string{"/sys/fs/cgroup/isobench/*", "/sys/fs/cgroup/*/isobench/*"} {
		m, _ := filepath.Glob(pat)
		for _, d := range m {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				out = append(out, d)
			}
		}
	}
	sort.Strings(out)
	return out
}
