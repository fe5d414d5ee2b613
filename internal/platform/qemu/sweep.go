package qemu

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/qemu/vmowner"
	"github.com/isobench/isobench/internal/runrec"
)

// Sweep lists what qemu VMs may leave on this host
// (platform.Factory.Sweep): the run directories in vmowner.Base(), each
// with what its owner record names (the VM's processes, tap, disk,
// volume, cgroup), snapshot overlay directories whose run directory is
// gone, and VM cgroups whose run directory is gone. See SweepDir.
func Sweep(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error) {
	return SweepDir("")(ctx, env)
}

// SweepDir is Sweep of the run directories in base (vmowner.Base() when
// empty; tests give their own).
//
// A run directory is a VM (Leftover.Judge): dead when the isobench
// process its owner record names is gone. Nothing found is believed
// unchecked: what is not a run directory (vmowner.List), a record that
// fails vmowner.Read's checks, and a dead VM whose disk or volume is in
// no state directory of env's, are listed as kept with why (never dead),
// and a base that is not isobench's own is one kept item: nothing in it
// is listed. A VM's processes are those whose command line names a file
// in its run directory.
func SweepDir(base string) func(context.Context, platform.SweepEnv) ([]platform.Leftover, error) {
	return func(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error) {
		if base == "" {
			base = vmowner.Base()
		}
		return sweep(base, env), nil
	}
}

func sweep(base string, env platform.SweepEnv) []platform.Leftover {
	var out []platform.Leftover
	keep := func(kind, name, why string) {
		out = append(out, platform.Leftover{Kind: kind, Name: name, Judge: func() (bool, string) { return false, why }})
	}
	dirs, skipped, listErr := vmowner.List(base)
	if listErr != nil {
		keep("qemu-run-dirs", base, fmt.Sprintf("not searched: %v", listErr))
	}
	for _, d := range slices.Sorted(maps.Keys(skipped)) {
		keep("qemu-run-dir", d, skipped[d])
	}
	procs := hostos.Procs()
	runDirs := map[string]bool{} // run dir names, which are their cgroups' names
	for _, d := range dirs {
		runDirs[filepath.Base(d)] = true
		rec, err := vmowner.Read(d)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) { // no record yet: being created
				keep("qemu-run-dir", d, err.Error())
			}
			continue
		}
		out = append(out, vmLeftovers(d, rec, env, procs)...)
	}
	// a VM's snapshot overlay directory (vmowner.OverlayDir) is made after
	// its run dir and removed before it: one without a run dir was left by
	// a VM that died (QEMU had unlinked the file in it at once). Only when
	// the run dirs could be listed: else every VM would look gone.
	for _, sd := range env.StateDirs {
		if listErr != nil {
			break
		}
		overlays, _ := filepath.Glob(vmowner.OverlayDir(sd, vmowner.DirPrefix+"*"))
		for _, o := range overlays {
			if !vmowner.IsName(filepath.Base(o)) || runDirs[filepath.Base(o)] {
				continue
			}
			if fi, err := os.Lstat(o); err != nil || !fi.IsDir() {
				continue // a link or file is not a directory isobench made
			}
			out = append(out, platform.Leftover{Kind: "qemu-overlay", Name: o,
				Judge:  func() (bool, string) { return true, "its VM's run directory is gone" },
				Remove: func(context.Context) error { return os.RemoveAll(o) }})
		}
	}
	// a VM's cgroup is made after its run dir and removed before it: one
	// without a run dir was left by a Close that failed half way (the
	// cgroups are root's: only the name is checked)
	for _, c := range vmCgroups() {
		if runDirs[filepath.Base(c)] {
			continue
		}
		out = append(out, platform.Leftover{Kind: "cgroup", Name: c,
			Judge: func() (bool, string) {
				if b, _ := os.ReadFile(filepath.Join(c, "cgroup.procs")); len(strings.TrimSpace(string(b))) > 0 {
					return false, "its VM's run directory is gone but processes still run in it"
				}
				return true, "its VM's run directory is gone"
			},
			Remove: func(context.Context) error { return cgroup.RemoveDir(c) }})
	}
	return out
}

// vmLeftovers lists the VM of run directory d, whose owner record is rec:
// its processes, tap, disk, volume and cgroup (each owned by d), then d.
func vmLeftovers(d string, rec vmowner.Record, env platform.SweepEnv, procs []hostos.Proc) []platform.Leftover {
	var out []platform.Leftover
	part := func(kind, name string, rm func(context.Context) error) {
		out = append(out, platform.Leftover{Kind: kind, Name: name, Owner: d, Remove: rm})
	}
	for _, r := range hostos.RootsMentioning(procs, d+"/") {
		pid := r.PID
		part("process", fmt.Sprintf("%d %s", pid, strings.Join(r.Argv, " ")), func(context.Context) error { return killTree(pid) })
	}
	if t := rec.Tap; t != "" {
		if _, err := os.Stat("/sys/class/net/" + t); err == nil {
			part("tap", t, func(ctx context.Context) error {
				err := hostnet.DeleteLink(ctx, t)
				if _, serr := os.Stat("/sys/class/net/" + t); err != nil && serr == nil {
					return err
				}
				return nil // gone (a concurrent sweep)
			})
		}
	}
	for _, kv := range [][2]string{{"disk", rec.Disk}, {"volume", rec.Volume}} {
		k, v := kv[0], kv[1]
		if v == "" {
			continue
		}
		if _, err := os.Lstat(v); err == nil {
			part("qemu-"+k, v, func(context.Context) error { return os.RemoveAll(v) })
		}
	}
	if rec.Cgroup != "" {
		for _, c := range vmCgroups() {
			if filepath.Base(c) == rec.Cgroup {
				part("cgroup", c, func(context.Context) error { return cgroup.RemoveDir(c) })
			}
		}
	}
	pid := rec.PID
	sd, _ := rec.StateDir() // checked by vmowner.Read
	out = append(out, platform.Leftover{Kind: "dir", Name: d,
		Judge: func() (bool, string) {
			if runrec.Alive(pid, 0) {
				return false, ""
			}
			if sd != "" && !knownStateDir(env.StateDirs, sd) {
				return false, fmt.Sprintf("its disk or volume is in %s, which is no state directory of a recorded run: name it with --state-dir", sd)
			}
			return true, fmt.Sprintf("its isobench process %d is gone", pid)
		},
		Remove: func(context.Context) error { return os.RemoveAll(d) }})
	return out
}

// knownStateDir reports whether sd is one of dirs.
func knownStateDir(dirs []string, sd string) bool {
	for _, d := range dirs {
		if abs, err := filepath.Abs(d); err == nil && abs == filepath.Clean(sd) {
			return true
		}
	}
	return false
}

// vmCgroups lists the VM cgroups (isobench/isoq-<digits>) on every
// hierarchy.
func vmCgroups() []string {
	var out []string
	for _, pat := range []string{filepath.Join(cgroup.Root, "isobench", "*"), filepath.Join(cgroup.Root, "*", "isobench", "*")} {
		m, _ := filepath.Glob(pat)
		for _, d := range m {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() && vmowner.IsName(filepath.Base(d)) {
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// killTree kills pid's descendants, then pid (runrec.KillTree).
func killTree(pid int) error {
	return runrec.KillTree(pid, hostos.Parents(hostos.Procs()))
}
