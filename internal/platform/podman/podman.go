// Package podman runs instances as rootful Podman containers through the
// podman command line (no daemon; each container has its conmon).
//
// Images are imported (`podman import`) from a tar of the image profile's
// root file system, tagged with the builder's content digest, so an image
// is reused exactly when its content would not change; nothing is pulled.
// The debian profile is a base image of the Debian tree (imported once per
// Debian content) with the agent committed on top as a small layer, so an
// agent rebuild does not import Debian again (image.go).
//
// Two host quirks are handled here rather than in containers.conf:
//   - Podman's default ulimits (nofile and nproc of 1048576 or so) cannot be
//     set by a runtime without CAP_SYS_RESOURCE headroom above the caller's
//     hard limits; every container gets explicit ulimits instead: nofile at
//     the caller's hard limit, nproc at min(caller's hard limit, 32768),
//     which is what podman leaves conmon able to grant.
//   - crun 1.8 (Debian 12's default runtime for podman) refuses a hybrid
//     cgroup v1 host ("cgroups in hybrid mode not supported"), so the OCI
//     runtime defaults to runc; podman:runtime=crun selects crun.
//
// Confinement is Docker's, not Podman's defaults (which lack CAP_MKNOD,
// CAP_NET_RAW and CAP_AUDIT_WRITE and use containers/common's seccomp
// profile): Docker's capability set (--cap-drop=all, --cap-add of
// confine.DockerCaps), Docker's default seccomp profile (written once per
// state directory as seccomp.json, --security-opt seccomp=FILE) and
// Docker's device list (--device-cgroup-rule adds the console, which
// Podman's lacks). Memory: --memory-swap = --memory, as Docker's platform.
package podman

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/confine"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/instguard"
	"github.com/isobench/isobench/internal/platform/local"
)

// Factory registers the podman platform.
var Factory = platform.Factory{
	Name:  "podman",
	Help:  "rootful Podman containers via the podman CLI; image imported from the profile's rootfs; network=bridge (default, podman's own network), nat (bridge + ports published on 127.0.0.1), host or none; runtime=runc (default) or crun",
	Extra: []string{"runtime"},
	New: func(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
		return New(ctx, o, env)
	},
	Cost: platform.Cost{Instance: 900 * time.Millisecond},
	// its containers by label, their volume directories and logs
	Sweep: Sweep,
}

// ImageRepo is the repository a profile is imported as; the tag is the
// content digest.
func ImageRepo(profile string) string { return "localhost/isobench/" + profile }

// NamePrefix starts the name of every container this platform creates.
const NamePrefix = "isobench-"

// Platform creates Podman containers.
type Platform struct {
	opts    platform.Options
	env     platform.Env
	runtime string // OCI runtime podman runs ("runc" or "crun")

	imageMu sync.Mutex
	refs    map[string]string // profile → image reference

	seccompMu   sync.Mutex
	seccompPath string // Docker's seccomp.json, once written
}

// New makes a podman platform; nothing is contacted until used.
func New(ctx context.Context, o platform.Options, env platform.Env) (*Platform, error) {
	rt := o.Extra["runtime"]
	switch rt {
	case "":
		rt = "runc"
	case "runc", "crun":
	default:
		return nil, fmt.Errorf("podman: runtime=%q is %w (use runc or crun)", rt, platform.ErrUnsupported)
	}
	if _, err := networkArg(o.Base.Network); err != nil {
		return nil, err
	}
	if err := checkStorage(o.Base.Storage); err != nil {
		return nil, err
	}
	return &Platform{opts: o, env: env, runtime: rt}, nil
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "podman" }

func (p *Platform) log() io.Writer {
	if p.env.Log == nil {
		return io.Discard
	}
	return p.env.Log
}

// podman runs the podman CLI and returns its stdout; the error carries
// stderr.
func podman(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "podman", args...)
	cmd.Stdin = stdin
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return stdout.String(), fmt.Errorf("podman %s: %w", args[0], ctx.Err())
		}
		return stdout.String(), fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Available checks the podman binary and the OCI runtime.
func (p *Platform) Available(ctx context.Context) error {
	if _, err := exec.LookPath("podman"); err != nil {
		return errors.New("podman is not installed: apt-get install -y podman")
	}
	if _, err := exec.LookPath(p.runtime); err != nil {
		return fmt.Errorf("podman: the OCI runtime %s is not installed: apt-get install -y %s", p.runtime, p.runtime)
	}
	if os.Geteuid() != 0 {
		return errors.New("podman: isobench uses rootful podman: run as root")
	}
	if _, err := podman(ctx, nil, "version", "--format", "{{.Client.Version}}"); err != nil {
		return fmt.Errorf("podman does not work here: %w", err)
	}
	return nil
}

// podmanInfo is the part of `podman info --format json` isobench records.
type podmanInfo struct {
	Host struct {
		CgroupManager  string `json:"cgroupManager"`
		CgroupVersion  string `json:"cgroupVersion"`
		NetworkBackend string `json:"networkBackend"`
		Conmon         struct {
			Version string `json:"version"`
		} `json:"conmon"`
		Kernel string `json:"kernel"`
	} `json:"host"`
	Store struct {
		GraphDriverName string `json:"graphDriverName"`
	} `json:"store"`
	Version struct {
		Version string `json:"Version"`
	} `json:"version"`
}

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"runtime": p.runtime, "cgroup_version": strconv.Itoa(cgroup.Version())}
	nofile, nproc := ulimits()
	f["ulimit_nofile"] = strconv.FormatUint(nofile, 10)
	f["ulimit_nproc"] = strconv.FormatUint(nproc, 10)
	f["wait_poll"] = waitPoll.String()
	out, err := podman(ctx, nil, "info", "--format", "json")
	if err != nil {
		f["error"] = err.Error()
		return f
	}
	var info podmanInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		f["error"] = fmt.Sprintf("podman info: %v", err)
		return f
	}
	f["podman_version"] = info.Version.Version
	f["cgroup_manager"] = info.Host.CgroupManager
	f["network_backend"] = info.Host.NetworkBackend
	f["storage_driver"] = info.Store.GraphDriverName
	f["conmon_version"] = strings.TrimPrefix(info.Host.Conmon.Version, "conmon version ")
	if v, err := exec.CommandContext(ctx, p.runtime, "--version").Output(); err == nil {
		line, _, _ := strings.Cut(strings.TrimSpace(string(v)), "\n")
		f[p.runtime+"_version"] = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(line, p.runtime), " version"))
	}
	return f
}

// ulimits are the nofile and nproc limits every container gets: the
// caller's hard limits (nproc capped at 32768: podman's conmon cannot grant
// more on hosts without CAP_SYS_RESOURCE headroom).
func ulimits() (nofile, nproc uint64) {
	nofile, nproc = 1024, 4096
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Max > 0 {
		nofile = l.Max
	}
	const rlimitNproc = 6
	if syscall.Getrlimit(rlimitNproc, &l) == nil && l.Max > 0 {
		nproc = min(l.Max, 32768)
	}
	return nofile, nproc
}

// Close implements platform.Platform: instances are closed by their owner
// and images are kept as a cache.
func (p *Platform) Close(ctx context.Context) error { return nil }

// profile is the image profile asked for.
func profile(s platform.Spec) string {
	if s.Image != "" {
		return s.Image
	}
	return image.Minimal
}

// Prepare implements platform.Preparer: it imports the profile's image
// unless its digest is already there.
func (p *Platform) Prepare(ctx context.Context, profile string) error {
	if profile == "" {
		profile = image.Minimal
	}
	_, err := p.image(ctx, profile)
	return err
}

var _ platform.Preparer = (*Platform)(nil)

// image returns the profile's image reference, importing it when missing
// (checked once per platform, since hashing the agent takes time).
func (p *Platform) image(ctx context.Context, profile string) (string, error) {
	p.imageMu.Lock()
	defer p.imageMu.Unlock()
	if ref, ok := p.refs[profile]; ok {
		return ref, nil
	}
	b := image.Builder{AgentBinary: p.env.AgentBinary, StateDir: p.env.StateDir, Log: p.env.Log}
	digest, err := b.Digest(profile)
	if err != nil {
		return "", fmt.Errorf("podman image %s: %w", profile, err)
	}
	ref := ImageRepo(profile) + ":" + digest
	if !imageExists(ctx, ref) {
		if profile == image.Debian {
			// the Debian tree imported once per Debian content as a base
			// image, the agent a layer on top (image.go): an agent
			// rebuild adds megabytes, not a second copy of Debian
			err = p.layerAgent(ctx, b, profile, ref)
		} else {
			err = p.importImage(ctx, b.BuildRootfs, profile, ref)
		}
		if err != nil {
			return "", err
		}
		p.pruneStale(ctx, profile, ref)
	}
	if p.refs == nil {
		p.refs = map[string]string{}
	}
	p.refs[profile] = ref
	return ref, nil
}

// importImage builds the profile's root file system with build in a
// temporary directory and streams it as a tar into `podman import`.
func (p *Platform) importImage(ctx context.Context, build func(ctx context.Context, profile, dir string) error, profile, ref string) error {
	return image.BuildInTemp(ctx, p.env.StateDir, "podman", profile, ref, build, func(tmp string) error {
		fmt.Fprintf(p.log(), "podman: importing image %s\n", ref)
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(image.Tar(tmp, pw)) }()
		defer pr.Close()
		if _, err := podman(ctx, pr, "import", "--quiet", "--change", "LABEL "+platform.ImageLabel+"=1", "-", ref); err != nil {
			return fmt.Errorf("podman image import %s: %w", ref, err)
		}
		return nil
	})
}

// Images lists the references of profile's imported images.
func (p *Platform) Images(ctx context.Context, profile string) ([]string, error) {
	out, err := podman(ctx, nil, "images", "--noheading", "--format", "{{.Repository}}:{{.Tag}}", "--filter", "reference="+ImageRepo(profile))
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// RemoveImage deletes one image reference.
func (p *Platform) RemoveImage(ctx context.Context, ref string) error {
	_, err := podman(ctx, nil, "rmi", "--force", ref)
	p.imageMu.Lock()
	for k, v := range p.refs {
		if v == ref {
			delete(p.refs, k)
		}
	}
	p.imageMu.Unlock()
	return err
}

// networkArg maps a network mode to podman's --network value.
func networkArg(n string) (string, error) {
	if mode, ok := local.EngineNetwork(n); ok {
		return mode, nil
	}
	return "", fmt.Errorf("podman: network=%q is %w (use bridge, nat, host or none)", n, platform.ErrUnsupported)
}

func checkStorage(s string) error {
	switch s {
	case "", platform.StorageRootfs, platform.StorageVolume:
		return nil
	}
	return fmt.Errorf("podman: storage=%q is %w (use rootfs or volume)", s, platform.ErrUnsupported)
}

// containerName makes a valid, prefixed, unique container name.
func containerName(name string) string {
	b := make([]byte, 4)
	rand.Read(b)
	safe := local.EngineName(name)
	if safe != "" {
		safe += "-"
	}
	return NamePrefix + safe + hex.EncodeToString(b)
}

// createArgs builds `podman create`'s arguments. volDir, when not empty, is
// bind-mounted at guestenv.ScratchDir; the container's log goes to logPath.
func (p *Platform) createArgs(s platform.Spec, name, ref, volDir, logPath string) ([]string, error) {
	netArg, err := networkArg(s.Network)
	if err != nil {
		return nil, err
	}
	if s.CPUs < 0 || s.Memory < 0 {
		return nil, errors.New("podman: negative cpus or memory")
	}
	nofile, nproc := ulimits()
	args := []string{"create", "--name", name, "--runtime", p.runtime,
		"--label", platform.Label + "=1",
		"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile, nofile),
		"--ulimit", fmt.Sprintf("nproc=%d:%d", nproc, nproc),
		"--network", netArg,
		"--hostname", "isobench",
		"--env", guestenv.ScratchEnv + "=" + guestenv.ScratchDir,
		"--env", "HOME=/root",
		"--log-driver", "k8s-file",
		"--log-opt", "path=" + logPath,
	}
	if s.Name != "" {
		args = append(args, "--label", platform.Label+".name="+s.Name)
	}
	for k, v := range s.Labels {
		args = append(args, "--label", k+"="+v)
	}
	if s.CPUs > 0 {
		args = append(args, "--cpus", strconv.FormatFloat(s.CPUs, 'f', -1, 64))
	}
	if s.Memory > 0 {
		m := strconv.FormatInt(s.Memory, 10)
		args = append(args, "--memory", m, "--memory-swap", m)
	}
	if volDir != "" {
		args = append(args, "--volume", volDir+":"+guestenv.ScratchDir)
	}
	// Docker's confinement (see the package doc)
	caps := make([]string, len(confine.DockerCaps))
	for i, c := range confine.DockerCaps {
		caps[i] = strings.TrimPrefix(c, "CAP_")
	}
	args = append(args, "--cap-drop", "all", "--cap-add", strings.Join(caps, ","))
	if p.seccompPath != "" {
		args = append(args, "--security-opt", "seccomp="+p.seccompPath)
	}
	for _, r := range confine.DockerDevices {
		args = append(args, "--device-cgroup-rule", r.String())
	}
	if s.Network == platform.NetNAT {
		for _, port := range s.Ports {
			if port < 1 || port > 65535 {
				return nil, fmt.Errorf("podman: port %d out of range", port)
			}
			// on the host's loopback only, on a port podman picks (or,
			// SamePorts, on the port's own number)
			host := ""
			if s.SamePorts {
				host = strconv.Itoa(port)
			}
			args = append(args, "--publish", "127.0.0.1:"+host+":"+strconv.Itoa(port))
		}
	}
	args = append(args, ref)
	return append(args, local.MainArgv(s)...), nil
}

// writeSeccomp writes Docker's default seccomp profile for Podman to read
// (once per platform; a file left by an earlier run is replaced).
func (p *Platform) writeSeccomp() error {
	p.seccompMu.Lock()
	defer p.seccompMu.Unlock()
	if p.seccompPath != "" {
		return nil
	}
	b, err := confine.DockerProfileJSON()
	if err != nil {
		return fmt.Errorf("podman: %w", err)
	}
	dir := filepath.Join(p.env.StateDir, "podman")
	if err := local.PrivateDir(dir); err != nil {
		return fmt.Errorf("podman: %w", err)
	}
	// a fresh file renamed into place: other processes' platforms may
	// read or write the same one meanwhile
	tmp, err := os.CreateTemp(dir, "seccomp-*.json")
	if err != nil {
		return fmt.Errorf("podman: seccomp profile: %w", err)
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	path := filepath.Join(dir, "seccomp.json")
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("podman: seccomp profile: %w", werr)
	}
	p.seccompPath = path
	return nil
}

// volumeDir is the host directory of an instance's storage=volume.
func (p *Platform) volumeDir(name string) string {
	return filepath.Join(p.env.StateDir, "podman-volumes", name)
}

// Create implements platform.Platform: podman create, then start; it
// returns once the main process has started.
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	if err := checkStorage(s.Storage); err != nil {
		return nil, err
	}
	if s.Network == platform.NetDefault {
		s.Network = p.opts.Base.Network
	}
	if _, err := networkArg(s.Network); err != nil {
		return nil, err
	}
	ref, err := p.image(ctx, profile(s))
	if err != nil {
		return nil, err
	}
	name := containerName(s.Name)
	in := &Instance{p: p, name: name, spec: s, done: make(chan struct{})}
	defer func() {
		if err != nil {
			in.Close(context.WithoutCancel(ctx))
		}
	}()
	if s.Storage == platform.StorageVolume {
		in.volume = p.volumeDir(name)
		if err := os.MkdirAll(in.volume, 0o755); err != nil {
			return nil, fmt.Errorf("podman: volume: %w", err)
		}
		os.Chmod(in.volume, 0o777)
	}
	in.logPath = filepath.Join(p.env.StateDir, "podman-logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(in.logPath), 0o755); err != nil {
		return nil, fmt.Errorf("podman: %w", err)
	}
	if err := p.writeSeccomp(); err != nil {
		return nil, err
	}
	args, err := p.createArgs(s, name, ref, in.volume, in.logPath)
	if err != nil {
		return nil, err
	}
	out, err := podman(ctx, nil, args...)
	if err != nil {
		return nil, err
	}
	in.id = strings.TrimSpace(out)
	if s.Phase != nil {
		s.Phase("created", time.Now())
	}
	if _, err := podman(ctx, nil, "start", in.id); err != nil {
		return nil, err
	}
	if s.Phase != nil {
		s.Phase("started", time.Now())
	}
	in.started = true
	// nat is the bridge too, with ports also published on loopback
	if s.Network == platform.NetBridge || s.Network == platform.NetDefault || s.Network == platform.NetNAT {
		ip, err := podman(ctx, nil, "inspect", "--format", "{{.NetworkSettings.IPAddress}}", in.id)
		if err != nil {
			return nil, err
		}
		in.addr = strings.TrimSpace(ip)
	}
	go in.watch(s.MainStdout)
	return in, nil
}

// Instance is one Podman container.
type Instance struct {
	p       *Platform
	id      string
	name    string
	spec    platform.Spec
	volume  string
	logPath string
	addr    string
	started bool

	done    chan struct{} // closed when the main process ended (or was removed)
	code    int
	waitErr error

	mu     sync.Mutex
	closed bool
}

// waitPoll is how often `podman wait` polls the container's state (its
// default, 250ms, would be added to every measured run time; the poll is a
// stat of conmon's exit file and a state-store read).
const waitPoll = 50 * time.Millisecond

// watch follows the main process's stdout (from its log file) and waits
// for its exit status.
func (in *Instance) watch(stdout io.Writer) {
	defer close(in.done)
	stop := make(chan struct{})
	var tailed chan struct{}
	if stdout != nil {
		tailed = make(chan struct{})
		go func() { defer close(tailed); tailLog(in.logPath, stdout, stop) }()
	}
	out, err := podman(context.Background(), nil, "wait", "--interval", waitPoll.String(), in.id)
	close(stop)
	if tailed != nil {
		<-tailed
	}
	if err != nil {
		in.code, in.waitErr = -1, err
		return
	}
	in.code, in.waitErr = -1, nil
	if c, perr := strconv.Atoi(strings.TrimSpace(out)); perr == nil {
		in.code = c
	} else {
		in.waitErr = fmt.Errorf("podman wait: unexpected answer %q", out)
	}
}

// tailLog copies the stdout lines of a k8s-file container log to w as
// they appear, until stop is closed; then it copies what is left.
// (`podman logs --follow` would add a few hundred milliseconds after the
// container's exit to every measured run.)
func tailLog(path string, w io.Writer, stop <-chan struct{}) {
	var f *os.File
	var pending []byte
	buf := make([]byte, 64<<10)
	for {
		stopped := false
		select {
		case <-stop:
			stopped = true
		default:
		}
		if f == nil {
			f, _ = os.Open(path)
		}
		if f != nil {
			for {
				n, err := f.Read(buf)
				pending = append(pending, buf[:n]...)
				if err != nil || n == 0 {
					break
				}
			}
			pending = writeLogLines(w, pending)
		}
		if stopped {
			if f != nil {
				f.Close()
			}
			return
		}
		select {
		case <-stop:
		case <-time.After(waitPoll):
		}
	}
}

// writeLogLines writes the stdout payloads of the complete k8s-file lines
// in b ("<time> <stream> <F|P> <text>\n"; P marks a partial line, written
// without its newline) and returns the incomplete rest.
func writeLogLines(w io.Writer, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return b
		}
		line := string(b[:i])
		b = b[i+1:]
		f := strings.SplitN(line, " ", 4)
		if len(f) < 3 || f[1] != "stdout" {
			continue
		}
		text := ""
		if len(f) == 4 {
			text = f[3]
		}
		if f[2] != "P" {
			text += "\n"
		}
		io.WriteString(w, text)
	}
}

// ID is the container id.
func (in *Instance) ID() string { return in.id }

// Name is the container name.
func (in *Instance) Name() string { return in.name }

func (in *Instance) isClosed() bool { return instguard.Closed(&in.mu, &in.closed) }

// Exec runs argv with `podman exec`; cancelling ctx kills the podman
// process (the command inside may outlive it).
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if err := instguard.Exec("podman", in.name, argv, in.isClosed); err != nil {
		return err
	}
	args := []string{"exec"}
	if stdio.Stdin != nil {
		args = append(args, "--interactive")
	}
	args = append(append(args, in.id), local.GuestArgv(argv)...)
	cmd := exec.CommandContext(ctx, "podman", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	return local.Run(ctx, cmd, argv, "podman exec")
}

// CopyIn writes the host file into the container through exec (so it
// also lands in a volume mounted in the container).
func (in *Instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	return local.CopyIn(ctx, in.Exec, "podman", hostPath, guestPath, mode)
}

// Address is the container's address on podman's bridge, loopback with the
// host network, "" with none.
func (in *Instance) Address(ctx context.Context) (string, error) {
	switch in.spec.Network {
	case platform.NetHost:
		return "127.0.0.1", nil
	case platform.NetNone:
		return "", nil
	}
	if in.addr == "" {
		return "", fmt.Errorf("podman: container %s has no bridge address", in.name)
	}
	return in.addr, nil
}

// Published implements platform.Publisher: with network=nat, where podman
// published the container's TCP port on the host's loopback.
func (in *Instance) Published(ctx context.Context, port int) (string, bool, error) {
	if in.spec.Network != platform.NetNAT {
		return "", false, nil
	}
	out, err := podman(ctx, nil, "port", in.id, strconv.Itoa(port)+"/tcp")
	if err != nil {
		return "", false, fmt.Errorf("podman port %s %d: %w", in.name, port, err)
	}
	for _, l := range strings.Fields(out) {
		host, p, err := net.SplitHostPort(l)
		if err != nil || p == "" || p == "0" {
			continue
		}
		if host == "" || host == "0.0.0.0" {
			host = "127.0.0.1"
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return "", false, fmt.Errorf("podman: %s publishes port %d on %s, not on loopback", in.name, port, host)
		}
		return net.JoinHostPort(host, p), true, nil
	}
	return "", false, nil
}

// Facts implements platform.Instance.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	network := in.spec.Network
	if network == platform.NetDefault {
		network = platform.NetBridge
	}
	f := map[string]string{"id": in.id, "name": in.name, "runtime": in.p.runtime, "network": network, "storage": "overlay"}
	if in.volume != "" {
		f["storage"] = "overlay+bind-volume"
	}
	if in.spec.CPUs > 0 {
		f["cpus"] = strconv.FormatFloat(in.spec.CPUs, 'f', -1, 64)
	}
	if in.spec.Memory > 0 {
		f["memory"] = strconv.FormatInt(in.spec.Memory, 10)
		f["memory_swap_limit"] = f["memory"] // --memory-swap
	}
	f["capabilities"] = "docker-default"
	f["seccomp_profile"] = "docker-default"
	f["devices"] = confine.DockerDevicesList()
	if in.addr != "" {
		f["address"] = in.addr
	}
	return f
}

// Wait waits for the main process's exit status; an idle instance's Wait
// returns 0 once it is closed.
func (in *Instance) Wait(ctx context.Context) (int, error) {
	select {
	case <-in.done:
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	if in.isClosed() && len(in.spec.Main) == 0 {
		return 0, nil
	}
	return in.code, in.waitErr
}

// Close removes the container (killing it at once) and its volume
// directory. It is safe to call more than once.
func (in *Instance) Close(ctx context.Context) error {
	if !instguard.First(&in.mu, &in.closed) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var errs []error
	target := in.id
	if target == "" {
		target = in.name
	}
	if _, err := podman(ctx, nil, "rm", "--force", "--time", "0", "--volumes", target); err != nil &&
		!strings.Contains(err.Error(), "no such container") {
		errs = append(errs, err)
	}
	if in.started {
		select {
		case <-in.done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("podman: waiting for %s to end: %w", in.name, ctx.Err()))
		}
	} else {
		close(in.done)
	}
	if in.volume != "" {
		if err := os.RemoveAll(in.volume); err != nil {
			errs = append(errs, fmt.Errorf("podman: volume: %w", err))
		}
	}
	if in.logPath != "" {
		if err := os.Remove(in.logPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("podman: log: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what podman instances may leave on the host: what
// Sweep lists (containers labelled isobench, their volume directories
// and logs under stateDir), and besides every volume directory and log
// there, overlay mounts of podman's storage, container cgroups, network
// namespaces podman made and veths on its bridge.
func Leftovers(ctx context.Context, stateDir string) ([]string, error) {
	if _, err := exec.LookPath("podman"); err != nil {
		return nil, errors.New("podman is not installed")
	}
	found, err := Sweep(ctx, platform.SweepEnv{StateDirs: []string{stateDir}})
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range found {
		seen[l.Name] = true
		out = append(out, l.String())
	}
	for _, d := range []string{"podman-volumes", "podman-logs"} {
		if es, err := os.ReadDir(filepath.Join(stateDir, d)); err == nil {
			for _, e := range es {
				if p := filepath.Join(stateDir, d, e.Name()); !seen[p] {
					out = append(out, "dir "+p)
				}
			}
		}
	}
	for _, m := range local.MountsUnder("/var/lib/containers/storage/overlay") {
		out = append(out, "mount "+m)
	}
	if es, err := os.ReadDir(local.NetnsDir); err == nil {
		for _, e := range es {
			if strings.HasPrefix(e.Name(), "netns-") {
				out = append(out, "netns "+e.Name())
			}
		}
	}
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/libpod_parent/libpod-*")
	for _, c := range cgroups {
		out = append(out, "cgroup "+c)
	}
	links, _ := filepath.Glob("/sys/class/net/*/master")
	for _, l := range links {
		if m, err := os.Readlink(l); err == nil && filepath.Base(m) == "podman0" {
			out = append(out, "veth "+filepath.Base(filepath.Dir(l)))
		}
	}
	return out, nil
}
