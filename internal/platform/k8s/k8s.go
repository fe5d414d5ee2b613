// Package k8s is the "k8s" platform: one Kubernetes Pod per instance,
// spoken to through the apiserver's REST API with the standard library and
// the exec subresource over a websocket (channel.k8s.io v5, v4). No
// registry is used: the image profile is imported into the node's
// containerd (namespace k8s.io) with ctr, and pods say imagePullPolicy:
// Never.
//
// Options: the common cpus and memory (requests = limits), network (bridge:
// the pod network, the default; host: hostNetwork) and storage (rootfs, or
// volume: an emptyDir at guestenv.ScratchDir), plus runtime (a RuntimeClass
// name, e.g. runc or gvisor), node (nodeName), namespace, kubeconfig (else
// $KUBECONFIG, ~/.kube/config, then /var/lib/isobench/k8s/admin.kubeconfig,
// which scripts/start-k8s.sh writes), containerd (the node's containerd
// socket images are imported through; default the one start-k8s.sh runs),
// image (profile, default minimal) and pending (how long a pod may stay
// Pending before Create gives up on it, default 3m).
//
// A pod Kubernetes will not run or stops is a failure in Kubernetes' words
// (PodError): Create fails at once when the scheduler finds no node and
// the pod asks for more than any node has allocatable, and when the pod is
// still Pending after the bound, with the scheduler's or kubelet's reason
// and the newest warning event ("Unschedulable: 0/1 nodes are available:
// 1 Insufficient memory."); Wait fails for an evicted pod or an
// OOM-killed main container ("OOMKilled"); an exec that breaks off names
// the pod's failure; and OOMKilled (platform.OOMReporter) tells the
// runner when the OOM killer took a process run with exec.
//
// Pods are labelled isobench=1, with a label per Platform
// (isobench.k8s.session) and the host that made them (isobench.k8s.host);
// Close removes an instance's pod and Platform.Close every pod of the
// session, so pods left by an interrupted Create go too; `isobench clean`
// removes those of dead runs (the factory's Sweep, sweep.go).
package k8s

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
)

// sessionLabel marks the pods of one Platform value.
const sessionLabel = "isobench.k8s.session"

// DefaultContainerd is the containerd socket scripts/start-k8s.sh runs.
const DefaultContainerd = "/run/isobench-k8s/containerd/containerd.sock"

// Factory registers the k8s platform.
var Factory = platform.Factory{
	Name: "k8s",
	Help: "Kubernetes pods through the apiserver (kubeconfig from kubeconfig=, $KUBECONFIG, ~/.kube/config or " + DefaultKubeconfig + "; " +
		"scripts/start-k8s.sh starts a local single-node cluster). Options: cpus, memory, network=bridge|host, storage=rootfs|volume, " +
		"runtime=RUNTIMECLASS (e.g. runc, gvisor), node=NODE, namespace=NS, kubeconfig=PATH, containerd=SOCKET, image=PROFILE, " +
		"pending=DURATION (how long a pod may stay Pending before it is a failure, default 3m)",
	Extra: []string{"runtime", "node", "namespace", "kubeconfig", "containerd", "image", "pending"},
	New:   New,
	Cost:  platform.Cost{Instance: 3 * time.Second},
	// image=PROFILE: the run gives the instances that image (an option
	// the plan did not read was overridden by its --image default)
	Image: func(o platform.Options) string { return o.Extra["image"] },
	// this host's pods on the cluster and what the local cluster's
	// runtimes left when it died, for 'isobench clean' (sweep.go)
	Sweep: Sweep,
}

// Platform is the k8s platform.
type Platform struct {
	env        platform.Env
	opts       platform.Options
	kubeconfig string
	c          *client
	cfgErr     error
	session    string
	pending    time.Duration // how long a pod may stay Pending

	imageMu sync.Mutex
	refs    map[string]string // profile → imported image ref

	kubeletMu   sync.Mutex // footprint.go: the node's kubelet, found once
	kubeletPID  int
	kubeletRoot string
}

// New makes a k8s platform. It reads the kubeconfig but does not contact
// the cluster; Available does.
func New(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
	return NewPlatform(o, env)
}

// NewPlatform is New with the concrete type.
func NewPlatform(o platform.Options, env platform.Env) (*Platform, error) {
	r := make([]byte, 6)
	if _, err := rand.Read(r); err != nil {
		return nil, fmt.Errorf("k8s: %w", err)
	}
	p := &Platform{env: env, opts: o, session: hex.EncodeToString(r), refs: map[string]string{}, pending: DefaultPending}
	if v := o.Extra["pending"]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("k8s: pending=%q must be a positive duration (e.g. 90s, 3m)", v)
		}
		p.pending = d
	}
	home, _ := os.UserHomeDir()
	p.kubeconfig, p.cfgErr = kubeconfigPath(o.Extra["kubeconfig"], os.Getenv("KUBECONFIG"), home)
	if p.cfgErr == nil {
		var ep endpoint
		ep, p.cfgErr = loadKubeconfig(p.kubeconfig)
		if p.cfgErr == nil {
			if ns := o.Extra["namespace"]; ns != "" {
				ep.Namespace = ns
			}
			p.c = newClient(ep)
		}
	}
	return p, nil
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "k8s" }

func (p *Platform) log() io.Writer {
	if p.env.Log == nil {
		return io.Discard
	}
	return p.env.Log
}

func (p *Platform) ns() string { return p.c.ep.Namespace }

func (p *Platform) profile(s platform.Spec) string {
	if s.Image != "" {
		return s.Image
	}
	if v := s.Extra["image"]; v != "" {
		return v
	}
	if v := p.opts.Extra["image"]; v != "" {
		return v
	}
	return image.Minimal
}

func (p *Platform) opt(s platform.Spec, k string) string {
	if v := s.Extra[k]; v != "" {
		return v
	}
	return p.opts.Extra[k]
}

// builtBin is where scripts/build-k8s.sh links the binaries it built.
const builtBin = "/var/cache/isobench/k8s/bin/current"

// startHint says how to get a cluster: start the local one when its
// binaries are built, else build them first (what `isobench doctor` shows).
func startHint() string {
	if fileExists(builtBin+"/kubelet") && fileExists(builtBin+"/runc") {
		return "start the local single-node cluster with scripts/start-k8s.sh (as root; its binaries are built in " + builtBin + "), " +
			"or point kubeconfig=/$KUBECONFIG at a cluster"
	}
	return "build the local single-node cluster with scripts/build-k8s.sh (as root: it installs the Debian packages it needs; Go 1.26; " +
		"21.5 CPU-minutes cold: about 11 min on an idle 2-core host, 33 min at load average 12; cached in " + builtBin + ") " +
		"and start it with scripts/start-k8s.sh (as root), or point kubeconfig=/$KUBECONFIG at a cluster"
}

// Version asks the apiserver for its version.
func (p *Platform) Version(ctx context.Context) (string, error) {
	if p.cfgErr != nil {
		return "", p.cfgErr
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := p.c.do(ctx, http.MethodGet, "/version", nil, nil, &v); err != nil {
		return "", fmt.Errorf("k8s: apiserver %s not reachable (kubeconfig %s): %w; %s", p.c.ep.Server, p.kubeconfig, err, startHint())
	}
	return v.GitVersion, nil
}

// RuntimeClasses lists the cluster's RuntimeClasses as name → handler.
func (p *Platform) RuntimeClasses(ctx context.Context) (map[string]string, error) {
	var l struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
			Handler  string     `json:"handler"`
		} `json:"items"`
	}
	if err := p.c.do(ctx, http.MethodGet, "/apis/node.k8s.io/v1/runtimeclasses", nil, nil, &l); err != nil {
		return nil, fmt.Errorf("k8s: listing RuntimeClasses: %w", err)
	}
	m := map[string]string{}
	for _, it := range l.Items {
		m[it.Metadata.Name] = it.Handler
	}
	return m, nil
}

// Available implements platform.Platform.
func (p *Platform) Available(ctx context.Context) error {
	if _, err := p.Version(ctx); err != nil {
		return err
	}
	if rc := p.opts.Extra["runtime"]; rc != "" {
		classes, err := p.RuntimeClasses(ctx)
		if err != nil {
			return err
		}
		if _, ok := classes[rc]; !ok {
			var have []string
			for k := range classes {
				have = append(have, k)
			}
			sort.Strings(have)
			return fmt.Errorf("k8s: the cluster has no RuntimeClass %q (it has: %s); scripts/start-k8s.sh creates runc and gvisor", rc, strings.Join(have, ", "))
		}
	}
	if _, err := (image.Builder{AgentBinary: p.env.AgentBinary}).Digest(p.profile(platform.Spec{})); err != nil {
		return fmt.Errorf("k8s: cannot build the image: %w", err)
	}
	return nil
}

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := map[string]string{}
	v, err := p.Version(ctx)
	if err != nil {
		f["error"] = err.Error()
		return f
	}
	f["k8s_version"] = v
	f["k8s_server"] = p.c.ep.Server
	f["k8s_namespace"] = p.ns()
	f["kubeconfig"] = p.kubeconfig
	if classes, err := p.RuntimeClasses(ctx); err == nil {
		// what isobench doctor shows: the classes a run can name
		var all []string
		for k, h := range classes {
			all = append(all, k+"="+h)
		}
		sort.Strings(all)
		f["runtime_classes"] = strings.Join(all, ",")
		if rc := p.opts.Extra["runtime"]; rc != "" {
			f["runtime_class"] = rc
			f["runtime_handler"] = classes[rc]
		}
	}
	if n := p.opts.Extra["node"]; n != "" {
		f["node"] = n
	}
	var nodes struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
			Status   struct {
				NodeInfo struct {
					KubeletVersion          string `json:"kubeletVersion"`
					ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
					KernelVersion           string `json:"kernelVersion"`
				} `json:"nodeInfo"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := p.c.do(ctx, http.MethodGet, "/api/v1/nodes", nil, nil, &nodes); err == nil {
		f["k8s_nodes"] = fmt.Sprint(len(nodes.Items))
		for _, n := range nodes.Items {
			if p.opts.Extra["node"] == "" || n.Metadata.Name == p.opts.Extra["node"] {
				f["kubelet_version"] = n.Status.NodeInfo.KubeletVersion
				f["container_runtime"] = n.Status.NodeInfo.ContainerRuntimeVersion
				f["kernel"] = n.Status.NodeInfo.KernelVersion
				break
			}
		}
	}
	return f
}

// Close implements platform.Platform: it removes every pod this platform
// value created that is still there (an interrupted Create's too).
func (p *Platform) Close(ctx context.Context) error {
	if p.c == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	err := p.deleteByLabel(cctx, p.ns(), platform.Label+"=1,"+sessionLabel+"="+p.session)
	if tr, ok := p.c.http.Transport.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
	return err
}

// deleteByLabel removes the pods of namespace ns that match selector.
func (p *Platform) deleteByLabel(ctx context.Context, ns, selector string) error {
	q := url.Values{}
	q.Set("labelSelector", selector)
	q.Set("gracePeriodSeconds", "1")
	if err := p.c.do(ctx, http.MethodDelete, "/api/v1/namespaces/"+url.PathEscape(ns)+"/pods", q, nil, nil); err != nil && !isNotFound(err) {
		return fmt.Errorf("k8s: deleting pods %s: %w", selector, err)
	}
	return nil
}

// DeletePods removes the pods labelled isobench=1 (and matching the extra
// selector, e.g. "isobench.run=TOKEN") from the namespace of the cluster
// kubeconfig names ("" picks the usual places): what an interrupted run
// left.
func DeletePods(ctx context.Context, kubeconfig, namespace, selector string) error {
	o := platform.Options{Extra: map[string]string{"kubeconfig": kubeconfig, "namespace": namespace}}
	p, err := NewPlatform(o, platform.Env{})
	if err != nil {
		return err
	}
	if p.cfgErr != nil {
		return p.cfgErr
	}
	sel := platform.Label + "=1"
	if selector != "" {
		sel += "," + selector
	}
	return p.deleteByLabel(ctx, p.ns(), sel)
}

// Create implements platform.Platform.
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	if p.cfgErr != nil {
		return nil, p.cfgErr
	}
	name, err := podName(s.Name)
	if err != nil {
		return nil, err
	}
	o := podOpts{Name: name, Namespace: p.ns(), RuntimeClass: p.opt(s, "runtime"), Node: p.opt(s, "node"), Session: p.session, Host: thisHost()}
	// validate the spec before any image work
	if _, err := buildPod(s, o); err != nil {
		return nil, err
	}
	if s.Network == platform.NetHost && o.RuntimeClass != "" {
		// gVisor's netstack (runsc's default network mode) serves the pod's
		// sockets itself: with hostNetwork nothing listens on the node
		classes, err := p.RuntimeClasses(ctx)
		if err != nil {
			return nil, err
		}
		if h := classes[o.RuntimeClass]; h == "runsc" || strings.HasPrefix(h, "runsc-") || strings.HasPrefix(h, "gvisor") {
			return nil, fmt.Errorf("k8s: network=host with RuntimeClass %s (handler %s): %w (gVisor's own network stack serves the pod's sockets, not the node's)", o.RuntimeClass, h, platform.ErrUnsupported)
		}
	}
	if o.Image, err = p.image(ctx, p.profile(s)); err != nil {
		return nil, err
	}
	pd, err := buildPod(s, o)
	if err != nil {
		return nil, err
	}
	in := &Instance{p: p, name: name, network: s.Network, storage: s.Storage, image: o.Image, runtimeClass: o.RuntimeClass, gone: make(chan struct{})}
	if in.network == "" {
		in.network = platform.NetBridge
	}
	if in.storage == "" {
		in.storage = platform.StorageRootfs
	}
	defer func() {
		if err != nil {
			in.Close(ctx)
		}
	}()
	var created pod
	if err := p.c.do(ctx, http.MethodPost, "/api/v1/namespaces/"+url.PathEscape(p.ns())+"/pods", nil, pd, &created); err != nil {
		return nil, fmt.Errorf("k8s: creating pod %s: %w", name, err)
	}
	in.uid = created.Metadata.UID
	if s.Phase != nil {
		s.Phase("created", time.Now())
	}
	last, err := p.waitStarted(ctx, name, in.uid, p.pending)
	if err != nil {
		return nil, fmt.Errorf("k8s: starting pod %s: %w", name, err)
	}
	in.node = last.Spec.NodeName
	in.podIP = last.Status.PodIP
	in.hostIP = last.Status.HostIP
	in.qos = last.Status.QOSClass
	if s.Phase != nil {
		s.Phase("started", time.Now())
	}
	if len(s.Main) > 0 && s.MainStdout != nil {
		in.logDone = make(chan struct{})
		go in.followLog(s.MainStdout)
	}
	return in, nil
}

// errPendingBound ends the wait for a pod that stayed Pending too long.
var errPendingBound = errors.New("the pod's pending bound passed")

// waitStarted waits until the pod's container runs (or already ran, for a
// short main) and returns the pod as it was then. It fails with a
// PodError when Kubernetes will not run the pod: a fatal container state,
// a pod the kubelet failed, a scheduler that finds no node for a pod
// asking more than any node has, or a pod still not running after bound.
func (p *Platform) waitStarted(ctx context.Context, name, uid string, bound time.Duration) (*pod, error) {
	sctx, cancel := context.WithTimeoutCause(ctx, bound, errPendingBound)
	defer cancel()
	var last *pod
	fitChecked := ""
	err := p.watchPod(sctx, name, func(pd *pod) (bool, error) {
		if pd == nil {
			return true, errors.New("the pod was deleted")
		}
		last = pd
		if pe := pd.startError(); pe != nil {
			return true, p.withEvent(ctx, pe, uid)
		}
		if msg, ok := pd.unschedulable(); ok && msg != fitChecked {
			// asked again whenever the scheduler says something new
			fitChecked = msg
			if why, never := p.neverFits(sctx, pd); never {
				return true, p.withEvent(ctx, &PodError{Pod: name, Reason: "Unschedulable", Message: strings.TrimSpace(msg) + " (" + why + ")"}, uid)
			}
		}
		st := pd.mainState()
		return st != nil && (st.Running != nil || st.Terminated != nil), nil
	})
	if err == nil {
		return last, nil
	}
	if ctx.Err() == nil && errors.Is(context.Cause(sctx), errPendingBound) {
		// the bound passed: say why in Kubernetes' words, from the pod as it is now
		gctx, gcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer gcancel()
		var cur pod
		if gerr := p.c.do(gctx, http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(p.ns())+"/pods/"+url.PathEscape(name), nil, nil, &cur); gerr == nil {
			last = &cur
		}
		pe := &PodError{Pod: name, Reason: "Pending", Pending: bound}
		if last != nil {
			pe.Reason, pe.Message = last.pendingReason()
		}
		return nil, p.withEvent(ctx, pe, uid)
	}
	if ctx.Err() != nil && last != nil {
		reason, msg := last.pendingReason()
		err = fmt.Errorf("%w (pod phase %s: %s: %s; last event: %s)", err, last.Status.Phase, reason, msg, p.podEvent(context.WithoutCancel(ctx), name, uid))
	}
	return nil, err
}

// watchPod calls fn with the pod as it changes (nil once it is gone) until
// fn returns true or an error.
func (p *Platform) watchPod(ctx context.Context, name string, fn func(*pod) (bool, error)) error {
	path := "/api/v1/namespaces/" + url.PathEscape(p.ns()) + "/pods"
	for {
		var cur pod
		err := p.c.do(ctx, http.MethodGet, path+"/"+url.PathEscape(name), nil, nil, &cur)
		if isNotFound(err) {
			_, ferr := fn(nil)
			return ferr
		}
		if err != nil {
			return err
		}
		if done, err := fn(&cur); done || err != nil {
			return err
		}
		q := url.Values{}
		q.Set("watch", "1")
		q.Set("fieldSelector", "metadata.name="+name)
		q.Set("resourceVersion", cur.Metadata.ResourceVersion)
		q.Set("timeoutSeconds", "60")
		rc, err := p.c.stream(ctx, http.MethodGet, path, q, nil)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(rc)
		for {
			var ev struct {
				Type   string `json:"type"`
				Object pod    `json:"object"`
			}
			if err := dec.Decode(&ev); err != nil {
				break // the watch ended (timeout, compaction): get and watch again
			}
			var done bool
			var ferr error
			switch ev.Type {
			case "DELETED": // gone: done whatever fn says
				_, ferr = fn(nil)
				done = true
			case "ADDED", "MODIFIED":
				done, ferr = fn(&ev.Object)
			}
			if done || ferr != nil {
				rc.Close()
				return ferr
			}
		}
		rc.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// Instance is one pod.
type Instance struct {
	p            *Platform
	name         string
	uid          string
	network      string
	storage      string
	image        string
	runtimeClass string
	node         string
	podIP        string
	hostIP       string
	qos          string

	logDone chan struct{}
	logErr  error

	closeMu sync.Mutex
	closed  bool
	gone    chan struct{} // closed by Close
}

// ID implements platform.Instance: the pod's name.
func (in *Instance) ID() string { return in.name }

func (in *Instance) podPath() string {
	return "/api/v1/namespaces/" + url.PathEscape(in.p.ns()) + "/pods/" + url.PathEscape(in.name)
}

// followLog copies the main container's log (its stdout: stderr goes to
// a file in the pod) to w until the container ends.
func (in *Instance) followLog(w io.Writer) {
	defer close(in.logDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-in.gone:
			cancel()
		case <-ctx.Done():
		}
	}()
	q := url.Values{}
	q.Set("container", containerName)
	q.Set("follow", "true")
	rc, err := in.p.c.stream(ctx, http.MethodGet, in.podPath()+"/log", q, nil)
	if err != nil {
		in.logErr = err
		return
	}
	defer rc.Close()
	if _, err := io.Copy(w, rc); err != nil && ctx.Err() == nil {
		in.logErr = err
	}
}

func (in *Instance) isClosed() bool {
	in.closeMu.Lock()
	defer in.closeMu.Unlock()
	return in.closed
}

// Exec implements platform.Instance.
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if len(argv) == 0 {
		return errors.New("k8s exec: empty command")
	}
	if in.isClosed() {
		return fmt.Errorf("k8s exec: pod %s is closed", in.name)
	}
	cmd := platform.AgentArgv(argv, image.AgentPath)
	code, err := in.p.c.exec(ctx, in.p.ns(), in.name, containerName, cmd, stdio.Stdin, stdio.Stdout, stdio.Stderr)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("k8s exec %q: %w", strings.Join(argv, " "), ctx.Err())
		}
		if f := in.podFailure(ctx); f != nil {
			// the pod was evicted or its container OOM-killed under the exec
			return fmt.Errorf("k8s exec %q in %s: %w (%w)", strings.Join(argv, " "), in.name, f, err)
		}
		return fmt.Errorf("k8s exec %q in %s: %w", strings.Join(argv, " "), in.name, err)
	}
	if code != 0 {
		ee := &platform.ExitError{Code: code, Argv: argv}
		if code >= 128 {
			// killed, or the runtime lost the process (gVisor's shim says
			// 128 when the OOM killer took the sandbox): Kubernetes' word
			// when the pod went with it and the kubelet has noticed
			if f := in.podFailure(ctx); f != nil {
				return fmt.Errorf("k8s exec in %s: %w (%w)", in.name, ee, f)
			}
		}
		return ee
	}
	return nil
}

// CopyIn implements platform.Instance: the file goes in as the stdin of a
// shell inside the pod (head -c its size, so no stdin EOF is needed).
func (in *Instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	return platform.CopyIn(ctx, in.Exec, "k8s "+in.name, hostPath, guestPath, mode)
}

// isLocalIP says whether ip is an address of one of this host's interfaces.
func isLocalIP(ip string) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.String() == ip {
			return true
		}
	}
	return false
}

// Address implements platform.Instance: the Pod IP; with network=host the
// node's IP, or loopback when the node is this host.
func (in *Instance) Address(ctx context.Context) (string, error) {
	if in.network == platform.NetHost {
		if in.hostIP == "" || isLocalIP(in.hostIP) {
			return "127.0.0.1", nil
		}
		return in.hostIP, nil
	}
	if in.podIP != "" {
		return in.podIP, nil
	}
	var cur pod
	if err := in.p.c.do(ctx, http.MethodGet, in.podPath(), nil, nil, &cur); err != nil {
		return "", fmt.Errorf("k8s: pod %s: %w", in.name, err)
	}
	if cur.Status.PodIP == "" {
		return "", fmt.Errorf("k8s: pod %s has no IP (phase %s)", in.name, cur.Status.Phase)
	}
	in.podIP = cur.Status.PodIP
	return in.podIP, nil
}

// Facts implements platform.Instance.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := map[string]string{
		"network":       in.network,
		"storage":       in.storage,
		"image":         in.image,
		"name":          in.name,
		"pod":           in.name,
		"node":          in.node,
		"runtime_class": in.runtimeClass,
		"pod_ip":        in.podIP,
		"qos_class":     in.qos,
		"pod_uid":       in.uid,
	}
	var cur pod
	if err := in.p.c.do(ctx, http.MethodGet, in.podPath(), nil, nil, &cur); err != nil {
		f["error"] = err.Error()
		return f
	}
	if len(cur.Spec.Containers) > 0 {
		r := cur.Spec.Containers[0].Resources
		f["cpu_limit"] = r.Limits["cpu"]
		f["memory_limit"] = r.Limits["memory"]
	}
	if in.runtimeClass != "" {
		if classes, err := in.p.RuntimeClasses(ctx); err == nil {
			f["runtime_handler"] = classes[in.runtimeClass]
		}
	} else {
		f["runtime_class"] = "(default)"
	}
	for _, cs := range cur.Status.ContainerStatuses {
		if cs.Name == containerName {
			f["container_id"] = cs.ContainerID
		}
	}
	return f
}

// Wait implements platform.Instance: the main container's exit status,
// after all of its stdout was delivered; for an idle pod, when it ends or
// is closed.
func (in *Instance) Wait(ctx context.Context) (int, error) {
	code := -1
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-in.gone:
			cancel()
		case <-wctx.Done():
		}
	}()
	var failed *PodError
	err := in.p.watchPod(wctx, in.name, func(pd *pod) (bool, error) {
		if pd == nil {
			return true, nil
		}
		if pd.Metadata.UID != in.uid {
			return true, nil // a new pod of the same name: ours is gone
		}
		st := pd.mainState()
		if st != nil && st.Terminated != nil {
			code = st.Terminated.ExitCode
		}
		if failed = pd.failure(); failed != nil {
			return true, nil // evicted, OOM-killed: no exit status of its own
		}
		return st != nil && st.Terminated != nil, nil
	})
	select {
	case <-in.gone:
		return code, nil
	default:
	}
	if err != nil {
		return code, fmt.Errorf("k8s wait %s: %w", in.name, err)
	}
	if failed != nil {
		return code, in.p.withEvent(ctx, failed, in.uid)
	}
	if in.logDone != nil {
		select {
		case <-in.logDone:
			if in.logErr != nil {
				return code, fmt.Errorf("k8s %s: main output: %w", in.name, in.logErr)
			}
		case <-ctx.Done():
			return code, ctx.Err()
		}
	}
	return code, nil
}

// Close implements platform.Instance: it deletes the pod and waits until
// the kubelet has stopped it and the apiserver forgot it. It works with a
// cancelled ctx too.
func (in *Instance) Close(ctx context.Context) error {
	in.closeMu.Lock()
	defer in.closeMu.Unlock()
	if in.closed {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	q := url.Values{}
	q.Set("gracePeriodSeconds", "1")
	err := in.p.c.do(cctx, http.MethodDelete, in.podPath(), q, nil, nil)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("k8s: deleting pod %s: %w", in.name, err)
	}
	if err == nil {
		werr := in.p.watchPod(cctx, in.name, func(pd *pod) (bool, error) {
			return pd == nil || (in.uid != "" && pd.Metadata.UID != in.uid), nil
		})
		if werr != nil {
			return fmt.Errorf("k8s: waiting for pod %s to go: %w", in.name, werr)
		}
	}
	in.closed = true
	close(in.gone)
	if in.logDone != nil {
		<-in.logDone
	}
	return nil
}
