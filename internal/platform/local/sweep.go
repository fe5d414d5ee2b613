package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/runrec"
)

// Traits are what a local platform's instances leave on this host besides
// what every one may leave (its instance directory StateDir/instances/<id>
// with its overlay mount, the network namespace NetnsDir/<id>, the veth
// VethName(id), the bridge lease, cgroups isobench/<id>): what its Sweep
// looks for.
type Traits struct {
	// Code is the platform's letter after Prefix in its ids.
	Code string
	// Engines are the names (argv[0]'s base) of the engine's host
	// processes, whose command lines name the instance (lxc-execute,
	// runc run...); a name ending in "*" is a prefix.
	Engines []string
	// Runtime is the OCI runtime whose state, --root
	// hostnet.RunDir/<Runtime>, holds the instances' containers ("" for
	// none): listed as "<Runtime>-container <id>", removed with
	// `<Runtime> --root <root> delete --force <id>` and the files.
	Runtime string
	// StateSubdirs are the state directory's subdirectories besides
	// "instances" that hold a directory per instance (LXC's lxcpath).
	StateSubdirs []string
	// CgroupPrefixes name the engine's own cgroups of an instance,
	// <prefix><id>, at the top of every hierarchy (LXC's "lxc.payload.").
	CgroupPrefixes []string
	// EngineFiles are directories where the engine keeps files whose
	// names hold the instance's id (nspawn's /run/systemd/nspawn/locks),
	// listed as EngineFilesKind.
	EngineFiles     []string
	EngineFilesKind string
}

// idPattern is a local instance id: Prefix, a platform code, 8 hex digits.
var idPattern = regexp.MustCompile(Prefix + `[a-z][0-9a-f]{8}`)

// Sweep is the Sweep (platform.Factory.Sweep) of the local platform with
// traits t. Its instances are ids (Prefix, t.Code, hex digits) found in
// any of what they leave: instance directories in the state directories,
// network namespaces, veths, the runtime's state, cgroups, bridge leases,
// engine processes naming them. Each is listed as an Untokened leftover
// of Kind "instance" with no Remove, whose parts are, in removal order:
// the processes whose command line names it (those whose parent's does
// not), the runtime's container, per state directory the mounts under its
// instance directory and its directories, its network namespace, veth,
// cgroups and the engine's files. Leases are not listed: package cleanup
// releases those of dead instances.
func Sweep(t Traits) func(context.Context, platform.SweepEnv) ([]platform.Leftover, error) {
	return func(ctx context.Context, env platform.SweepEnv) ([]platform.Leftover, error) {
		return t.sweep(env), nil
	}
}

func (t Traits) sweep(env platform.SweepEnv) []platform.Leftover {
	mine := Prefix + t.Code
	ids := map[string]string{} // id -> the state dir its directory is in
	note := func(id, sd string) {
		if !strings.HasPrefix(id, mine) {
			return
		}
		if _, ok := ids[id]; !ok || sd != "" {
			ids[id] = sd
		}
	}
	for _, sd := range env.StateDirs {
		for _, sub := range t.stateSubdirs() {
			es, _ := os.ReadDir(filepath.Join(sd, sub))
			for _, e := range es {
				if idPattern.MatchString(e.Name()) && strings.HasPrefix(e.Name(), Prefix) {
					note(e.Name(), sd)
				}
			}
		}
	}
	es, _ := os.ReadDir(NetnsDir)
	for _, e := range es {
		if m := idPattern.FindString(e.Name()); m == e.Name() {
			note(m, "")
		}
	}
	for _, l := range hostnet.Links(VethPrefix) {
		if len(l) == 12 {
			note(Prefix+l[len(VethPrefix):], "")
		}
	}
	if t.Runtime != "" {
		es, _ := os.ReadDir(t.runtimeRoot())
		for _, e := range es {
			if m := idPattern.FindString(e.Name()); m != "" {
				note(m, "")
			}
		}
	}
	cgroups := t.cgroupDirs()
	for _, c := range cgroups {
		if m := idPattern.FindString(filepath.Base(c)); m != "" {
			note(m, "")
		}
	}
	for _, l := range hostnet.Default("").Leases() {
		if idPattern.FindString(l.Owner) == l.Owner {
			note(l.Owner, "")
		}
	}
	procs := hostos.Procs()
	for _, pr := range procs {
		if !t.isEngine(pr) {
			continue
		}
		for _, a := range pr.Argv {
			if m := idPattern.FindString(a); m != "" {
				note(m, "")
			}
		}
	}
	var out []platform.Leftover
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		out = append(out, platform.Leftover{Kind: "instance", Name: id, Untokened: true, StateDir: ids[id]})
		out = append(out, t.parts(id, env, procs, cgroups)...)
	}
	return out
}

func (t Traits) stateSubdirs() []string { return append([]string{"instances"}, t.StateSubdirs...) }

func (t Traits) runtimeRoot() string { return filepath.Join(hostnet.RunDir, t.Runtime) }

// isEngine reports whether p is one of the engine's processes.
func (t Traits) isEngine(p hostos.Proc) bool {
	if len(p.Argv) == 0 {
		return false
	}
	name := filepath.Base(p.Argv[0])
	for _, e := range t.Engines {
		if pfx, ok := strings.CutSuffix(e, "*"); ok && strings.HasPrefix(name, pfx) || e == name {
			return true
		}
	}
	return false
}

// cgroupDirs lists the cgroups of the platform's instances, on every
// hierarchy: isobench/* and the engine's own (CgroupPrefixes).
func (t Traits) cgroupDirs() []string {
	pats := []string{"/sys/fs/cgroup/isobench/*", "/sys/fs/cgroup/*/isobench/*"}
	for _, p := range t.CgroupPrefixes {
		pats = append(pats, "/sys/fs/cgroup/"+p+Prefix+"*", "/sys/fs/cgroup/*/"+p+Prefix+"*")
	}
	var out []string
	for _, pat := range pats {
		m, _ := filepath.Glob(pat)
		for _, d := range m {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// parts lists what goes with instance id, in the order it is removed.
func (t Traits) parts(id string, env platform.SweepEnv, procs []hostos.Proc, cgroups []string) []platform.Leftover {
	var out []platform.Leftover
	add := func(kind, name string, rm func(context.Context) error) {
		out = append(out, platform.Leftover{Kind: kind, Name: name, Owner: id, Remove: rm})
	}
	for _, r := range hostos.RootsMentioning(procs, id) {
		pid := r.PID
		out = append(out, platform.Leftover{Kind: "process", Name: fmt.Sprintf("%d %s", pid, strings.Join(r.Argv, " ")), Owner: id, PID: pid,
			Remove: func(context.Context) error { return killTree(pid) }})
	}
	if t.Runtime != "" {
		rt, root := t.Runtime, t.runtimeRoot()
		// runc and crun keep <root>/<id>/; runsc <id>_sandbox:<id>.state,
		// .lock and runsc-<id>.sock
		var files []string
		es, _ := os.ReadDir(root)
		for _, e := range es {
			if strings.Contains(e.Name(), id) {
				files = append(files, filepath.Join(root, e.Name()))
			}
		}
		if len(files) > 0 {
			add(rt+"-container", id, func(ctx context.Context) error {
				out, err := exec.CommandContext(ctx, rt, "--root", root, "delete", "--force", id).CombinedOutput()
				var errs []error
				for _, f := range files {
					if rerr := os.RemoveAll(f); rerr != nil {
						errs = append(errs, rerr)
					}
				}
				if len(errs) > 0 {
					return fmt.Errorf("%s delete: %v: %s; %w", rt, err, strings.TrimSpace(string(out)), errors.Join(errs...))
				}
				return nil // its state is gone, whatever the runtime said
			})
		}
	}
	for _, sd := range env.StateDirs {
		dir := InstanceDir(sd, id)
		ms := MountsUnder(dir)
		slices.Sort(ms)
		for i := len(ms) - 1; i >= 0; i-- {
			m := ms[i]
			add("mount", m, func(context.Context) error { return sweepUnmount(m) })
		}
		for _, sub := range t.stateSubdirs() {
			d := filepath.Join(sd, sub, id)
			if _, err := os.Lstat(d); err == nil {
				add("dir", d, func(context.Context) error { return os.RemoveAll(d) })
			}
		}
	}
	if _, err := os.Stat(filepath.Join(NetnsDir, id)); err == nil {
		add("netns", id, func(ctx context.Context) error {
			out, err := exec.CommandContext(ctx, "ip", "netns", "delete", id).CombinedOutput()
			if _, serr := os.Stat(filepath.Join(NetnsDir, id)); err != nil && serr == nil {
				return fmt.Errorf("ip netns delete: %v: %s", err, strings.TrimSpace(string(out)))
			}
			return nil // gone (maybe removed by a concurrent sweep)
		})
	}
	veth := VethName(id)
	if _, err := os.Stat("/sys/class/net/" + veth); err == nil {
		add("veth", veth, func(ctx context.Context) error {
			err := hostnet.DeleteLink(ctx, veth)
			if _, serr := os.Stat("/sys/class/net/" + veth); err != nil && serr == nil {
				return err
			}
			return nil // gone with its namespace, or a concurrent sweep
		})
	}
	for _, c := range cgroups {
		if strings.Contains(filepath.Base(c), id) {
			add("cgroup", c, func(context.Context) error { return cgroup.RemoveDir(c) })
		}
	}
	for _, d := range t.EngineFiles {
		es, _ := os.ReadDir(d)
		for _, e := range es {
			if strings.Contains(e.Name(), id) {
				f := filepath.Join(d, e.Name())
				add(t.EngineFilesKind, f, func(context.Context) error { return os.RemoveAll(f) })
			}
		}
	}
	return out
}

// sweepUnmount unmounts path and what is stacked on it, detaching it at
// once when busy (a dead run's mount has no user to wait for).
func sweepUnmount(path string) error {
	for attempt := 0; attempt < 20; attempt++ {
		err := syscall.Unmount(path, 0)
		switch {
		case err == nil:
			continue // stacked mounts: again until EINVAL
		case errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENOENT):
			return nil
		case errors.Is(err, syscall.EBUSY):
			if err := syscall.Unmount(path, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				return fmt.Errorf("unmount %s: %w", path, err)
			}
			return nil
		default:
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
	return nil
}

// killTree kills pid's descendants, then pid (runrec.KillTree).
func killTree(pid int) error {
	return runrec.KillTree(pid, hostos.Parents(hostos.Procs()))
}
