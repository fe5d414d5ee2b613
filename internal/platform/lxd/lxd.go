// Package lxd runs instances as LXD system containers through LXD's REST
// API on its unix socket (no lxc client).
//
// Images are imported (POST /1.0/images, split format: a metadata tarball
// and the profile's root file system as a tarball) under an alias carrying
// the builder's content digest, so an image is reused exactly when its
// content would not change. Instances use no LXD profile: the root disk
// is on a storage pool (default "isobench", made by scripts/start-lxd.sh),
// the isobench agent is the container's init (raw.lxc lxc.init.cmd), and
// the container sees its own cgroups (lxc.mount.auto cgroup:ro:force, as an
// init system in the guest would mount them). Containers are unprivileged
// (LXD's default) unless privileged=true.
//
// Confinement: every workload process (the main process and each Exec)
// runs under "isobench agent confine" (internal/confine): Docker's default
// seccomp filter and capability set, no no_new_privs, as a Docker
// container's process (inside the container's user namespace when it is
// unprivileged). LXD's own seccomp policy is off
// (security.syscalls.deny_default=false), so a workload pays for exactly
// Docker's filter; the container's init (the idling agent, or systemd)
// keeps LXD's capabilities and has no filter (the init_* facts). Devices:
// raw.lxc replaces LXD's list (which allows /dev/fuse) by a deny-all and
// Docker's (confine.DockerDevices). Memory: raw.lxc limits memory and swap
// together to the memory limit, as Docker's --memory-swap.
//
// network=bridge attaches a veth to the isobench host bridge with a lease
// from hostnet and configures it inside; network=none gives loopback only.
// LXD has no host network mode for containers (it refuses lxc.net.* in
// raw.lxc), so network=host is refused. The main process (Spec.Main) runs
// as an exec once the container has started; the exec streams use LXD's
// websockets.
package lxd

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/confine"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/instguard"
	"github.com/isobench/isobench/internal/platform/local"
)

// Factory registers the lxd platform.
var Factory = platform.Factory{
	Name: "lxd",
	Help: "LXD system containers via its REST API; image imported from the profile's rootfs; network=bridge (default, the isobench bridge) or none; pool=<storage pool> (default isobench), privileged=true|false; " +
		"init=system boots the image's systemd (image=debian) with its usual services",
	Extra: []string{"pool", "privileged", "init"},
	Sweep: Sweep,
	New: func(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
		return New(ctx, o, env)
	},
	Cost: platform.Cost{Instance: 2 * time.Second},
	Image: func(o platform.Options) string {
		if sys, _ := parseInit(o.Extra["init"]); sys {
			return image.Debian // systemd to boot
		}
		return ""
	},
}

// Code is the letter LXD instances carry after local.Prefix in their names
// (and so in their veths and leases).
const Code = "x"

// DefaultPool is the storage pool instances' root disks go on.
const DefaultPool = "isobench"

// StartHint says how to get a running, initialised LXD.
const StartHint = "scripts/start-lxd.sh (installs lxd with apt-get install -y lxd, starts the daemon and creates the isobench dir storage pool)"

// Platform creates LXD containers.
type Platform struct {
	c          *client
	env        platform.Env
	network    string
	pool       string
	privileged bool
	system     bool // init=system (system.go)
	rootfs     *local.Rootfs

	imageMu sync.Mutex
	aliases map[string]string // profile → image alias
}

// New makes an lxd platform; the daemon is contacted only when used.
func New(ctx context.Context, o platform.Options, env platform.Env) (*Platform, error) {
	p := &Platform{c: newClient(SocketPath()), env: env, network: o.Base.Network, pool: DefaultPool, rootfs: &local.Rootfs{Env: env}}
	if v := o.Extra["pool"]; v != "" {
		p.pool = v
	}
	switch o.Extra["privileged"] {
	case "", "false":
	case "true":
		p.privileged = true
	default:
		return nil, fmt.Errorf("lxd: privileged=%q must be true or false", o.Extra["privileged"])
	}
	if err := checkNetwork(o.Base.Network); err != nil {
		return nil, err
	}
	if err := checkStorage(o.Base.Storage); err != nil {
		return nil, err
	}
	var err error
	if p.system, err = parseInit(o.Extra["init"]); err != nil {
		return nil, err
	}
	return p, nil
}

func checkNetwork(n string) error {
	switch n {
	case platform.NetDefault, platform.NetBridge, platform.NetNone:
		return nil
	case platform.NetHost:
		return fmt.Errorf("lxd: network=host is %w: LXD containers always get their own network namespace (it refuses lxc.net.* in raw.lxc); use bridge or none", platform.ErrUnsupported)
	}
	return fmt.Errorf("lxd: network=%q is %w (use bridge or none)", n, platform.ErrUnsupported)
}

func checkStorage(s string) error {
	switch s {
	case "", platform.StorageRootfs, platform.StorageVolume:
		return nil
	}
	return fmt.Errorf("lxd: storage=%q is %w (use rootfs or volume)", s, platform.ErrUnsupported)
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return "lxd" }

func (p *Platform) log() io.Writer {
	if p.env.Log == nil {
		return io.Discard
	}
	return p.env.Log
}

// serverInfo is the part of GET /1.0 isobench records.
type serverInfo struct {
	Environment struct {
		ServerVersion  string `json:"server_version"`
		Driver         string `json:"driver"`
		DriverVersion  string `json:"driver_version"`
		Storage        string `json:"storage"`
		StorageVersion string `json:"storage_version"`
		KernelVersion  string `json:"kernel_version"`
		LXCFeatures    map[string]string
	} `json:"environment"`
}

// Available checks that LXD answers on its socket and has the pool.
func (p *Platform) Available(ctx context.Context) error {
	if _, err := os.Stat(p.c.socket); err != nil {
		return fmt.Errorf("lxd is not running (no socket %s): run %s", p.c.socket, StartHint)
	}
	var info serverInfo
	if err := p.c.sync(ctx, http.MethodGet, "/1.0", nil, &info); err != nil {
		return fmt.Errorf("lxd does not answer on %s: %w; run %s", p.c.socket, err, StartHint)
	}
	if err := p.c.sync(ctx, http.MethodGet, "/1.0/storage-pools/"+escape(p.pool), nil, nil); err != nil {
		return fmt.Errorf("lxd has no storage pool %q (%w): run %s", p.pool, err, StartHint)
	}
	return nil
}

// Facts implements platform.Platform.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"storage_pool": p.pool, "privileged": strconv.FormatBool(p.privileged), "cgroup_version": strconv.Itoa(cgroup.Version())}
	var info serverInfo
	if err := p.c.sync(ctx, http.MethodGet, "/1.0", nil, &info); err != nil {
		f["error"] = err.Error()
		return f
	}
	e := info.Environment
	f["lxd_version"] = e.ServerVersion
	f["driver"] = e.Driver
	f["lxc_version"] = e.DriverVersion
	f["storage_driver"] = e.Storage
	if e.StorageVersion != "" {
		f["storage_driver_version"] = e.StorageVersion
	}
	f["kernel"] = e.KernelVersion
	return f
}

// Close implements platform.Platform: instances are closed by their owner
// and images are kept as a cache.
func (p *Platform) Close(ctx context.Context) error { return nil }

// ImageAlias names a profile's image with its content digest.
func ImageAlias(profile, digest string) string { return "isobench-" + profile + "-" + digest }

// Prepare implements platform.Preparer: it imports the profile's image
// unless its digest is already there.
func (p *Platform) Prepare(ctx context.Context, profile string) error {
	_, err := p.image(ctx, profile)
	return err
}

var _ platform.Preparer = (*Platform)(nil)

// image returns the profile's image alias, importing it when missing.
func (p *Platform) image(ctx context.Context, profile string) (string, error) {
	if profile == "" {
		profile = image.Minimal
	}
	p.imageMu.Lock()
	defer p.imageMu.Unlock()
	if a, ok := p.aliases[profile]; ok {
		return a, nil
	}
	digest, err := image.Builder{AgentBinary: p.env.AgentBinary}.Digest(profile)
	if err != nil {
		return "", fmt.Errorf("lxd image: %w", err)
	}
	alias := ImageAlias(profile, digest)
	err = p.c.sync(ctx, http.MethodGet, "/1.0/images/aliases/"+escape(alias), nil, nil)
	if isNotFound(err) {
		err = p.importImage(ctx, profile, alias)
	}
	if err != nil {
		return "", fmt.Errorf("lxd image %s: %w", alias, err)
	}
	if p.aliases == nil {
		p.aliases = map[string]string{}
	}
	p.aliases[profile] = alias
	return alias, nil
}

// metadataTar is the split image's metadata tarball.
func metadataTar(profile, alias string, now time.Time) ([]byte, error) {
	yaml := fmt.Sprintf("architecture: x86_64\ncreation_date: %d\nproperties:\n  description: isobench %s image\n  os: isobench\n  release: %s\n", now.Unix(), profile, alias)
	var b strings.Builder
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: "metadata.yaml", Mode: 0o644, Size: int64(len(yaml)), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(tw, yaml); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// importImage posts the metadata and rootfs tarballs as a multipart form
// and aliases the new image.
func (p *Platform) importImage(ctx context.Context, profile, alias string) error {
	dir, err := p.rootfs.Dir(ctx, profile)
	if err != nil {
		return err
	}
	meta, err := metadataTar(profile, alias, time.Now())
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	fmt.Fprintf(p.log(), "lxd: importing image %s\n", alias)
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			part, err := mw.CreateFormFile("metadata", "metadata.tar")
			if err != nil {
				return err
			}
			if _, err := part.Write(meta); err != nil {
				return err
			}
			if part, err = mw.CreateFormFile("rootfs", "rootfs.tar"); err != nil {
				return err
			}
			if err := image.Tar(dir, part); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	defer pr.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://lxd/1.0/images", pr)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-LXD-properties", "isobench=1")
	resp, err := p.c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("POST /1.0/images: %w", err)
	}
	var r response
	err = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("POST /1.0/images: %s: %w", resp.Status, err)
	}
	if r.Type == "error" || r.Operation == "" {
		return fmt.Errorf("POST /1.0/images: %s", r.Error)
	}
	op, err := p.c.wait(ctx, opPath(r.Operation))
	if err != nil {
		return err
	}
	var md struct {
		Fingerprint string `json:"fingerprint"`
	}
	if err := json.Unmarshal(op.Metadata, &md); err != nil || md.Fingerprint == "" {
		return fmt.Errorf("image import answered no fingerprint (%s)", op.Metadata)
	}
	err = p.c.sync(ctx, http.MethodPost, "/1.0/images/aliases", map[string]string{"name": alias, "target": md.Fingerprint, "description": "isobench " + profile}, nil)
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("alias: %w", err)
	}
	return nil
}

// Images lists the aliases of profile's imported images.
func (p *Platform) Images(ctx context.Context, profile string) ([]string, error) {
	var aliases []struct {
		Name   string `json:"name"`
		Target string `json:"target"`
	}
	if err := p.c.sync(ctx, http.MethodGet, "/1.0/images/aliases?recursion=1", nil, &aliases); err != nil {
		return nil, err
	}
	var out []string
	for _, a := range aliases {
		if strings.HasPrefix(a.Name, "isobench-"+profile+"-") {
			out = append(out, a.Name)
		}
	}
	return out, nil
}

// RemoveImage deletes the image an alias points at (and so the alias).
func (p *Platform) RemoveImage(ctx context.Context, alias string) error {
	var a struct {
		Target string `json:"target"`
	}
	if err := p.c.sync(ctx, http.MethodGet, "/1.0/images/aliases/"+escape(alias), nil, &a); err != nil {
		return err
	}
	p.imageMu.Lock()
	for k, v := range p.aliases {
		if v == alias {
			delete(p.aliases, k)
		}
	}
	p.imageMu.Unlock()
	_, err := p.c.async(ctx, http.MethodDelete, "/1.0/images/"+escape(a.Target), nil, nil)
	return err
}

// cpuAllowance renders a CPU quota as LXD's limits.cpu.allowance
// ("<quota>ms/<period>ms"): a 100ms period, or 1000ms when the quota is
// not a whole number of milliseconds per 100ms.
func cpuAllowance(cpus float64) string {
	q := cpus * 100
	if q == float64(int64(q)) {
		return fmt.Sprintf("%dms/100ms", int64(q))
	}
	return fmt.Sprintf("%dms/1000ms", int64(cpus*1000+0.5))
}

// instancesPost is the body of POST /1.0/instances.
type instancesPost struct {
	Name     string                       `json:"name"`
	Type     string                       `json:"type"`
	Source   map[string]string            `json:"source"`
	Profiles []string                     `json:"profiles"`
	Config   map[string]string            `json:"config"`
	Devices  map[string]map[string]string `json:"devices"`
}

// instanceConfig builds the creation request for spec s.
func (p *Platform) instanceConfig(s platform.Spec, id, alias, volume, hostVeth string) instancesPost {
	cfg := map[string]string{
		"raw.lxc":        p.rawLXC() + devicesLXC(cgroup.Version() == 2),
		"user.isobench":  "1",
		"boot.autostart": "false",
		// no seccomp policy of LXD's: the workloads' filter is Docker's
		// alone (see the package doc)
		"security.syscalls.deny_default": "false",
	}
	if s.Name != "" {
		cfg["user.isobench.name"] = s.Name
	}
	for k, v := range s.Labels {
		cfg["user."+k] = v
	}
	if s.CPUs > 0 {
		cfg["limits.cpu.allowance"] = cpuAllowance(s.CPUs)
	}
	if s.Memory > 0 {
		cfg["limits.memory"] = strconv.FormatInt(s.Memory, 10)
		// no swap beyond it, as Docker's --memory-swap: LXD's
		// limits.memory.swap=false only sets swappiness 0
		cfg["raw.lxc"] += noSwapLXC(s.Memory, cgroup.Version() == 2, cgroup.SwapAccounting())
	}
	if p.privileged {
		cfg["security.privileged"] = "true"
	}
	dev := map[string]map[string]string{
		"root": {"type": "disk", "path": "/", "pool": p.pool},
	}
	if volume != "" {
		dev["scratch"] = map[string]string{"type": "disk", "source": volume, "path": guestenv.ScratchDir}
	}
	if hostVeth != "" {
		dev["eth0"] = map[string]string{"type": "nic", "nictype": "bridged", "parent": hostnet.DefaultBridge, "name": "eth0", "host_name": hostVeth}
	}
	return instancesPost{
		Name:     id,
		Type:     "container",
		Source:   map[string]string{"type": "image", "alias": alias},
		Profiles: []string{},
		Config:   cfg,
		Devices:  dev,
	}
}

// devicesLXC is the raw.lxc that replaces LXD's device list with Docker's:
// a deny-all (which drops LXD's rules before it), then confine's list.
func devicesLXC(v2 bool) string {
	key := "lxc.cgroup.devices."
	if v2 {
		key = "lxc.cgroup2.devices."
	}
	var b strings.Builder
	b.WriteString(key + "deny = a\n")
	for _, r := range confine.DockerDevices {
		b.WriteString(key + "allow = " + r.String() + "\n")
	}
	return b.String()
}

// noSwapLXC is the raw.lxc that limits memory and swap together to the
// memory limit (LXC applies memsw after the memory limit LXD sets); without
// swap accounting it sets swappiness 0 (v1) instead, as cgroup.New does.
func noSwapLXC(memory int64, v2, accounting bool) string {
	switch {
	case v2 && accounting:
		return "lxc.cgroup2.memory.swap.max = 0\n"
	case v2:
		return ""
	case accounting:
		return "lxc.cgroup.memory.memsw.limit_in_bytes = " + strconv.FormatInt(memory, 10) + "\n"
	}
	return "lxc.cgroup.memory.swappiness = 0\n"
}

// volumeDir is the host directory of an instance's storage=volume.
func (p *Platform) volumeDir(id string) string {
	return filepath.Join(p.env.StateDir, "lxd-volumes", id)
}

// Create implements platform.Platform: create, start, configure the
// network, and start the main process if there is one.
func (p *Platform) Create(ctx context.Context, s platform.Spec) (_ platform.Instance, err error) {
	if err := checkStorage(s.Storage); err != nil {
		return nil, err
	}
	if s.Network == platform.NetDefault {
		s.Network = p.network
	}
	if s.Network == platform.NetDefault {
		s.Network = platform.NetBridge
	}
	if err := checkNetwork(s.Network); err != nil {
		return nil, err
	}
	if err := p.checkSystem(s); err != nil {
		return nil, err
	}
	alias, err := p.image(ctx, s.Image)
	if err != nil {
		return nil, err
	}
	id := local.NewID(Code)
	in := &Instance{p: p, id: id, spec: s, done: make(chan struct{})}
	defer func() {
		if err != nil {
			in.Close(context.WithoutCancel(ctx))
		}
	}()
	if s.Storage == platform.StorageVolume {
		// private (0700, made fresh); it is given to the container's
		// root once LXD has chosen its id map (see ownVolume)
		if err := local.PrivateDir(filepath.Dir(p.volumeDir(id))); err != nil {
			return nil, fmt.Errorf("lxd: volume: %w", err)
		}
		if err := local.FreshDir(p.volumeDir(id)); err != nil {
			return nil, fmt.Errorf("lxd: volume: %w", err)
		}
		in.volume = p.volumeDir(id)
	}
	var veth string
	if s.Network == platform.NetBridge {
		in.bridge = hostnet.Default(p.env.StateDir)
		if in.addr, err = in.bridge.Lease(id, local.VethName(id)); err != nil {
			return nil, fmt.Errorf("lxd: %w", err)
		}
		if err := local.EnsureBridge(ctx, in.bridge); err != nil {
			return nil, fmt.Errorf("lxd: %w", err)
		}
		veth = local.VethName(id)
	}
	in.created = true // from here on, Close deletes the instance
	if _, err := p.c.async(ctx, http.MethodPost, "/1.0/instances", p.instanceConfig(s, id, alias, in.volume, veth), nil); err != nil {
		return nil, fmt.Errorf("lxd: create %s: %w", id, err)
	}
	if s.Phase != nil {
		s.Phase("created", time.Now())
	}
	if in.volume != "" {
		if err := p.ownVolume(ctx, id, in.volume); err != nil {
			return nil, err
		}
	}
	if _, err := p.c.async(ctx, http.MethodPut, "/1.0/instances/"+id+"/state", map[string]any{"action": "start", "timeout": 30}, nil); err != nil {
		return nil, fmt.Errorf("lxd: start %s: %w", id, err)
	}
	if s.Phase != nil && !p.system {
		s.Phase("started", time.Now())
	}
	if in.addr.IsValid() {
		pfx := netip.PrefixFrom(in.addr, in.bridge.Prefix.Bits())
		script := fmt.Sprintf("ip addr add %s dev eth0 && ip link set eth0 up && ip route add default via %s", pfx, in.bridge.Gateway())
		var errb local.TailBuffer
		if err := in.exec(ctx, []string{"sh", "-c", script}, platform.ExecIO{Stderr: &errb}); err != nil {
			return nil, fmt.Errorf("lxd: configuring eth0 in %s: %w: %s", id, err, errb.String())
		}
	}
	if p.system {
		if err := in.waitBooted(ctx); err != nil {
			return nil, err
		}
		if s.Phase != nil {
			s.Phase("started", time.Now())
		}
	}
	if len(s.Main) > 0 {
		stdout := s.MainStdout
		if stdout == nil {
			stdout = io.Discard
		}
		mainCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		in.stopMain = cancel
		go func() {
			defer close(in.done)
			err := in.Exec(mainCtx, s.Main, platform.ExecIO{Stdout: stdout, Stderr: &in.stderr})
			var ee *platform.ExitError
			switch {
			case err == nil:
			case errors.As(err, &ee):
				in.code = ee.Code
			default:
				in.code, in.mainErr = -1, err
			}
		}()
	}
	return in, nil
}

// ownVolume gives the volume directory to the container's root: an
// unprivileged container's root is the host uid and gid its id map
// (volatile.idmap.next, chosen at create) maps 0 to.
func (p *Platform) ownVolume(ctx context.Context, id, dir string) error {
	var inst struct {
		Config map[string]string `json:"config"`
	}
	if err := p.c.sync(ctx, http.MethodGet, "/1.0/instances/"+escape(id), nil, &inst); err != nil {
		return fmt.Errorf("lxd: volume: %w", err)
	}
	uid, gid, err := rootIDs(inst.Config["volatile.idmap.next"])
	if err != nil {
		return fmt.Errorf("lxd: volume: %s: %w", id, err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("lxd: volume: %w", err)
	}
	return nil
}

// rootIDs finds the host uid and gid an LXD id map (JSON, as in
// volatile.idmap.next) maps the container's 0 to; an empty map (a
// privileged container) maps 0 to 0.
func rootIDs(idmap string) (uid, gid int, err error) {
	if idmap == "" || idmap == "[]" {
		return 0, 0, nil
	}
	var entries []struct {
		Isuid, Isgid           bool
		Hostid, Nsid, Maprange int64
	}
	if err := json.Unmarshal([]byte(idmap), &entries); err != nil {
		return 0, 0, fmt.Errorf("id map %q: %w", idmap, err)
	}
	uid, gid = -1, -1
	for _, e := range entries {
		if e.Nsid > 0 || e.Nsid+e.Maprange <= 0 {
			continue
		}
		if e.Isuid && uid < 0 {
			uid = int(e.Hostid)
		}
		if e.Isgid && gid < 0 {
			gid = int(e.Hostid)
		}
	}
	if uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("id map %q does not map root", idmap)
	}
	return uid, gid, nil
}

// Instance is one LXD container.
type Instance struct {
	p       *Platform
	id      string
	spec    platform.Spec
	volume  string
	bridge  *hostnet.Bridge
	addr    netip.Addr
	created bool

	done     chan struct{} // closed when the main process ended, or at Close
	stopMain context.CancelFunc
	code     int
	mainErr  error
	stderr   local.TailBuffer

	mu     sync.Mutex
	closed bool

	bootState string // init=system: systemd's state once booted
}

// ID is the instance name ("isob-x...").
func (in *Instance) ID() string { return in.id }

func (in *Instance) isClosed() bool { return instguard.Closed(&in.mu, &in.closed) }

// Address is the bridge lease, "" with network=none.
func (in *Instance) Address(ctx context.Context) (string, error) {
	if in.addr.IsValid() {
		return in.addr.String(), nil
	}
	return "", nil
}

// Facts implements platform.Instance.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := map[string]string{"id": in.id, "network": in.spec.Network, "storage": "dir", "storage_pool": in.p.pool,
		"privileged": strconv.FormatBool(in.p.privileged)}
	if in.volume != "" {
		f["storage"] = "dir+disk-volume"
	}
	if in.spec.CPUs > 0 {
		f["cpus"] = strconv.FormatFloat(in.spec.CPUs, 'f', -1, 64)
		f["cpu_allowance"] = cpuAllowance(in.spec.CPUs)
	}
	if in.spec.Memory > 0 {
		f["memory"] = strconv.FormatInt(in.spec.Memory, 10)
		cgroup.SwapFacts(f, in.spec.Memory) // noSwapLXC
	}
	if in.addr.IsValid() {
		f["address"] = in.addr.String()
	}
	// the workloads' and the init's, see the package doc
	f["capabilities"] = "docker-default"
	f["seccomp_profile"] = "docker-default"
	f["devices"] = confine.DockerDevicesList()
	f["init_capabilities"] = "lxd-default"
	f["init_seccomp_profile"] = "none"
	var st instanceState
	if err := in.p.c.sync(ctx, http.MethodGet, "/1.0/instances/"+escape(in.id)+"/state", nil, &st); err == nil && st.Pid > 0 {
		if c, err := local.ProcConfinement(st.Pid); err == nil {
			for k, v := range c {
				f["init_"+k] = v
			}
		}
	}
	return f
}

// CopyIn writes the host file into the container through exec (so it
// also lands in a volume mounted there).
func (in *Instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	return local.CopyIn(ctx, in.Exec, "lxd", hostPath, guestPath, mode)
}

// Wait waits for the main process's exit status; an idle instance's Wait
// returns 0 once it is closed.
func (in *Instance) Wait(ctx context.Context) (int, error) {
	select {
	case <-in.done:
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	if len(in.spec.Main) == 0 {
		return 0, nil
	}
	if in.mainErr != nil {
		return in.code, fmt.Errorf("lxd: main process: %w: %s", in.mainErr, in.stderr.String())
	}
	return in.code, nil
}

// Close stops and deletes the container, releases its lease and removes
// its volume directory. It is safe to call more than once.
func (in *Instance) Close(ctx context.Context) error {
	if !instguard.First(&in.mu, &in.closed) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var errs []error
	if in.created {
		path := "/1.0/instances/" + in.id
		if _, err := in.p.c.async(ctx, http.MethodPut, path+"/state", map[string]any{"action": "stop", "force": true, "timeout": 30}, nil); err != nil &&
			!isNotFound(err) && !strings.Contains(err.Error(), "already stopped") {
			errs = append(errs, fmt.Errorf("lxd: stop %s: %w", in.id, err))
		}
		if _, err := in.p.c.async(ctx, http.MethodDelete, path, nil, nil); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("lxd: delete %s: %w", in.id, err))
		}
	}
	if in.stopMain != nil {
		select {
		case <-in.done:
		case <-time.After(10 * time.Second):
			in.stopMain()
			<-in.done
		}
	} else {
		close(in.done)
	}
	if in.addr.IsValid() {
		if err := local.ReleaseLease(ctx, in.bridge, in.addr); err != nil {
			errs = append(errs, err)
		}
	}
	if in.volume != "" {
		if err := os.RemoveAll(in.volume); err != nil {
			errs = append(errs, fmt.Errorf("lxd: volume: %w", err))
		}
	}
	return errors.Join(errs...)
}

// env is the environment of every exec.
func execEnv() map[string]string {
	env := map[string]string{}
	for _, kv := range local.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	env[guestenv.ScratchEnv] = guestenv.ScratchDir
	return env
}
