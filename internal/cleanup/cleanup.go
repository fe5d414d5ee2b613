// Package cleanup finds what isobench created on this host that belongs to
// no live run, and removes it: `isobench clean`, and the sweep `isobench
// run` does before it starts.
//
// What isobench creates, by platform, and how it is named:
//   - Every platform's factory has a Sweep (platform.Factory.Sweep, given
//     in Options.Platforms) that lists what it leaves: Docker and
//     Podman their containers labelled isobench=1 and isobench.run=<the
//     run's token>, with Podman's volume and log files under the state
//     directory (podman-volumes/<name>, podman-logs/<name>.log); LXD its
//     instances named isob-x<hex> with user.isobench.run=<token>, their
//     veths and volume directories (state dir lxd-volumes/<name>); QEMU
//     its run directories /run/isobench/qemu/isoq-<digits> (vmowner.Base)
//     with an owner record (pid, tap, disk, volume, cgroup; package
//     vmowner), the tap, the disk and volume under the state directory,
//     the cgroup isobench/<the run directory's name>, the qemu process,
//     and overlays and cgroups whose run directory is gone; the local
//     platforms (LXC, runc, crun, gVisor, systemd-nspawn; package
//     platform/local's Sweep with each engine's Traits) their instances
//     (ids isob-<code><hex>, without the run's token), each with its
//     engine's processes, its runtime's state, its instance directory and
//     overlay mount, its network namespace, veth and cgroups and what
//     else the engine keeps.
//     Native its scratch directories $TMPDIR/isobench-native/<name>-<rand>
//     (SweepEnv.TempDirs), their cgroups and orphaned agents; docker-in-vm
//     its VM, a QEMU VM (listed once when qemu lists it too); Kubernetes,
//     for 'isobench clean' only (Options.Clean), this host's pods on a
//     reachable cluster and what a dead local cluster's runtimes left.
//     This package names no platform: it takes the registry.
//     It decides whose run is dead (by run token, by the platform's own
//     verdict, Leftover.Judge: a VM's by its owner's pid, or, for an
//     instance without a token, by what it left: traceDead) and removes
//     them (scanSweeps), with the bridge leases of the instances found
//     dead.
//   - the bridge isobr0, its FORWARD rule and the leases (package hostnet).
//
// What is found on the host is input any local user may have planted:
// a directory is searched only when it is isobench's own (privdir.Check:
// a real directory of root's or this user's that no one else can write
// to), an owner record is believed only when every field is what the
// platform writes (vmowner.Read, in the qemu platform's Sweep), and
// nothing is removed outside the directories isobench keeps things in: a
// disk or volume a record names must be in a known state directory (one
// of a run record's, or given: SweepEnv.StateDirs). What fails is listed
// as kept, with why.
//
// Which run an object belongs to, and whether that run is alive:
//   - Every `isobench run` writes a record under runrec.Dir (pid and
//     process start time, token, state directory, store, run id) and
//     removes it when it ends. A record whose process is gone names a
//     dead (crashed) run.
//   - Objects that carry the run's token (Docker, Podman and LXD labels,
//     native names, which hold the instance name r<id><token>-N)
//     are dead when a dead record has that token, or when no record has
//     it and no isobench run without a record (an older isobench) is
//     running.
//   - QEMU VMs are dead when the isobench process their owner record
//     names is gone (the qemu platform's Leftover.Judge).
//   - Instances without a token (Leftover.Untokened: the local
//     platforms') are dead when their engine process was orphaned (its
//     parent is init: the isobench process that started it died), or,
//     with no engine process left, when their lease belongs to a dead
//     process, or their instance directory is in a state directory that
//     only dead runs used.
//   - An object with none of these signs (no token, no process, no lease)
//     is removed only when no other isobench process (isobench itself or
//     a test binary of it) is alive on the host: then nothing is live.
//     Otherwise it is listed as kept, with why.
package cleanup

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/runrec"
)

// Object is one thing isobench created that belongs to no live run.
type Object struct {
	Kind  string // container, process, mount, dir, netns, veth, cgroup, lease, bridge, ...
	Name  string
	Owner string // the instance or run it belongs to
	Why   string // why it is considered dead
	order int
	rm    func(ctx context.Context) error
}

func (o Object) String() string {
	s := o.Kind + " " + o.Name
	if o.Why != "" {
		s += " (" + o.Why + ")"
	}
	return s
}

// Kept is an object that might be isobench's but whose owner cannot be
// told dead.
type Kept struct {
	Kind, Name, Why string
}

// Failure is an object whose removal failed.
type Failure struct {
	Object Object
	Err    error
}

func (f Failure) String() string {
	return fmt.Sprintf("%s %s: %v", f.Object.Kind, f.Object.Name, f.Err)
}

// Options say where to look.
type Options struct {
	// StateDirs are searched besides those in run records (the default
	// state directory, --state-dir).
	StateDirs []string
	// TempDirs likewise for native scratch ($TMPDIR; SweepEnv.TempDirs).
	TempDirs []string
	// Clean says this is 'isobench clean', not the sweep before a run
	// (SweepEnv.Clean: a platform may then look farther, a cluster).
	Clean bool
	// QEMUDir is where this package's tests put QEMU run directories
	// (the registry they search when Platforms is nil sweeps there); the
	// qemu platform's own Sweep searches vmowner.Base().
	QEMUDir string
	// RecordDir is runrec.Dir unless set (tests).
	RecordDir string
	// Platforms are the platforms whose own Sweep (platform.Factory.Sweep)
	// lists what they leave (Docker's and Podman's containers, LXD's
	// instances, QEMU's VMs, the local platforms' instances); nil: none of
	// those is searched.
	Platforms platform.Registry
}

// Plan is what a scan found.
type Plan struct {
	Objects  []Object
	Kept     []Kept
	DeadRuns []*runrec.Record // records of runs whose process died
}

// Scan finds what belongs to no live run. It changes nothing.
func Scan(ctx context.Context, o Options) (*Plan, error) {
	w := newWorld(o)
	p := &Plan{}
	for _, r := range w.records {
		if !r.Alive() {
			p.DeadRuns = append(p.DeadRuns, r)
		}
	}
	w.scanSweeps(ctx, p)
	w.scanLeases(p)
	w.scanBridge(p)
	sort.SliceStable(p.Objects, func(i, j int) bool { return p.Objects[i].order < p.Objects[j].order })
	return p, nil
}

// Remove removes the plan's objects in order (processes and containers
// first, the bridge last) and returns every failure. Dead runs' records
// are removed once everything was.
func Remove(ctx context.Context, p *Plan) []Failure {
	var fails []Failure
	for _, o := range p.Objects {
		if err := o.rm(ctx); err != nil {
			fails = append(fails, Failure{Object: o, Err: err})
		}
	}
	if len(fails) > 0 {
		return fails // the records say whose the rest is, for the next try
	}
	for _, r := range p.DeadRuns {
		if err := r.End(); err != nil {
			fails = append(fails, Failure{Object: Object{Kind: "run-record", Name: r.Path()}, Err: err})
		}
	}
	return fails
}

// Report writes what a plan holds (and, after Remove, what failed).
func Report(w io.Writer, p *Plan, removed bool, fails []Failure) {
	verb := "would remove"
	if removed {
		verb = "removed"
	}
	failed := map[string]bool{}
	for _, f := range fails {
		failed[f.Object.Kind+" "+f.Object.Name] = true
	}
	for _, r := range p.DeadRuns {
		fmt.Fprintf(w, "dead run: pid %d (token %s, store %s, run %d, state %s)\n", r.Pid, r.Token, r.DB, r.RunID, r.StateDir)
	}
	for _, o := range p.Objects {
		if failed[o.Kind+" "+o.Name] {
			continue
		}
		fmt.Fprintf(w, "%s %s\n", verb, o)
	}
	for _, k := range p.Kept {
		fmt.Fprintf(w, "kept %s %s: %s\n", k.Kind, k.Name, k.Why)
	}
	for _, f := range fails {
		fmt.Fprintf(w, "failed to remove %s\n", f)
	}
}

// proc is one host process.
type proc struct {
	pid, ppid int
	argv      []string
	exe       string
}

type world struct {
	o          Options
	self       int
	procs      map[int]*proc
	records    []*runrec.Record
	liveTokens map[string]bool
	deadTokens map[string]int // token -> pid of its dead run
	stateDirs  []string
	tempDirs   []string
	// deadDirs are state (and temp) directories only dead runs used.
	deadDirs   map[string]bool
	otherAlive bool // another isobench process is running
	// unrecorded is a running isobench run without a record (an older
	// isobench): then tokens tell nothing.
	unrecorded int
	bridge     *hostnet.Bridge
	leases     []hostnet.LeaseInfo
	// deadIDs are instances found dead (their leases go with them).
	deadIDs map[string]bool
}

func newWorld(o Options) *world {
	w := &world{o: o, self: os.Getpid(), liveTokens: map[string]bool{}, deadTokens: map[string]int{}, deadDirs: map[string]bool{}, deadIDs: map[string]bool{}}
	w.records = runrec.List(o.RecordDir)
	liveDirs := map[string]bool{}
	add := func(list *[]string, d string) {
		if d == "" {
			return
		}
		d = filepath.Clean(d)
		for _, x := range *list {
			if x == d {
				return
			}
		}
		*list = append(*list, d)
	}
	for _, d := range o.StateDirs {
		add(&w.stateDirs, d)
	}
	for _, d := range o.TempDirs {
		add(&w.tempDirs, d)
	}
	add(&w.tempDirs, os.TempDir())
	for _, r := range w.records {
		add(&w.stateDirs, r.StateDir)
		add(&w.tempDirs, r.TempDir)
		if r.Alive() {
			if r.Token != "" {
				w.liveTokens[r.Token] = true
			}
			liveDirs[filepath.Clean(r.StateDir)] = true
		} else if r.Token != "" {
			w.deadTokens[r.Token] = r.Pid
		}
	}
	for _, r := range w.records {
		if d := filepath.Clean(r.StateDir); !r.Alive() && r.StateDir != "" && !liveDirs[d] {
			w.deadDirs[d] = true
		}
	}
	w.procs = procs()
	recorded := map[int]bool{}
	for _, r := range w.records {
		if r.Alive() {
			recorded[r.Pid] = true
		}
	}
	for _, p := range w.procs {
		if p.pid == w.self || !isIsobench(p) || w.isAncestorOfSelf(p.pid) {
			continue
		}
		w.otherAlive = true
		if base := filepath.Base(p.exe); !strings.HasSuffix(base, ".test") && len(p.argv) > 1 && !recorded[p.pid] {
			switch p.argv[1] {
			case "run", "study", "platformd":
				w.unrecorded = p.pid
			}
		}
	}
	w.bridge = hostnet.Default("")
	w.leases = w.bridge.Leases()
	return w
}

// isIsobench: an isobench process (not an agent inside an instance) or a
// test binary of it.
func isIsobench(p *proc) bool {
	base := filepath.Base(p.exe)
	if base == "isobench" || strings.HasPrefix(base, "isobench-") {
		return len(p.argv) < 2 || p.argv[1] != "agent"
	}
	return strings.HasSuffix(base, ".test") && len(p.argv) > 0
}

func (w *world) isAncestorOfSelf(pid int) bool {
	for p := w.procs[w.self]; p != nil && p.ppid > 0; p = w.procs[p.ppid] {
		if p.ppid == pid {
			return true
		}
	}
	return false
}

func procs() map[int]*proc {
	out := map[int]*proc{}
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		p := &proc{pid: pid, ppid: hostos.ParentPID(pid)}
		for _, a := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
			if a != "" {
				p.argv = append(p.argv, a)
			}
		}
		p.exe, _ = os.Readlink("/proc/" + e.Name() + "/exe")
		p.exe = strings.TrimSuffix(p.exe, " (deleted)")
		out[pid] = p
	}
	return out
}

func (w *world) leaseOf(owner string) (hostnet.LeaseInfo, bool) {
	for _, l := range w.leases {
		if l.Owner == owner {
			return l, true
		}
	}
	return hostnet.LeaseInfo{}, false
}

// listTimeout bounds asking an engine for its containers (a wedged
// daemon must not hang a run's start).
const listTimeout = 30 * time.Second

// Order of removal.
const (
	orderRun = iota
	orderContainer
	orderProcess
	orderRuntime
	orderMount
	orderNetns
	orderLink
	orderCgroup
	orderDir
	orderLease
	orderBridge
)

// runToken is the token in an instance name "r<run id><token>-<seq>".
var runToken = regexp.MustCompile(`r\d+([0-9a-f]{6})-\d+`)

// tokenDead decides an object by the run token it carries.
func (w *world) tokenDead(token string) (bool, string) {
	if token != "" {
		switch {
		case w.liveTokens[token]:
			return false, ""
		case w.deadTokens[token] > 0:
			return true, fmt.Sprintf("its run %s died (process %d)", token, w.deadTokens[token])
		case w.unrecorded > 0:
			return false, fmt.Sprintf("its run %s has no record, and isobench process %d runs without one (an older isobench)", token, w.unrecorded)
		}
		return true, "its run " + token + " is not running"
	}
	if !w.otherAlive {
		return true, "no isobench process is running"
	}
	return false, "it carries no run token, and other isobench processes are running"
}

// scanSweeps finds what the platforms with a Sweep list: an instance is
// dead as the platform's own verdict (Leftover.Judge), or, for one that
// carries no run token by design (Leftover.Untokened), as what it left
// says (traceDead), or else as its run token says (tokenDead), unless its
// lease is live; a part goes with its instance, or, with the instance
// gone, is decided by its own token (none: only when no other isobench
// runs) and its owner's lease. An instance with nothing to remove itself
// (no Leftover.Remove) says why on its first part.
func (w *world) scanSweeps(ctx context.Context, p *Plan) {
	reg := w.o.Platforms
	if reg == nil && testPlatforms != nil {
		reg = testPlatforms(w.o)
	}
	listed := map[string]bool{} // Leftover.String of what was listed
	for _, name := range reg.Names() {
		f := reg[name]
		if f.Sweep == nil {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, listTimeout)
		found, err := f.Sweep(lctx, platform.SweepEnv{StateDirs: w.stateDirs, TempDirs: w.tempDirs, Clean: w.o.Clean})
		cancel()
		if err != nil {
			p.Kept = append(p.Kept, Kept{name, "instances", fmt.Sprintf("cannot list: %v", err)})
			continue
		}
		type verdict struct {
			dead bool
			why  string
		}
		// what an earlier platform's Sweep listed too (docker-in-vm's VMs
		// are QEMU's) is that platform's
		found = slices.DeleteFunc(found, func(l platform.Leftover) bool { return listed[l.String()] })
		for _, l := range found {
			listed[l.String()] = true
		}
		instances := map[string]platform.Leftover{}
		pids := map[string][]int{} // an instance's processes
		for _, l := range found {
			switch {
			case l.Owner == "":
				instances[l.Name] = l
			case l.Kind == "process" && l.PID > 0:
				pids[l.Owner] = append(pids[l.Owner], l.PID)
			}
		}
		decided := map[string]verdict{}
		decide := func(owner string, l platform.Leftover) verdict {
			if v, ok := decided[owner]; ok {
				return v
			}
			var v verdict
			switch {
			case l.Judge != nil:
				v.dead, v.why = l.Judge()
			case l.Untokened && l.Owner == "":
				v.dead, v.why = w.traceDead(owner, l.StateDir, pids[owner])
			default:
				token := l.Token
				if token == "" {
					if m := runToken.FindStringSubmatch(l.SpecName); m != nil {
						token = m[1]
					}
				}
				v.dead, v.why = w.tokenDead(token)
			}
			if le, ok := w.leaseOf(owner); ok && le.Live {
				v.dead = false
			}
			decided[owner] = v
			return v
		}
		said := map[string]bool{} // instances whose why one of their parts gave
		for _, l := range found {
			owner, by := l.Name, l
			if l.Owner != "" {
				owner = l.Owner
				if in, ok := instances[owner]; ok {
					by = in
				}
			}
			_, isPart := instances[owner]
			isPart = isPart && l.Owner != ""
			v := decide(owner, by)
			if !v.dead {
				if v.why != "" && !isPart {
					p.Kept = append(p.Kept, Kept{l.Kind, l.Name, v.why})
				}
				continue
			}
			w.deadIDs[owner] = true
			if l.Remove == nil {
				continue // only the owner of its parts
			}
			o := Object{Kind: l.Kind, Name: l.Name, Owner: l.Owner, order: orderOf(l.Kind), rm: l.Remove}
			if isPart && o.order == orderContainer {
				// a runtime's record of an instance (runc's state), whose
				// processes are its instance's: after them
				o.order = orderRuntime
			}
			switch {
			case !isPart:
				o.Why = v.why
			case by.Remove == nil && !said[owner]:
				o.Why, said[owner] = v.why, true
			}
			p.Objects = append(p.Objects, o)
		}
	}
}

// traceDead decides an instance that carries no run token (named id,
// its files in state directory sd, if any; pids its processes) by what
// it left: alive while one of its processes has a parent other than init
// or its lease is held by a live process; dead when its processes were
// all orphaned (the isobench that started them died), when only dead runs
// used sd, when its lease's process is gone, or when no other isobench
// process runs. Why says either way ("" when alive for a plain reason).
func (w *world) traceDead(id, sd string, pids []int) (bool, string) {
	pids = slices.Sorted(slices.Values(pids))
	for _, pid := range pids {
		if !w.orphaned(pid) {
			return false, ""
		}
	}
	l, leased := w.leaseOf(id)
	if leased && l.Live {
		return false, ""
	}
	switch {
	case len(pids) > 0:
		return true, fmt.Sprintf("its engine process %d outlived the isobench that started it", pids[0])
	case sd != "" && w.deadDirs[filepath.Clean(sd)]:
		return true, "its state directory " + sd + " was used only by dead runs"
	case leased:
		return true, fmt.Sprintf("its lease belongs to dead process %d", l.Pid)
	case !w.otherAlive:
		return true, "no isobench process is running"
	}
	return false, "no process, lease or run record tells whose it is, and other isobench processes are running"
}

// orphaned reports whether process pid's creator died: it was reparented
// to init.
func (w *world) orphaned(pid int) bool {
	if p := w.procs[pid]; p != nil {
		return p.ppid == 1
	}
	return hostos.ParentPID(pid) == 1 // started since the scan began
}

// testPlatforms, when set (by this package's tests), gives the registry
// Scan searches when Options.Platforms is nil: the platforms whose
// leftovers the tests plant (QEMU's run directories in Options.QEMUDir,
// Docker's and Podman's containers).
var testPlatforms func(Options) platform.Registry

// orderOf is when an object a platform's Sweep lists is removed, by its
// kind: instances and containers first, directories last.
func orderOf(kind string) int {
	switch {
	case strings.HasSuffix(kind, "instance"), strings.HasSuffix(kind, "container"):
		return orderContainer
	case kind == "process":
		return orderProcess
	case kind == "mount":
		return orderMount
	case kind == "netns":
		return orderNetns
	case kind == "veth", kind == "tap":
		return orderLink
	case kind == "cgroup":
		return orderCgroup
	}
	return orderDir
}

// scanLeases finds leases whose process died: of instances found dead,
// or whose port is gone.
func (w *world) scanLeases(p *Plan) {
	for _, l := range w.leases {
		if l.Live {
			continue
		}
		portGone := true
		if l.Port != "" {
			_, err := os.Stat("/sys/class/net/" + l.Port)
			portGone = err != nil
		}
		if !w.deadIDs[l.Owner] && !portGone {
			continue
		}
		a := l.Addr
		p.Objects = append(p.Objects, Object{Kind: "lease", Name: fmt.Sprintf("%s %s", a, l.Owner), Owner: l.Owner,
			Why: fmt.Sprintf("its process %d is gone", l.Pid), order: orderLease,
			rm: func(context.Context) error { return w.bridge.RemoveLease(a) }})
	}
}

// scanBridge plans removing the bridge and its rule when, once the plan's
// objects are gone, no port and no live lease would be left.
func (w *world) scanBridge(p *Plan) {
	if !w.bridge.Exists() {
		if ruleExists(w.bridge.Name) {
			p.Objects = append(p.Objects, Object{Kind: "iptables-rule", Name: "FORWARD -i " + w.bridge.Name + " -o " + w.bridge.Name + " -j ACCEPT",
				Why: "its bridge is gone", order: orderBridge, rm: func(ctx context.Context) error { return w.bridge.RemoveIfUnused(ctx) }})
		}
		return
	}
	going := map[string]bool{}
	for _, o := range p.Objects {
		if o.Kind == "veth" || o.Kind == "tap" {
			going[o.Name] = true
		}
	}
	for _, port := range w.bridge.Ports() {
		if !going[port] {
			return
		}
	}
	for _, l := range w.leases {
		if l.Live {
			return
		}
	}
	p.Objects = append(p.Objects, Object{Kind: "bridge", Name: w.bridge.Name + " and its FORWARD rule", Why: "no port or live lease is left on it", order: orderBridge,
		rm: func(ctx context.Context) error {
			if err := w.bridge.RemoveIfUnused(ctx); err != nil {
				return err
			}
			if w.bridge.Exists() {
				return fmt.Errorf("still in use: ports %v", w.bridge.Ports())
			}
			return nil
		}})
}

func ruleExists(br string) bool {
	ok, _ := hostnet.RuleExists(context.Background(), br)
	return ok
}

// deleteLink deletes a veth or tap; one already gone (its peer's
// namespace went, or a concurrent sweep) is no failure.
func deleteLink(ctx context.Context, name string) error {
	err := hostnet.DeleteLink(ctx, name)
	if _, serr := os.Stat("/sys/class/net/" + name); err != nil && serr == nil {
		return err
	}
	return nil
}
