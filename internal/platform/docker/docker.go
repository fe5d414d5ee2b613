// Package docker is the "docker" platform: instances are containers created
// through the Docker Engine API, spoken over dockerd's unix socket with the
// standard library only. Images are never pulled: the profile's root file
// system (internal/image) is imported as isobench/<profile>:<digest>.
//
// Options: the common cpus, memory, network (bridge, nat, host, none) and
// storage (rootfs: the container's overlay; volume: a host directory
// bind-mounted at guestenv.ScratchDir), plus runtime (an OCI runtime
// registered with dockerd, e.g. runc or runsc) and image (profile,
// default minimal). network=nat is Docker's bridge with the spec's ports
// published on 127.0.0.1 (docker run -p 127.0.0.1::PORT): the host reaches
// them through dockerd's NAT, which is docker-proxy unless dockerd runs with
// --userland-proxy=false; the instance's facts say which.
package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/blockdev"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/local"
	"github.com/isobench/isobench/internal/spec"
)

// Factory registers the docker platform.
var Factory = platform.Factory{
	Name: "docker",
	Help: "Docker Engine containers (API over the unix socket; DOCKER_HOST=unix://PATH honoured). " +
		"Options: cpus, memory, network=bridge|nat|host|none, storage=rootfs|volume, runtime=NAME (e.g. runc, runsc), image=PROFILE, " +
		"read-iops=N, read-bps=SIZE (--device-read-iops/-bps on the disk of Docker's data root, or of the volume)",
	Extra: append([]string{"runtime", "image"}, blockdev.ThrottleKeys...),
	New:   New,
	Cost:  platform.Cost{Instance: 700 * time.Millisecond},
	// image=PROFILE: the run gives the instances that image (an option
	// the plan did not read was overridden by its --image default)
	Image: func(o platform.Options) string { return o.Extra["image"] },
	// its containers by label
	Sweep: Sweep,
}

// Platform is the docker platform.
type Platform struct {
	c       *client
	env     platform.Env
	opts    platform.Options
	imageMu sync.Mutex        // one image build at a time; guards refs
	refs    map[string]string // profile → image ref ensured by this platform
}

// New makes a docker platform. It does not contact the daemon; Available
// does.
func New(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
	return NewPlatform(o, env)
}

// NewPlatform is New with the concrete type, for callers that need
// EnsureImage.
func NewPlatform(o platform.Options, env platform.Env) (*Platform, error) {
	sock, err := socketPath(os.Getenv("DOCKER_HOST"))
	if err != nil {
		return nil, err
	}
	if _, err := blockdev.ParseThrottle(o.Extra, spec.ParseSize); err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	return &Platform{c: newClient(sock), env: env, opts: o}, nil
}

// socketPath turns a DOCKER_HOST value into a unix socket path.
func socketPath(dockerHost string) (string, error) {
	if dockerHost == "" {
		return DefaultSocket, nil
	}
	if p, ok := strings.CutPrefix(dockerHost, "unix://"); ok && p != "" {
		return p, nil
	}
	return "", fmt.Errorf("docker: DOCKER_HOST=%q: only unix:// sockets are supported; unset it to use %s", dockerHost, DefaultSocket)
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "docker" }

func (p *Platform) log() io.Writer {
	if p.env.Log == nil {
		return io.Discard
	}
	return p.env.Log
}

// runtime is the OCI runtime asked for ("" is the daemon's default).
func (p *Platform) runtime(s platform.Spec) string {
	if r := s.Extra["runtime"]; r != "" {
		return r
	}
	return p.opts.Extra["runtime"]
}

// profile is the image profile asked for.
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

// Available implements platform.Platform.
func (p *Platform) Available(ctx context.Context) error {
	if err := p.ping(ctx); err != nil {
		return err
	}
	if _, err := p.c.serverVersion(ctx); err != nil {
		return err
	}
	if rt := p.opts.Extra["runtime"]; rt != "" {
		info, err := p.info(ctx)
		if err != nil {
			return err
		}
		if _, ok := info.Runtimes[rt]; !ok {
			var have []string
			for k := range info.Runtimes {
				have = append(have, k)
			}
			sort.Strings(have)
			return fmt.Errorf("docker: runtime %q is not registered with dockerd (it has: %s); add it under \"runtimes\" in /etc/docker/daemon.json and restart dockerd", rt, strings.Join(have, ", "))
		}
	}
	if _, err := (image.Builder{AgentBinary: p.env.AgentBinary}).Digest(p.profile(platform.Spec{})); err != nil {
		return fmt.Errorf("docker: cannot build the image: %w", err)
	}
	return nil
}

// ping checks that the daemon answers, saying what to do when it does not.
func (p *Platform) ping(ctx context.Context) error {
	if err := p.c.doRaw(ctx, http.MethodGet, "/_ping", nil, nil, nil); err != nil {
		return fmt.Errorf("docker engine not reachable at %s (%v): start dockerd: dockerd & (or systemctl start docker); install with apt-get install docker.io", p.c.socket, err)
	}
	return nil
}

// dockerInfo is the part of GET /info used here.
type dockerInfo struct {
	ServerVersion   string
	Driver          string
	CgroupDriver    string
	CgroupVersion   string
	DefaultRuntime  string
	KernelVersion   string
	OperatingSystem string
	NCPU            int
	MemTotal        int64
	SecurityOptions []string
	Runtimes        map[string]any
	DockerRootDir   string
}

func (p *Platform) info(ctx context.Context) (dockerInfo, error) {
	var info dockerInfo
	if err := p.c.do(ctx, http.MethodGet, "/info", nil, nil, &info); err != nil {
		return info, fmt.Errorf("docker info: %w", err)
	}
	return info, nil
}

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := map[string]string{}
	info, err := p.info(ctx)
	if err != nil {
		f["error"] = err.Error()
		return f
	}
	api, _ := p.c.apiVersion(ctx)
	rt := p.opts.Extra["runtime"]
	if rt == "" {
		rt = info.DefaultRuntime
	}
	f["docker_version"] = info.ServerVersion
	f["docker_api_version"] = api
	f["storage_driver"] = info.Driver
	f["cgroup_driver"] = info.CgroupDriver
	f["cgroup_version"] = info.CgroupVersion
	f["runtime"] = rt
	f["kernel"] = info.KernelVersion
	f["docker_os"] = info.OperatingSystem
	f["docker_ncpu"] = strconv.Itoa(info.NCPU)
	f["docker_mem_total"] = strconv.FormatInt(info.MemTotal, 10)
	f["security_options"] = strings.Join(info.SecurityOptions, ",")
	return f
}

// Close implements platform.Platform.
func (p *Platform) Close(ctx context.Context) error {
	if tr, ok := p.c.http.Transport.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
	return nil
}

// containerConfig is the body of POST /containers/create.
type containerConfig struct {
	Image        string
	Cmd          []string
	Env          []string
	Labels       map[string]string
	AttachStdout bool
	AttachStderr bool
	ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
	HostConfig   hostConfig
}

// throttleDevice is one of HostConfig's per-device I/O limits.
type throttleDevice struct {
	Path string
	Rate int64
}

// throttle gives cc the platform's read limits (read-iops, read-bps) on
// the disk that holds the container's scratch: the volume's, or Docker's
// data root's for the container's own file system.
func (p *Platform) throttle(ctx context.Context, cc *containerConfig, volDir string) error {
	t, err := blockdev.ParseThrottle(p.opts.Extra, spec.ParseSize)
	if err != nil || !t.Set() {
		return err
	}
	where := volDir
	if where == "" {
		info, err := p.info(ctx)
		if err != nil {
			return err
		}
		where = info.DockerRootDir
	}
	d, err := blockdev.Of(where)
	if err != nil {
		return fmt.Errorf("docker: read-iops/read-bps: %s: %w", where, err)
	}
	if t.ReadIOPS > 0 {
		cc.HostConfig.BlkioDeviceReadIOps = []throttleDevice{{Path: d.Node, Rate: t.ReadIOPS}}
	}
	if t.ReadBPS > 0 {
		cc.HostConfig.BlkioDeviceReadBps = []throttleDevice{{Path: d.Node, Rate: t.ReadBPS}}
	}
	return nil
}

// portBinding is where Docker publishes a container port on the host.
type portBinding struct {
	HostIP   string `json:"HostIp"`
	HostPort string `json:"HostPort"`
}

type hostConfig struct {
	NanoCpus    int64    `json:"NanoCpus,omitempty"`
	Memory      int64    `json:"Memory,omitempty"`
	MemorySwap  int64    `json:"MemorySwap,omitempty"`
	NetworkMode string   `json:"NetworkMode"`
	Binds       []string `json:"Binds,omitempty"`
	Runtime     string   `json:"Runtime,omitempty"`

	BlkioDeviceReadIOps []throttleDevice `json:"BlkioDeviceReadIOps,omitempty"`
	BlkioDeviceReadBps  []throttleDevice `json:"BlkioDeviceReadBps,omitempty"`

	PortBindings map[string][]portBinding `json:"PortBindings,omitempty"`
}

// networkMode maps the spec's network to Docker's NetworkMode (nat is the
// bridge with the spec's ports published).
func networkMode(n string) (string, error) {
	if mode, ok := local.EngineNetwork(n); ok {
		return mode, nil
	}
	return "", fmt.Errorf("docker: network %q must be bridge, nat, host or none", n)
}

// containerName makes a valid, prefixed container name.
func containerName(name string) (string, error) {
	if name == "" {
		b := make([]byte, 6)
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("docker: random name: %w", err)
		}
		name = hex.EncodeToString(b)
	}
	return "isobench-" + local.EngineName(name), nil
}

// createConfig builds the container's configuration from the spec.
// volDir, when not empty, is bind-mounted at guestenv.ScratchDir.
func createConfig(s platform.Spec, ref, runtime, volDir string) (containerConfig, error) {
	mode, err := networkMode(s.Network)
	if err != nil {
		return containerConfig{}, err
	}
	if s.CPUs < 0 || s.Memory < 0 {
		return containerConfig{}, errors.New("docker: negative cpus or memory")
	}
	cmd := []string{image.AgentPath, "agent", "idle"}
	if len(s.Main) > 0 {
		cmd = local.GuestArgv(s.Main)
	}
	labels := map[string]string{}
	for k, v := range s.Labels {
		labels[k] = v
	}
	labels[platform.Label] = "1"
	if s.Name != "" {
		labels[platform.Label+".name"] = s.Name
	}
	cc := containerConfig{
		Image:  ref,
		Cmd:    cmd,
		Env:    []string{guestenv.ScratchEnv + "=" + guestenv.ScratchDir},
		Labels: labels,
		HostConfig: hostConfig{
			NanoCpus:    int64(s.CPUs * 1e9),
			Memory:      s.Memory,
			NetworkMode: mode,
			Runtime:     runtime,
		},
	}
	if s.Memory > 0 {
		cc.HostConfig.MemorySwap = s.Memory
	}
	if volDir != "" {
		cc.HostConfig.Binds = []string{volDir + ":" + guestenv.ScratchDir}
	}
	if s.Network == platform.NetNAT {
		// published on the host's loopback only, on a port Docker picks
		// (or, SamePorts, on the port's own number)
		cc.ExposedPorts = map[string]struct{}{}
		cc.HostConfig.PortBindings = map[string][]portBinding{}
		for _, port := range s.Ports {
			if port < 1 || port > 65535 {
				return containerConfig{}, fmt.Errorf("docker: port %d out of range", port)
			}
			k := strconv.Itoa(port) + "/tcp"
			cc.ExposedPorts[k] = struct{}{}
			b := portBinding{HostIP: "127.0.0.1"}
			if s.SamePorts {
				b.HostPort = strconv.Itoa(port)
			}
			cc.HostConfig.PortBindings[k] = []portBinding{b}
		}
	}
	return cc, nil
}

// Create implements platform.Platform.
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	switch s.Storage {
	case platform.StorageRootfs, platform.StorageVolume, "":
	default:
		return nil, fmt.Errorf("docker: storage %q must be rootfs or volume", s.Storage)
	}
	if _, err := networkMode(s.Network); err != nil {
		return nil, err
	}
	name, err := containerName(s.Name)
	if err != nil {
		return nil, err
	}
	ref, err := p.image(ctx, p.profile(s))
	if err != nil {
		return nil, err
	}
	in := &Instance{p: p, name: name, network: s.Network, storage: s.Storage, image: ref, runtime: p.runtime(s)}
	if in.network == "" {
		in.network = platform.NetBridge
	}
	if in.storage == "" {
		in.storage = platform.StorageRootfs
	}
	maybeCreated := false // the create request may have succeeded without us hearing
	defer func() {
		if err == nil {
			return
		}
		if in.id == "" && maybeCreated {
			// the request was cut off (Ctrl-C): dockerd goes on creating
			// the container after the client has gone, so a removal sent
			// at once may find nothing and the container appear a moment
			// later; ask again for two seconds while it is not there
			q := url.Values{}
			q.Set("force", "1")
			q.Set("v", "1")
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			for try := 0; try < 10; try++ {
				if err := p.c.do(cctx, http.MethodDelete, "/containers/"+name, q, nil, nil); !isNotFound(err) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			cancel()
		}
		in.Close(ctx)
	}()
	if s.Storage == platform.StorageVolume {
		// private (0700, made fresh): the container's root is the
		// host's root, which owns it
		if err := local.PrivateDir(p.statePath("volumes")); err != nil {
			return nil, fmt.Errorf("docker: volume directory: %w", err)
		}
		if err := local.FreshDir(p.statePath("volumes", name)); err != nil {
			return nil, fmt.Errorf("docker: volume directory: %w", err)
		}
		in.volDir = p.statePath("volumes", name)
	}
	cc, err := createConfig(s, ref, in.runtime, in.volDir)
	if err != nil {
		return nil, err
	}
	if err := p.throttle(ctx, &cc, in.volDir); err != nil {
		return nil, err
	}
	var created struct {
		ID       string `json:"Id"`
		Warnings []string
	}
	q := url.Values{}
	q.Set("name", name)
	err = p.c.do(ctx, http.MethodPost, "/containers/create", q, cc, &created)
	if isNotFound(err) {
		// the cached image was removed behind our back: import it again
		p.forgetImage(in.image)
		if cc.Image, err = p.image(ctx, p.profile(s)); err != nil {
			return nil, err
		}
		in.image = cc.Image
		err = p.c.do(ctx, http.MethodPost, "/containers/create", q, cc, &created)
	}
	if err != nil {
		var ae *apiError
		maybeCreated = !errors.As(err, &ae)
		return nil, fmt.Errorf("docker create %s: %w", name, err)
	}
	in.id = created.ID
	if s.Phase != nil {
		s.Phase("created", time.Now())
	}
	for _, w := range created.Warnings {
		fmt.Fprintf(p.log(), "docker: %s: %s\n", name, w)
	}
	if len(s.Main) > 0 && s.MainStdout != nil {
		if err := in.attach(ctx, s.MainStdout); err != nil {
			return nil, err
		}
	}
	if err := p.c.do(ctx, http.MethodPost, "/containers/"+in.id+"/start", nil, nil, nil); err != nil {
		return nil, fmt.Errorf("docker start %s: %w", name, err)
	}
	if s.Phase != nil {
		s.Phase("started", time.Now())
	}
	return in, nil
}

// Instance is one docker container.
type Instance struct {
	p       *Platform
	id      string
	name    string
	network string
	storage string
	image   string
	runtime string
	volDir  string

	attached   *hijacked
	attachDone chan struct{}
	attachErr  error

	closeMu sync.Mutex
	closed  bool
}

// attach copies the container's stdout to w from before it starts.
func (in *Instance) attach(ctx context.Context, w io.Writer) error {
	q := url.Values{}
	q.Set("stream", "1")
	q.Set("stdout", "1")
	h, err := in.p.c.hijack(ctx, http.MethodPost, "/containers/"+in.id+"/attach", q, nil)
	if err != nil {
		return fmt.Errorf("docker attach %s: %w", in.name, err)
	}
	in.attached = h
	in.attachDone = make(chan struct{})
	go func() {
		defer close(in.attachDone)
		in.attachErr = demux(h, w, nil)
	}()
	return nil
}

// ID implements platform.Instance.
func (in *Instance) ID() string { return in.id }

// Name is the container's name.
func (in *Instance) Name() string { return in.name }

// execInspect is the part of GET /exec/{id}/json used here.
type execInspect struct {
	Running  bool
	ExitCode *int
	Pid      int
}

// Exec implements platform.Instance.
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if len(argv) == 0 {
		return errors.New("docker exec: empty command")
	}
	cmd := local.GuestArgv(argv)
	body := map[string]any{
		"AttachStdin":  stdio.Stdin != nil,
		"AttachStdout": true,
		"AttachStderr": true,
		"Tty":          false,
		"Cmd":          cmd,
		"Env":          []string{guestenv.ScratchEnv + "=" + guestenv.ScratchDir},
	}
	var created struct {
		ID string `json:"Id"`
	}
	if err := in.p.c.do(ctx, http.MethodPost, "/containers/"+in.id+"/exec", nil, body, &created); err != nil {
		return fmt.Errorf("docker exec %q: %w", strings.Join(argv, " "), err)
	}
	h, err := in.p.c.hijack(ctx, http.MethodPost, "/exec/"+created.ID+"/start", nil, map[string]bool{"Detach": false, "Tty": false})
	if err != nil {
		return fmt.Errorf("docker exec %q: %w", strings.Join(argv, " "), err)
	}
	stop := context.AfterFunc(ctx, func() { h.Close() })
	defer stop()
	if stdio.Stdin != nil {
		go func() {
			io.Copy(h, stdio.Stdin)
			h.CloseWrite()
		}()
	}
	derr := demux(h, stdio.Stdout, stdio.Stderr)
	h.Close()
	if ctx.Err() != nil {
		in.killExec(ctx, created.ID)
		return fmt.Errorf("docker exec %q: %w", strings.Join(argv, " "), ctx.Err())
	}
	if derr != nil {
		return fmt.Errorf("docker exec %q: %w", strings.Join(argv, " "), derr)
	}
	code, err := in.execExitCode(ctx, created.ID)
	if err != nil {
		return fmt.Errorf("docker exec %q: %w", strings.Join(argv, " "), err)
	}
	if code != 0 {
		return &platform.ExitError{Code: code, Argv: argv}
	}
	return nil
}

// execExitCode waits for the exec to be reported finished; the stream can
// end a moment before the daemon records the exit.
func (in *Instance) execExitCode(ctx context.Context, execID string) (int, error) {
	delay := time.Millisecond
	for {
		var ei execInspect
		if err := in.p.c.do(ctx, http.MethodGet, "/exec/"+execID+"/json", nil, nil, &ei); err != nil {
			return 0, err
		}
		if !ei.Running && ei.ExitCode != nil {
			return *ei.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 100*time.Millisecond)
	}
}

// killExec ends a cancelled exec's process. Docker has no API for that;
// with runc the exec's Pid is a host pid and we can signal it. With other
// runtimes the process is left to die with the container.
func (in *Instance) killExec(ctx context.Context, execID string) {
	switch in.runtime {
	case "", "runc", "io.containerd.runc.v2":
	default:
		return
	}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var ei execInspect
	if err := in.p.c.do(kctx, http.MethodGet, "/exec/"+execID+"/json", nil, nil, &ei); err != nil {
		return
	}
	if ei.Running && ei.Pid > 0 {
		syscall.Kill(ei.Pid, syscall.SIGKILL)
	}
}

// CopyIn implements platform.Instance. Missing parent directories are
// created by the daemon.
func (in *Instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	if !strings.HasPrefix(guestPath, "/") {
		return fmt.Errorf("docker copy: guest path %q must be absolute", guestPath)
	}
	name := strings.TrimPrefix(filepath.Clean(guestPath), "/")
	if name == "" {
		return fmt.Errorf("docker copy: guest path %q names no file", guestPath)
	}
	f, err := os.Open(hostPath)
	if err != nil {
		return fmt.Errorf("docker copy: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("docker copy: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("docker copy: %s is not a regular file", hostPath)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeOneFileTar(pw, name, int64(mode&0o7777), st.Size(), st.ModTime(), f)) }()
	defer pr.Close()
	q := url.Values{}
	q.Set("path", "/")
	if err := in.p.c.do(ctx, http.MethodPut, "/containers/"+in.id+"/archive", q, io.Reader(pr), nil); err != nil {
		return fmt.Errorf("docker copy %s to %s:%s: %w", hostPath, in.name, guestPath, err)
	}
	return nil
}

// containerInspect is the part of GET /containers/{id}/json used here.
type containerInspect struct {
	State struct {
		Running  bool
		ExitCode int
	}
	HostConfig struct {
		NanoCpus            int64
		Memory              int64
		MemorySwap          int64
		NetworkMode         string
		Runtime             string
		BlkioDeviceReadIOps []throttleDevice
		BlkioDeviceReadBps  []throttleDevice
	}
	NetworkSettings struct {
		IPAddress string
		Networks  map[string]struct{ IPAddress string }
		Ports     map[string][]portBinding
	}
}

func (in *Instance) inspect(ctx context.Context) (containerInspect, error) {
	var ci containerInspect
	if err := in.p.c.do(ctx, http.MethodGet, "/containers/"+in.id+"/json", nil, nil, &ci); err != nil {
		return ci, fmt.Errorf("docker inspect %s: %w", in.name, err)
	}
	return ci, nil
}

// Address implements platform.Instance.
func (in *Instance) Address(ctx context.Context) (string, error) {
	switch in.network {
	case platform.NetNone:
		return "", nil
	case platform.NetHost:
		return "127.0.0.1", nil
	}
	ci, err := in.inspect(ctx)
	if err != nil {
		return "", err
	}
	if ip := ci.NetworkSettings.IPAddress; ip != "" {
		return ip, nil
	}
	names := make([]string, 0, len(ci.NetworkSettings.Networks))
	for k := range ci.NetworkSettings.Networks {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if ip := ci.NetworkSettings.Networks[k].IPAddress; ip != "" {
			return ip, nil
		}
	}
	return "", fmt.Errorf("docker: container %s has no IP address (is it running?)", in.name)
}

// natPath says how connections to a published loopback port reach the
// container: through a docker-proxy process (dockerd's userland-proxy, the
// default), or through the kernel's DNAT rules alone. It looks for a
// docker-proxy serving this container on the host's /proc, so it is only
// meaningful for a local engine.
func natPath(ci containerInspect) string {
	ips := map[string]bool{ci.NetworkSettings.IPAddress: true}
	for _, n := range ci.NetworkSettings.Networks {
		ips[n.IPAddress] = true
	}
	delete(ips, "")
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte("docker-proxy")) {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-container-ip" && ips[args[i+1]] {
				return "docker-proxy"
			}
		}
	}
	return "kernel-dnat"
}

// Published implements platform.Publisher: with network=nat, the loopback
// address and port Docker published the container's TCP port on.
func (in *Instance) Published(ctx context.Context, port int) (string, bool, error) {
	if in.network != platform.NetNAT {
		return "", false, nil
	}
	ci, err := in.inspect(ctx)
	if err != nil {
		return "", false, err
	}
	for _, b := range ci.NetworkSettings.Ports[strconv.Itoa(port)+"/tcp"] {
		if b.HostPort == "" {
			continue
		}
		ip := b.HostIP
		if ip == "" || ip == "0.0.0.0" {
			ip = "127.0.0.1"
		}
		if ip != "127.0.0.1" {
			return "", false, fmt.Errorf("docker: %s publishes port %d on %s, not on loopback", in.name, port, ip)
		}
		return net.JoinHostPort(ip, b.HostPort), true, nil
	}
	return "", false, nil
}

// Facts implements platform.Instance.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := map[string]string{
		"network": in.network,
		"storage": in.storage,
		"image":   in.image,
		"name":    in.name,
	}
	ci, err := in.inspect(ctx)
	if err != nil {
		f["error"] = err.Error()
		return f
	}
	f["nano_cpus"] = strconv.FormatInt(ci.HostConfig.NanoCpus, 10)
	f["memory_limit"] = strconv.FormatInt(ci.HostConfig.Memory, 10)
	f["memory_swap_limit"] = strconv.FormatInt(ci.HostConfig.MemorySwap, 10)
	f["network_mode"] = ci.HostConfig.NetworkMode
	if in.network == platform.NetNAT {
		var ports []string
		for k, bs := range ci.NetworkSettings.Ports {
			for _, b := range bs {
				if b.HostPort != "" {
					ports = append(ports, b.HostIP+":"+b.HostPort+"->"+k)
				}
			}
		}
		sort.Strings(ports)
		f["published"] = strings.Join(ports, ",")
		f["nat_path"] = natPath(ci)
	}
	f["runtime"] = ci.HostConfig.Runtime
	for _, t := range ci.HostConfig.BlkioDeviceReadIOps {
		f["io_disk"], f["read_iops_limit"] = t.Path, strconv.FormatInt(t.Rate, 10)
	}
	for _, t := range ci.HostConfig.BlkioDeviceReadBps {
		f["io_disk"], f["read_bps_limit"] = t.Path, strconv.FormatInt(t.Rate, 10)
	}
	return f
}

// Wait implements platform.Instance. When the main process's stdout is
// attached, Wait returns only after all of it has been delivered.
func (in *Instance) Wait(ctx context.Context) (int, error) {
	var res struct {
		StatusCode int
		Error      *struct{ Message string }
	}
	q := url.Values{}
	q.Set("condition", "not-running")
	if err := in.p.c.do(ctx, http.MethodPost, "/containers/"+in.id+"/wait", q, nil, &res); err != nil {
		return 0, fmt.Errorf("docker wait %s: %w", in.name, err)
	}
	if res.Error != nil && res.Error.Message != "" {
		return res.StatusCode, fmt.Errorf("docker wait %s: %s", in.name, res.Error.Message)
	}
	if in.attachDone != nil {
		select {
		case <-in.attachDone:
			if in.attachErr != nil {
				return res.StatusCode, fmt.Errorf("docker %s: main output: %w", in.name, in.attachErr)
			}
		case <-ctx.Done():
			return res.StatusCode, ctx.Err()
		}
	}
	return res.StatusCode, nil
}

// Close implements platform.Instance. It works with a cancelled ctx too.
func (in *Instance) Close(ctx context.Context) error {
	in.closeMu.Lock()
	defer in.closeMu.Unlock()
	if in.closed {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if in.attached != nil {
		in.attached.Close()
	}
	if in.id != "" {
		q := url.Values{}
		q.Set("force", "1")
		q.Set("v", "1")
		err := in.p.c.do(cctx, http.MethodDelete, "/containers/"+in.id, q, nil, nil)
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("docker remove %s: %w", in.name, err)
		}
	}
	if in.volDir != "" {
		if err := os.RemoveAll(in.volDir); err != nil {
			return fmt.Errorf("docker: removing volume directory: %w", err)
		}
	}
	in.closed = true
	return nil
}
