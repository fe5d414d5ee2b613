package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
)

// LocalRun is the run directory of the local cluster (scripts/start-k8s.sh's
// $RUN): containerd's socket and state, and the runc and runsc runtimes'
// state (their roots), runsc's null-netns mount among it.
var LocalRun = filepath.Dir(filepath.Dir(DefaultContainerd))

// localBridge is the local cluster's CNI bridge (start-k8s.sh's $BRIDGE).
const localBridge = "cni-isob0"

// shimNames are the runtime shims of the local cluster's RuntimeClasses:
// runc's and gVisor's (runsc).
var shimNames = map[string]bool{"containerd-shim-runc-v2": true, "containerd-shim-runsc-v1": true}

// node is the host as leftovers sees it (tests give their own).
type node struct {
	proc      string // the proc file system: /proc
	sock      string // the cluster's containerd socket
	run       string // the cluster's run directory
	sysNet    string // /sys/class/net
	netns     string // where CNI's pod network namespaces are pinned: /run/netns
	alive     func(sock string) bool
	kill      func(pid int) error
	unmount   func(path string) error
	removeDir func(path string) error
	delLink   func(ctx context.Context, name string) error
}

func hostNode() node {
	return node{
		proc: "/proc", sock: DefaultContainerd, run: LocalRun, sysNet: "/sys/class/net", netns: "/run/netns",
		alive: func(sock string) bool {
			c, err := net.DialTimeout("unix", sock, 2*time.Second)
			if err != nil {
				return false
			}
			c.Close()
			return true
		},
		kill:      func(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) },
		unmount:   unmountDetach,
		removeDir: os.RemoveAll,
		delLink:   hostnet.DeleteLink,
	}
}

// leftovers lists, for 'isobench clean' (Sweep), what the node of the
// local cluster (scripts/start-k8s.sh) keeps when that cluster died
// without `start-k8s.sh stop`: with its containerd gone (its socket
// answers no one), the kubelet and containerd no longer remove what the
// RuntimeClasses runc and gvisor keep for their pods. In removal order:
// the runtime shims that served that containerd (containerd-shim-runc-v2,
// containerd-shim-runsc-v1, with -address naming its socket), each after
// every process below it (the pods' containers, runsc's sandboxes and
// gofers, children first), the mounts under the cluster's run directory
// (the containers' root file systems, runsc's null-netns pin of its shared
// network namespace), the runtimes' state there (runc, runsc), the pods'
// network namespaces (the /run/netns/cni-* its sandboxes' OCI specs name)
// and veths on the cluster's bridge. Each is dead by the platform's own
// verdict (Leftover.Judge: the local cluster's containerd is gone). With
// the containerd running, or no local cluster, it lists nothing: the
// cluster owns them.
func (n node) leftovers() []platform.Leftover {
	if _, err := os.Stat(n.run); err != nil {
		return nil // no local cluster ever ran here (or it was stopped)
	}
	if n.alive(n.sock) {
		return nil
	}
	dead := func() (bool, string) { return true, "the local cluster's containerd is gone" }
	var out []platform.Leftover
	add := func(kind, name string, rm func(ctx context.Context) error) {
		out = append(out, platform.Leftover{Kind: kind, Name: name, Judge: dead, Remove: rm})
	}
	kill := func(pid int) func(context.Context) error {
		return func(context.Context) error { return ignoreGone(n.kill(pid)) }
	}

	// processes: the shims and everything below them, children first
	procs := n.processes()
	for _, shim := range n.shims(procs) {
		below := descendants(procs, shim)
		for i := len(below) - 1; i >= 0; i-- {
			pid := below[i]
			add("k8s-process", fmt.Sprintf("%d (%s, below shim %d)", pid, procs[pid].name(), shim), kill(pid))
		}
		add("k8s-shim", fmt.Sprintf("%d (%s)", shim, procs[shim].name()), kill(shim))
	}

	// mounts under the run directory, deepest first
	mounts, err := mountsUnder(filepath.Join(n.proc, "self", "mountinfo"), n.run)
	if err != nil {
		why := fmt.Sprintf("cannot list: k8s: mounts: %v", err)
		out = append(out, platform.Leftover{Kind: "k8s-mounts", Name: n.run, Judge: func() (bool, string) { return false, why }})
	}
	for _, m := range mounts {
		add("k8s-mount", m, func(context.Context) error { return n.unmount(m) })
	}

	// the runtimes' state directories, once nothing is mounted below them
	for _, rt := range []string{"runc", "runsc"} {
		dir := filepath.Join(n.run, rt)
		if _, err := os.Lstat(dir); err != nil {
			continue
		}
		add("k8s-runtime-state", dir, func(context.Context) error {
			if left, _ := mountsUnder(filepath.Join(n.proc, "self", "mountinfo"), dir); len(left) > 0 {
				return fmt.Errorf("still mounted below it: %s", strings.Join(left, ", "))
			}
			return n.removeDir(dir)
		})
	}

	// the pods' network namespaces, as the sandboxes' specs name them
	for _, ns := range n.podNetns() {
		add("k8s-netns", ns, func(context.Context) error {
			err := n.unmount(ns)
			if err == nil || errors.Is(err, syscall.EINVAL) { // EINVAL: not mounted
				err = os.Remove(ns)
			}
			return err
		})
	}

	// the pods' veths on the cluster's bridge
	links, _ := filepath.Glob(filepath.Join(n.sysNet, "*", "master"))
	sort.Strings(links)
	for _, l := range links {
		dst, err := os.Readlink(l)
		if err != nil || filepath.Base(dst) != localBridge {
			continue
		}
		name := filepath.Base(filepath.Dir(l))
		add("k8s-veth", name, func(ctx context.Context) error { return n.delLink(ctx, name) })
	}
	return out
}

// podNetns lists the pinned network namespaces the cluster's pod
// sandboxes joined: the /run/netns/cni-* (or /var/run/netns/cni-*) paths
// in the OCI specs of containerd's task bundles under the run directory,
// those that still exist.
func (n node) podNetns() []string {
	specs, _ := filepath.Glob(filepath.Join(n.run, "containerd", "state", "io.containerd.runtime.v2.task", "*", "*", "config.json"))
	seen := map[string]bool{}
	var out []string
	for _, f := range specs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var spec struct {
			Linux struct {
				Namespaces []struct {
					Type string `json:"type"`
					Path string `json:"path"`
				} `json:"namespaces"`
			} `json:"linux"`
		}
		if json.Unmarshal(b, &spec) != nil {
			continue
		}
		for _, ns := range spec.Linux.Namespaces {
			dir, name := filepath.Split(ns.Path)
			if ns.Type != "network" || (dir != "/run/netns/" && dir != "/var/run/netns/") || !cniNetns.MatchString(name) {
				continue
			}
			p := filepath.Join(n.netns, name)
			if _, err := os.Lstat(p); err == nil && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// cniNetns is how containerd's CRI names a pod's network namespace.
var cniNetns = regexp.MustCompile(`^cni-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func ignoreGone(err error) error {
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

type nodeProc struct {
	ppid int
	comm string
	argv []string
}

// name is the process's command name: its argv[0]'s base, else its comm
// (runsc's sandbox children have argv[0] ".").
func (p nodeProc) name() string {
	if b := filepath.Base(p.argv[0]); b != "." && b != "/" && p.argv[0] != "" {
		return b
	}
	return p.comm
}

// processes reads every process's parent and argv.
func (n node) processes() map[int]nodeProc {
	out := map[int]nodeProc{}
	ents, _ := os.ReadDir(n.proc)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		st, err := os.ReadFile(filepath.Join(n.proc, e.Name(), "stat"))
		if err != nil {
			continue
		}
		ppid, comm, err := hostos.ParseStat(string(st))
		if err != nil {
			continue
		}
		argv := []string{""}
		if b, err := os.ReadFile(filepath.Join(n.proc, e.Name(), "cmdline")); err == nil && len(b) > 0 {
			argv = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
		out[pid] = nodeProc{ppid: ppid, comm: comm, argv: argv}
	}
	return out
}

// shims are the runtime shims serving the cluster's containerd: a shim
// binary's name, and "-address SOCKET" with exactly that socket.
func (n node) shims(procs map[int]nodeProc) []int {
	var out []int
	for pid, p := range procs {
		if !shimNames[filepath.Base(p.argv[0])] {
			continue
		}
		for i, a := range p.argv {
			if (a == "-address" || a == "--address") && i+1 < len(p.argv) && p.argv[i+1] == n.sock ||
				a == "-address="+n.sock || a == "--address="+n.sock {
				out = append(out, pid)
				break
			}
		}
	}
	sort.Ints(out)
	return out
}

// descendants lists the processes below pid, parents before children.
func descendants(procs map[int]nodeProc, pid int) []int {
	children := map[int][]int{}
	for p, pr := range procs {
		children[pr.ppid] = append(children[pr.ppid], p)
	}
	var out []int
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		kids := children[cur]
		sort.Ints(kids)
		for _, k := range kids {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
				queue = append(queue, k)
			}
		}
	}
	return out
}

// mountsUnder lists the mount points below dir (not dir itself) in a
// mountinfo file, deepest first.
func mountsUnder(mountinfo, dir string) ([]string, error) {
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		return nil, err
	}
	prefix := filepath.Clean(dir) + "/"
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		m := unescapeMount(f[4])
		if strings.HasPrefix(m, prefix) && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := strings.Count(out[i], "/"), strings.Count(out[j], "/"); a != b {
			return a > b
		}
		return out[i] > out[j]
	})
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
