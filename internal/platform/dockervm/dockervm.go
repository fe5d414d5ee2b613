// Package dockervm is platform docker-in-vm: Docker containers inside a
// QEMU virtual machine, the VM's cost and the container's stacked, as
// Docker-Machine does.
//
// One VM per platform, N containers in it (what Docker-Machine does): the
// VM boots the debian-docker image (the debian profile plus docker.io) from
// its root disk (package qemu), the guest init starts dockerd with its data
// on the VM's scratch disk (overlay2 on ext4 on virtio-blk), and the real
// docker platform code runs in the guest as "isobench platformd docker:..."
// over an exec of the VM's control channel (virtio-serial), driven from
// here by package platformd's client (yamux on that byte stream). The VM is
// booted by Prepare (or the first Create): an instance's startup is the
// container's, not the VM's boot.
//
// Options: every option docker takes (runtime=, image=, and the common
// cpus, memory, network, storage... applied to the container), plus the
// VM's vm-cpus (whole vCPUs; default the spec's cpus rounded up, else all
// host cores), vm-memory (default the spec's memory, at least 1g; else
// 2g), and qemu's accel, kernel and disk (the VM's scratch disk: Docker's
// data root).
//
// Measured here under TCG (no usable KVM; a 2-core host shared with other
// work, load average over 20): VM boot to dockerd answering 1.5 min with
// 2 GB, 4.7 min with 8 GB; the conformance suite, one VM for all its
// instances, 284 s. The VM is booted once per platform, so a run pays it
// once; an instance's startup is the container's in the guest.
//
// Network: dockerd runs without its bridge and without iptables rules, and
// containers use the VM's network (docker network=host inside the guest):
// network=bridge (the default) gives the container the VM's address on the
// isobench bridge, which is what Address returns and where published
// ports are; network=none is the container's own empty namespace.
// network=host (this machine's network) and nat are refused.
//
// Footprint: a container's is its share of the VM's (the QEMU process's
// cgroup and the VM's disk files), the VM's cost divided among the
// containers alive in it; see footprint.go.
package dockervm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/guest"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/docker"
	"github.com/isobench/isobench/internal/platform/platformd"
	"github.com/isobench/isobench/internal/platform/qemu"
	"github.com/isobench/isobench/internal/spec"
)

// Name is the platform's name.
const Name = "docker-in-vm"

// vmKeys are the options that configure the VM, not the docker platform.
var vmKeys = []string{"vm-cpus", "vm-memory", "accel", "kernel", "disk"}

// Factory registers docker-in-vm.
var Factory = platform.Factory{
	Name: Name,
	Help: "Docker containers inside one QEMU VM per platform (Docker-Machine): docker's options for the containers, " +
		"vm-cpus=N, vm-memory=SIZE, accel=, kernel=, disk= for the VM; network=bridge (default: the container uses the VM's address) or none",
	Extra: append(append([]string(nil), docker.Factory.Extra...), vmKeys...),
	New:   New,
	// guests schedule their own vCPUs
	OwnCPUs: true,
	// Once: the VM boots (minutes under TCG; an 8 GB VM took 1.5 to 4.7 min here)
	Cost: platform.Cost{Instance: 3 * time.Second, Once: 3 * time.Minute},
	// what is left on this host is the VM (its run directory, processes,
	// tap, disk, cgroup): a QEMU VM as qemu's Sweep lists it (the
	// containers died with it); with qemu registered too, package cleanup
	// lists each once
	Sweep: qemu.Sweep,
}

// DockerTimeout bounds the wait for dockerd in a booted guest. It is a
// hang guard: under TCG on a busy 2-core host, boot to dockerd answering
// took 1.5 min (2 GB VM) to 4.7 min (8 GB VM, load average 24).
const DockerTimeout = 15 * time.Minute

// GuestStateDir is the guest docker platform's state dir (on the scratch
// disk).
const GuestStateDir = guestenv.ScratchDir + "/isobench-state"

// Platform is docker-in-vm.
type Platform struct {
	env        platform.Env
	vm         *qemu.Platform
	vmSpec     platform.Spec
	remoteSpec string

	mu      sync.Mutex
	inst    *qemu.Instance
	client  platform.Platform
	bootErr error
	stop    context.CancelFunc
	served  chan struct{}
	stderr  *tailWriter
	booted  time.Duration

	share ledger // the VM's cost dealt out to its containers (footprint.go)
}

// New checks the options; the VM boots at Prepare or the first Create.
func New(ctx context.Context, o platform.Options, env platform.Env) (platform.Platform, error) {
	switch o.Base.Network {
	case platform.NetDefault, platform.NetBridge, platform.NetNone:
	default:
		return nil, fmt.Errorf("%s: network=%q is %w: the container uses the VM's network (bridge, the default) or none", Name, o.Base.Network, platform.ErrUnsupported)
	}
	vs := platform.Spec{Name: "docker-vm", Image: image.DebianDocker, Network: platform.NetBridge, Storage: platform.StorageRootfs}
	vs.CPUs = math.Ceil(o.Base.CPUs)
	if v := o.Extra["vm-cpus"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: vm-cpus=%q must be a whole number of vCPUs", Name, v)
		}
		vs.CPUs = float64(n)
	}
	if vs.CPUs == 0 {
		vs.CPUs = float64(runtime.NumCPU())
	}
	vs.Memory = max(o.Base.Memory, 1<<30)
	if o.Base.Memory == 0 {
		vs.Memory = 2 << 30
	}
	if v := o.Extra["vm-memory"]; v != "" {
		n, err := spec.ParseSize(v)
		if err != nil || n < 256<<20 {
			return nil, fmt.Errorf("%s: vm-memory=%q must be a size of at least 256m", Name, v)
		}
		vs.Memory = n
	}
	qo := platform.Options{Name: "qemu", Extra: map[string]string{}, Raw: map[string]string{}}
	for _, k := range []string{"accel", "kernel", "disk"} {
		if v := o.Extra[k]; v != "" {
			qo.Extra[k], qo.Raw[k] = v, v
		}
	}
	qo.Base = vs
	vm, err := qemu.NewPlatform(qo, env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	params := maps.Clone(o.Raw)
	for _, k := range append(vmKeys, "network") {
		delete(params, k)
	}
	return &Platform{env: env, vm: vm, vmSpec: vs, remoteSpec: (spec.Spec{Name: "docker", Params: params}).String()}, nil
}

// Name implements platform.Platform.
func (p *Platform) Name() string { return Name }

// Available needs what qemu needs and mmdebstrap for the image (or a
// built one).
func (p *Platform) Available(ctx context.Context) error {
	if err := p.vm.Available(ctx); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	return nil
}

// Facts are the VM platform's facts (accelerator, kernel...), the guest
// docker platform's (prefixed guest.) once the VM runs, and the VM's size.
func (p *Platform) Facts(ctx context.Context) map[string]string {
	f := map[string]string{}
	for k, v := range p.vm.Facts(ctx) {
		f["vm."+k] = v
	}
	f["vm_cpus"] = strconv.Itoa(int(p.vmSpec.CPUs))
	f["vm_memory"] = strconv.FormatInt(p.vmSpec.Memory, 10)
	f["vm_image"] = p.vmSpec.Image
	f["guest_platform"] = p.remoteSpec
	p.mu.Lock()
	c, booted := p.client, p.booted
	p.mu.Unlock()
	if c != nil {
		for k, v := range c.Facts(ctx) {
			if !strings.HasPrefix(k, "host") {
				f["guest."+k] = v
			}
		}
		f["vm_boot_to_docker_ns"] = strconv.FormatInt(int64(booted), 10)
	}
	return f
}

// Prepare boots the VM (building its root disk if needed) and prepares
// profile in the guest's Docker, so neither is timed as a startup.
func (p *Platform) Prepare(ctx context.Context, profile string) error {
	if err := checkImage(profile); err != nil {
		return err
	}
	c, err := p.guest(ctx)
	if err != nil {
		return err
	}
	if pr, ok := c.(platform.Preparer); ok {
		return pr.Prepare(ctx, profile)
	}
	return nil
}

// guest returns the client of the guest's docker platform, booting the VM
// and starting dockerd and platformd on first use.
func (p *Platform) guest(ctx context.Context) (platform.Platform, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil {
		return p.client, nil
	}
	if p.bootErr != nil {
		return nil, p.bootErr
	}
	c, err := p.boot(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.bootErr = err // a boot that failed on its own fails again
		}
		return nil, err
	}
	p.client = c
	return c, nil
}

func (p *Platform) boot(ctx context.Context) (_ platform.Platform, err error) {
	start := time.Now()
	vm, err := p.vm.CreateVM(ctx, p.vmSpec, guest.ServiceDocker)
	if err != nil {
		return nil, fmt.Errorf("%s: booting the VM: %w", Name, err)
	}
	defer func() {
		if err != nil {
			vm.Close(context.WithoutCancel(ctx))
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, DockerTimeout)
	defer cancel()
	wait := "for i in $(seq 3000); do docker version >/dev/null 2>&1 && exit 0; sleep 0.1; done; " +
		"echo dockerd did not answer; tail -20 " + guest.DockerLog + "; exit 1"
	var out strings.Builder
	if err := vm.Exec(wctx, []string{"sh", "-c", wait}, platform.ExecIO{Stdout: &out, Stderr: &out}); err != nil {
		return nil, fmt.Errorf("%s: dockerd in the guest: %w: %s", Name, err, strings.TrimSpace(out.String()))
	}
	booted := time.Since(start)
	// platformd's stdin and stdout are the byte stream platformd's yamux runs on
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan struct{})
	stderr := &tailWriter{}
	go func() {
		defer close(served)
		err := vm.Exec(sctx, []string{image.AgentPath, "platformd", "--state-dir", GuestStateDir, p.remoteSpec},
			platform.ExecIO{Stdin: inR, Stdout: outW, Stderr: stderr})
		outW.CloseWithError(fmt.Errorf("platformd in the VM ended: %v %s", err, stderr.String()))
	}()
	conn := pipeConn{r: outR, w: inW}
	cleanup := func() error {
		inW.Close()
		select {
		case <-served:
		case <-time.After(30 * time.Second):
		}
		stop()
		return nil
	}
	c, err := platformd.NewClient(ctx, conn, "vm "+vm.ID(), cleanup, nil)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	p.inst, p.stop, p.served, p.stderr, p.booted = vm, stop, served, stderr, booted
	if p.env.Log != nil {
		fmt.Fprintf(p.env.Log, "%s: VM %s booted and dockerd answered in %v\n", Name, vm.ID(), booted.Round(time.Millisecond))
	}
	return c, nil
}

// Create starts a container in the VM.
func (p *Platform) Create(ctx context.Context, s platform.Spec) (platform.Instance, error) {
	network := s.Network
	switch s.Network {
	case platform.NetDefault, platform.NetBridge:
		network = platform.NetBridge
		s.Network = platform.NetHost // the VM's network, which is on the bridge
	case platform.NetNone:
	default:
		return nil, fmt.Errorf("%s: network=%q is %w: the container uses the VM's network (bridge, the default) or none", Name, s.Network, platform.ErrUnsupported)
	}
	if err := checkImage(s.Image); err != nil {
		return nil, err
	}
	if len(s.Extra) > 0 {
		s.Extra = maps.Clone(s.Extra)
		for _, k := range vmKeys {
			delete(s.Extra, k)
		}
	}
	c, err := p.guest(ctx)
	if err != nil {
		return nil, err
	}
	p.settle(ctx)
	in, err := c.Create(ctx, s)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	vm := p.inst
	p.mu.Unlock()
	if vm == nil {
		in.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%s: the platform was closed while a container was created", Name)
	}
	inst := &Instance{Instance: in, p: p, vm: vm, network: network}
	p.join(ctx, inst)
	return inst, nil
}

// Close removes the containers (the guest platform closes them), then the
// VM.
func (p *Platform) Close(ctx context.Context) error {
	p.mu.Lock()
	c, vm := p.client, p.inst
	p.client, p.inst = nil, nil
	p.bootErr = errors.New(Name + ": platform closed")
	p.mu.Unlock()
	var errs []error
	if c != nil {
		errs = append(errs, c.Close(ctx))
	}
	if vm != nil {
		errs = append(errs, vm.Close(ctx))
	}
	return errors.Join(errs...)
}

// checkImage refuses the Debian images: the guest's Docker builds images
// from the guest's files, and the Debian one is made with mmdebstrap from
// apt's indexes, which the guest's root does not keep.
func checkImage(profile string) error {
	if image.IsDebian(profile) {
		return fmt.Errorf("%s: image %s is %w: the Docker in the VM would have to build the Debian image inside the guest (its root has no apt indexes); use minimal", Name, profile, platform.ErrUnsupported)
	}
	return nil
}

// Instance is a container in the VM.
type Instance struct {
	platform.Instance
	p       *Platform
	vm      *qemu.Instance
	network string
}

// Address is the VM's address on the isobench bridge (the container
// shares the VM's network), "" with network=none.
func (in *Instance) Address(ctx context.Context) (string, error) {
	if in.network == platform.NetNone {
		return "", nil
	}
	return in.vm.Address(ctx)
}

// Published is the VM's address and port: the container listens in the
// VM's network, which this host reaches on the bridge.
func (in *Instance) Published(ctx context.Context, port int) (string, bool, error) {
	a, err := in.Address(ctx)
	if err != nil || a == "" {
		return "", false, err
	}
	return fmt.Sprintf("%s:%d", a, port), true, nil
}

// Facts are the container's (from the guest's docker platform) and the
// VM's, prefixed vm.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := in.Instance.Facts(ctx)
	if f == nil {
		f = map[string]string{}
	}
	for k, v := range in.vm.Facts(ctx) {
		f["vm."+k] = v
	}
	f["network"] = in.network
	f["network_note"] = "the container uses the VM's network namespace (docker network=host in the guest)"
	return f
}

// pipeConn is the io.ReadWriteCloser yamux runs on.
type pipeConn struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func (c pipeConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c pipeConn) Write(b []byte) (int, error) { return c.w.Write(b) }
func (c pipeConn) Close() error {
	c.w.Close()
	return c.r.Close()
}

// tailWriter keeps the last 2 KiB written (platformd's stderr).
type tailWriter struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(b), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
