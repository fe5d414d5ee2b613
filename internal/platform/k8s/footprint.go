package k8s

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/hostos"
	"github.com/isobench/isobench/internal/platform"
)

var _ platform.Footprinter = (*Instance)(nil)

// Footprint reads the pod's cgroup on its node, which must be this host
// (the kubelet's kubepods/[QOS/]pod<UID>, cgroupfs driver, or
// kubepods.slice/...-pod<UID>.slice, systemd driver: the pause container,
// the main container and, with gVisor, the whole sandbox), the disk the
// pod added (its container's overlay upper directory, from the rootfs
// mount containerd made, and its emptyDirs in the kubelet's directory),
// and gives containerd, the kubelet and the pod's containerd shim as the
// engine.
func (in *Instance) Footprint(ctx context.Context) (platform.Footprint, error) {
	var fp platform.Footprint
	var cur pod
	if err := in.p.c.do(ctx, http.MethodGet, in.podPath(), nil, nil, &cur); err != nil {
		return fp, fmt.Errorf("k8s footprint: pod %s: %w", in.name, err)
	}
	if cur.Status.HostIP == "" || !isLocalIP(cur.Status.HostIP) {
		return fp, fmt.Errorf("k8s footprint: pod %s runs on node %s (%s), not on this host: %w (its cgroups are read on the node)", in.name, cur.Spec.NodeName, cur.Status.HostIP, platform.ErrUnsupported)
	}
	mem, cpu, err := podCgroups(in.uid)
	if err != nil {
		return fp, fmt.Errorf("k8s footprint: pod %s: %w", in.name, err)
	}
	if fp.MemoryBytes, fp.CPUSeconds, err = hostos.CgroupUsage(mem, cpu); err != nil {
		return fp, fmt.Errorf("k8s footprint: pod %s: %w", in.name, err)
	}

	kubelet, rootDir, err := in.p.kubelet(ctx, cur.Spec.NodeName)
	if err != nil {
		return fp, fmt.Errorf("k8s footprint: %w", err)
	}
	ctrID := ""
	for _, cs := range cur.Status.ContainerStatuses {
		if cs.Name == containerName {
			_, ctrID, _ = strings.Cut(cs.ContainerID, "://")
		}
	}
	if ctrID == "" {
		return fp, fmt.Errorf("k8s footprint: pod %s has no container id yet", in.name)
	}
	upper, err := upperDir("/proc/self/mountinfo", ctrID)
	if err != nil {
		return fp, fmt.Errorf("k8s footprint: pod %s: %w", in.name, err)
	}
	if fp.DiskBytes, err = hostos.DisksUsage(upper, filepath.Join(rootDir, "pods", in.uid, "volumes", "kubernetes.io~empty-dir")); err != nil {
		return fp, fmt.Errorf("k8s footprint: pod %s: %w", in.name, err)
	}

	sock := in.p.containerdSocket()
	if sock == "" {
		return fp, fmt.Errorf("k8s footprint: no containerd socket on this host (containerd=SOCKET names it)")
	}
	containerd, err := hostos.SocketPeerPID(sock)
	if err != nil {
		return fp, fmt.Errorf("k8s footprint: containerd: %w", err)
	}
	if argv0 := hostos.ProcArgv(containerd)[0]; filepath.Base(argv0) != "containerd" {
		return fp, fmt.Errorf("k8s footprint: the process listening on %s is pid %d (%q), not containerd", sock, containerd, argv0)
	}
	shim, err := podShim(mem)
	if err != nil {
		return fp, fmt.Errorf("k8s footprint: pod %s: %w", in.name, err)
	}
	fp.EnginePIDs = []int{containerd, kubelet, shim}
	return fp, nil
}

// podCgroups finds the memory and CPU accounting directories of the pod
// with uid on this host, under either cgroup driver.
func podCgroups(uid string) (mem, cpu string, err error) {
	const root = "/sys/fs/cgroup"
	if uid == "" {
		return "", "", errors.New("no pod uid")
	}
	memRoot, cpuRoot := root, root
	if cgroup.Version() == 1 {
		memRoot, cpuRoot = filepath.Join(root, "memory"), filepath.Join(root, "cpuacct")
	}
	if mem, err = podCgroupDir(memRoot, uid); err != nil {
		return "", "", err
	}
	if cpu, err = podCgroupDir(cpuRoot, uid); err != nil {
		return "", "", err
	}
	return mem, cpu, nil
}

// podCgroupDir finds the pod's directory below a cgroup hierarchy's root:
// kubepods/pod<UID> or kubepods/<qos>/pod<UID> (cgroupfs driver),
// kubepods.slice/[kubepods-<qos>.slice/]kubepods[-<qos>]-pod<UID_>.slice
// (systemd driver, '-' in the uid written '_').
func podCgroupDir(root, uid string) (string, error) {
	u := strings.ReplaceAll(uid, "-", "_")
	for _, pat := range []string{
		"kubepods/pod" + uid,
		"kubepods/*/pod" + uid,
		"kubepods.slice/kubepods-pod" + u + ".slice",
		"kubepods.slice/kubepods-*.slice/kubepods-*-pod" + u + ".slice",
	} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		if len(m) > 0 {
			return m[0], nil
		}
	}
	return "", fmt.Errorf("no cgroup for pod %s under %s (kubepods/.../pod%s or kubepods.slice/...-pod%s.slice)", uid, root, uid, u)
}

// upperDir finds, in a mountinfo file, the overlay upper directory of the
// rootfs containerd mounted for container id (.../<id>/rootfs).
func upperDir(mountinfo, id string) (string, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if up, ok := overlayUpper(sc.Text(), id); ok {
			return up, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%s: %w", mountinfo, err)
	}
	return "", fmt.Errorf("no overlay rootfs mount of container %s in %s", id, mountinfo)
}

// overlayUpper reads one mountinfo line: the upperdir of an overlay
// mounted at .../<id>/rootfs.
func overlayUpper(line, id string) (string, bool) {
	pre, post, ok := strings.Cut(line, " - ")
	if !ok {
		return "", false
	}
	f := strings.Fields(pre)
	if len(f) < 5 || !strings.HasSuffix(f[4], "/"+id+"/rootfs") {
		return "", false
	}
	g := strings.Fields(post)
	if len(g) < 3 || g[0] != "overlay" {
		return "", false
	}
	for _, o := range strings.Split(g[2], ",") {
		if v, ok := strings.CutPrefix(o, "upperdir="); ok {
			return hostos.UnescapeMount(v), true
		}
	}
	return "", false
}

// podShim is the containerd shim serving the pod: the nearest ancestor
// named containerd-shim* of a process in the pod's cgroup (the pause
// container's, the main container's, or gVisor's sandbox).
func podShim(cgroupDir string) (int, error) {
	var pids []int
	filepath.WalkDir(cgroupDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, l := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(l); err == nil {
				pids = append(pids, n)
			}
		}
		return nil
	})
	for _, pid := range pids {
		p := pid
		for depth := 0; depth < 16 && p > 1; depth++ {
			ppid, comm, err := hostos.ProcStat(p)
			if err != nil {
				break
			}
			if strings.HasPrefix(comm, "containerd-shim") {
				return p, nil
			}
			p = ppid
		}
	}
	return 0, fmt.Errorf("no containerd shim above the processes of %s (%d processes)", cgroupDir, len(pids))
}

// kubelet finds the kubelet of node on this host: the process listening on
// the port the node's status gives for its kubelet, and its --root-dir
// (default /var/lib/kubelet). The pid is kept while it stays a kubelet.
func (p *Platform) kubelet(ctx context.Context, node string) (pid int, rootDir string, err error) {
	p.kubeletMu.Lock()
	defer p.kubeletMu.Unlock()
	if p.kubeletPID > 0 && filepath.Base(hostos.ProcArgv(p.kubeletPID)[0]) == "kubelet" {
		return p.kubeletPID, p.kubeletRoot, nil
	}
	var n struct {
		Status struct {
			DaemonEndpoints struct {
				KubeletEndpoint struct {
					Port int `json:"Port"`
				} `json:"kubeletEndpoint"`
			} `json:"daemonEndpoints"`
		} `json:"status"`
	}
	if err := p.c.do(ctx, http.MethodGet, "/api/v1/nodes/"+node, nil, nil, &n); err != nil {
		return 0, "", fmt.Errorf("node %s: %w", node, err)
	}
	port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port <= 0 {
		return 0, "", fmt.Errorf("node %s reports no kubelet port", node)
	}
	pid, err = tcpListener(port)
	if err != nil {
		return 0, "", fmt.Errorf("the kubelet of node %s: %w", node, err)
	}
	argv := hostos.ProcArgv(pid)
	if filepath.Base(argv[0]) != "kubelet" {
		return 0, "", fmt.Errorf("the process listening on the kubelet port %d of node %s is pid %d (%q), not a kubelet", port, node, pid, argv[0])
	}
	p.kubeletPID, p.kubeletRoot = pid, kubeletRootDir(argv)
	return p.kubeletPID, p.kubeletRoot, nil
}

// kubeletRootDir reads --root-dir from a kubelet's argv.
func kubeletRootDir(argv []string) string {
	for i, a := range argv {
		if v, ok := strings.CutPrefix(a, "--root-dir="); ok {
			return v
		}
		if a == "--root-dir" && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return "/var/lib/kubelet"
}

// tcpListener finds the host process with a socket listening on TCP port
// (from /proc/net/tcp and tcp6, then the process holding that socket).
func tcpListener(port int) (int, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, ino := range listeningInodes(string(b), port) {
			inodes["socket:["+ino+"]"] = true
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("nothing on this host listens on TCP port %d", port)
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && inodes[l] {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process holds the socket listening on TCP port %d", port)
}

// listeningInodes reads a /proc/net/tcp table: the inodes of the sockets
// in state LISTEN (0A) on port.
func listeningInodes(table string, port int) []string {
	var out []string
	want := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" || !strings.HasSuffix(f[1], want) {
			continue
		}
		out = append(out, f[9])
	}
	return out
}
