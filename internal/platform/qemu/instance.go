package qemu

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
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/isobench/isobench/internal/cgroup"
	"github.com/isobench/isobench/internal/guest"
	"github.com/isobench/isobench/internal/guestenv"
	"github.com/isobench/isobench/internal/hostnet"
	"github.com/isobench/isobench/internal/image"
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/instguard"
	"github.com/isobench/isobench/internal/platform/qemu/vmowner"
)

// lookPath is exec.LookPath (a seam for nothing but readability).
func lookPath(name string) (string, error) { return exec.LookPath(name) }

// createOpts are internal knobs of create (the KVM probe uses them).
type createOpts struct {
	accel     string
	noDisk    bool
	guestInit string // guest.ParamInit, e.g. guest.ServiceDocker
}

// Create boots a VM and waits for its agent's hello.
func (p *Platform) Create(ctx context.Context, s platform.Spec) (platform.Instance, error) {
	if err := checkSpec(s); err != nil {
		return nil, err
	}
	accel, _, err := p.resolveAccel(ctx)
	if err != nil {
		return nil, err
	}
	return p.create(ctx, s, createOpts{accel: accel})
}

// Instance is one QEMU VM.
type Instance struct {
	p       *Platform
	spec    platform.Spec
	id      string
	accel   string
	cpus    int
	memory  int64
	network string
	storage string
	kernel  kernel

	rootDisk  string // shared root disk image (snapshot=on), "" for an initramfs root
	guestInit string

	runDir    string        // sockets, console log
	overlay   string        // where snapshot=on's overlay goes (vmowner.OverlayDir)
	cgName    string        // cgroup isobench/<cgName> (the run dir's name), "" before it exists
	cg        *cgroup.Group // qemu and virtiofsd run in it, for footprint accounting
	cgErr     error         // why cg is nil
	disk      string        // scratch image, "" if none
	volume    string        // virtiofs host dir, "" if none
	tap       string
	bridge    *hostnet.Bridge
	lease     netip.Addr
	cmd       *exec.Cmd
	vfs       *exec.Cmd
	qemuOut   bytes.Buffer  // qemu's stderr
	exited    chan struct{} // qemu ended
	cacheMode string

	conn  *conn
	hello guest.Hello

	mainDone chan struct{}
	mainExit guest.Exit
	mainErr  error

	mu        sync.Mutex
	closed    bool
	closeErr  error
	closeDone chan struct{}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '-'
	}, s)
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

func (p *Platform) create(ctx context.Context, s platform.Spec, o createOpts) (_ *Instance, err error) {
	if err := checkSpec(s); err != nil {
		return nil, err
	}
	k, err := p.findKernel()
	if err != nil {
		return nil, err
	}
	profile := s.Image
	if profile == "" {
		profile = image.Minimal
	}
	rootDisk := ""
	if usesRootDisk(profile) {
		if rootDisk, err = p.buildRootDisk(ctx, profile); err != nil {
			return nil, err
		}
	}
	initrd := p.initrd
	if initrd == "" {
		if initrd, err = p.buildInitramfs(ctx, profile, k); err != nil {
			return nil, err
		}
	}
	in := &Instance{
		p: p, spec: s, accel: o.accel, kernel: k, rootDisk: rootDisk, guestInit: o.guestInit,
		id:        "isobench-" + sanitize(s.Name) + "-" + randomHex(3),
		cpus:      int(s.CPUs),
		memory:    s.Memory,
		network:   s.Network,
		storage:   s.Storage,
		exited:    make(chan struct{}),
		mainDone:  make(chan struct{}),
		closeDone: make(chan struct{}),
	}
	if s.Name == "" {
		in.id = "isobench-" + randomHex(6)
	}
	if in.cpus == 0 {
		in.cpus = runtime.NumCPU()
	}
	if in.memory == 0 {
		in.memory = DefaultMemory
	}
	if in.network == "" {
		in.network = platform.NetBridge
	}
	if in.storage == "" {
		in.storage = platform.StorageRootfs
	}
	if o.noDisk {
		in.storage = ""
	}
	defer func() {
		if err != nil {
			in.Close(context.WithoutCancel(ctx))
		}
	}()
	p.sweepStale(ctx, "")
	// unix socket paths are short: keep them out of the state dir, in
	// isobench's own host-wide directory (not the temporary directory,
	// where anyone can plant a run dir and its owner record)
	base, err := vmowner.MakeBase("")
	if err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	if in.runDir, err = os.MkdirTemp(base, vmowner.DirPrefix+"*"); err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	// an owner record lets a later Create remove what a killed process
	// left, and tells other processes whose run dir, tap, disk and volume
	// these are: written at once, and again as prepare names each of them
	if err := in.writeOwner(); err != nil {
		return in, err
	}
	// the VM's own cgroup, for its footprint: named (and recorded) before
	// it exists, so a crash leaves nothing the owner record does not name
	in.cgName = filepath.Base(in.runDir)
	if err := in.writeOwner(); err != nil {
		return in, err
	}
	if in.cg, err = cgroup.New(in.cgName, cgroup.Limits{}); err != nil {
		if in.p.quota > 0 {
			// the quota is the measurement's condition: no VM without it
			return in, fmt.Errorf("qemu: quota=%g needs the VM's cgroup: %w", in.p.quota, err)
		}
		in.cgErr = err // the VM runs; only Footprint fails, saying why
	}
	args, err := in.prepare(ctx, initrd)
	if err != nil {
		return in, err
	}
	if err := in.writeOwner(); err != nil {
		return in, err
	}
	cmd := in.command(Binary, args...)
	cmd.Stderr = &lockedWriter{w: &in.qemuOut, mu: &in.mu}
	// snapshot=on's temporary overlay of a root disk goes into a private
	// directory on the state dir's disk (QEMU 7.2 unlinks it at once and
	// keeps it open: Footprint counts it through /proc/PID/fd), not into
	// /var/tmp nor the run dir, which /run may keep in RAM
	if _, err := in.p.privateDir("overlays"); err != nil {
		return in, err
	}
	in.overlay = vmowner.OverlayDir(in.p.env.StateDir, filepath.Base(in.runDir))
	if err := os.Mkdir(in.overlay, 0o700); err != nil {
		in.overlay = ""
		return in, fmt.Errorf("qemu: overlay directory: %w", err)
	}
	cmd.Env = append(os.Environ(), "TMPDIR="+in.overlay)
	if err := in.start(cmd); err != nil {
		return in, fmt.Errorf("qemu: starting %s: %w", Binary, err)
	}
	in.cmd = cmd
	go func() {
		cmd.Wait()
		close(in.exited)
	}()
	if s.Phase != nil {
		s.Phase("created", time.Now())
	}
	// a guest whose kernel stalls during boot is given up on when it says
	// so, not when the boot's timeout runs out
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	stalled := watchConsole(wctx, filepath.Join(in.runDir, "console.log"), time.Second)
	if in.conn, err = in.connect(ctx); err != nil {
		return in, err
	}
	select {
	case line := <-stalled:
		return in, fmt.Errorf("qemu: the guest kernel stalled during boot (%q): a TCG guest on a busy host can; run fewer instances at once, or run again%s", line, in.diagnostics())
	case h := <-in.conn.hello:
		in.hello = h
	case <-in.conn.dead:
		return in, fmt.Errorf("qemu: guest control channel closed before hello: %w%s", in.conn.err(), in.diagnostics())
	case <-in.exited:
		return in, fmt.Errorf("qemu: VM exited during boot%s", in.diagnostics())
	case <-ctx.Done():
		return in, fmt.Errorf("qemu: waiting for the guest agent: %w%s", ctx.Err(), in.diagnostics())
	}
	if in.p.quota > 0 {
		if err := in.quotaVCPUs(); err != nil {
			return in, err
		}
	}
	if s.Phase != nil {
		s.Phase("started", time.Now())
	}
	if len(s.Main) > 0 {
		go in.runMain()
	}
	return in, nil
}

// lockedWriter guards a buffer shared with readers.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// diagnostics is qemu's stderr and the console's tail, for boot errors.
func (in *Instance) diagnostics() string {
	in.mu.Lock()
	qe := strings.TrimSpace(in.qemuOut.String())
	in.mu.Unlock()
	var b strings.Builder
	if qe != "" {
		fmt.Fprintf(&b, "\nqemu: %s", qe)
	}
	if c, err := os.ReadFile(filepath.Join(in.runDir, "console.log")); err == nil && len(c) > 0 {
		if len(c) > 3000 {
			c = c[len(c)-3000:]
		}
		fmt.Fprintf(&b, "\nguest console (tail):\n%s", strings.TrimSpace(string(c)))
	}
	return b.String()
}

// prepare creates the tap, disk and volume and returns qemu's arguments.
func (in *Instance) prepare(ctx context.Context, initrd string) ([]string, error) {
	p := in.p
	cmdline := []string{"console=ttyS0", "quiet", "panic=-1", "rdinit=/init",
		guest.ParamPort + "=" + guest.DefaultPort, guest.ParamHostname + "=" + truncate(in.id, 63)}
	args := []string{
		// debug-threads names QEMU's threads ("CPU 0/TCG", "CPU 0/KVM"):
		// quota= finds the vCPU threads by them
		"-name", in.id + ",debug-threads=on",
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-machine", "q35,accel=" + in.accel,
		"-smp", strconv.Itoa(in.cpus),
		"-m", strconv.FormatInt(in.memory>>20, 10) + "M",
		"-kernel", in.kernel.Path, "-initrd", initrd,
		"-chardev", "file,id=con,path=" + filepath.Join(in.runDir, "console.log"),
		"-serial", "chardev:con",
		"-device", "virtio-serial-pci,id=vser",
		"-chardev", "socket,id=ctl,path=" + filepath.Join(in.runDir, "ctl.sock") + ",server=on,wait=off",
		"-device", "virtserialport,bus=vser.0,chardev=ctl,name=" + guest.DefaultPort,
	}
	if in.accel == AccelKVM {
		args = append(args, "-cpu", "host")
	} else {
		args = append(args, "-cpu", "max")
	}
	scratchDev := "/dev/vda"
	if in.rootDisk != "" {
		// first virtio disk, so /dev/vda; snapshot=on: this VM's writes go
		// to qemu's own temporary overlay, the shared image is read only
		args = append(args, "-drive", "file="+in.rootDisk+",format=raw,if=virtio,snapshot=on,cache=unsafe")
		cmdline = append(cmdline, guest.ParamRoot+"=/dev/vda:ext4")
		scratchDev = "/dev/vdb"
	}
	if in.guestInit != "" {
		cmdline = append(cmdline, guest.ParamInit+"="+in.guestInit)
	}
	switch in.network {
	case platform.NetBridge:
		br := hostnet.Default(p.env.StateDir)
		// lease before Ensure: a concurrent Release then keeps the bridge
		tap := "isq" + randomHex(5)
		a, err := br.Lease(in.id, tap)
		if err != nil {
			return nil, fmt.Errorf("qemu: %w", err)
		}
		in.bridge, in.lease = br, a
		p.bridgeMu.Lock()
		err = br.Ensure(ctx)
		p.bridgeMu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("qemu: %w", err)
		}
		in.tap = tap
		if err := in.writeOwner(); err != nil {
			return nil, err
		}
		if err := br.AddTap(ctx, in.tap); err != nil {
			// another isobench process with another state dir may have
			// removed the shared bridge in between: make it again once
			p.bridgeMu.Lock()
			err = br.Ensure(ctx)
			p.bridgeMu.Unlock()
			if err == nil {
				err = br.AddTap(ctx, in.tap)
			}
			if err != nil {
				in.tap = ""
				return nil, fmt.Errorf("qemu: %w", err)
			}
		}
		mac := "52:54:00:" + strings.Join([]string{randomHex(1), randomHex(1), randomHex(1)}, ":")
		args = append(args,
			"-netdev", "tap,id=n0,ifname="+in.tap+",script=no,downscript=no",
			"-device", "virtio-net-pci,netdev=n0,mac="+mac)
		cmdline = append(cmdline,
			guest.ParamIP+"="+netip.PrefixFrom(a, br.Prefix.Bits()).String(),
			guest.ParamGateway+"="+br.Gateway().String())
	case platform.NetNone:
	}
	switch in.storage {
	case platform.StorageRootfs:
		if _, err := p.privateDir("disks"); err != nil {
			return nil, err
		}
		in.disk = vmowner.DiskPath(p.env.StateDir, in.id)
		if err := in.writeOwner(); err != nil {
			return nil, err
		}
		if err := makeDisk(ctx, in.disk, p.disk); err != nil {
			if errors.Is(err, os.ErrExist) {
				in.disk = "" // another VM's: not ours to remove
			}
			return nil, err
		}
		in.cacheMode = "none"
		if !directIO(in.disk) {
			in.cacheMode = "writeback"
		}
		args = append(args, "-drive", "file="+in.disk+",format=raw,if=virtio,cache="+in.cacheMode+",aio=threads,discard=unmap")
		cmdline = append(cmdline, guest.ParamScratch+"="+scratchDev+":ext4")
	case platform.StorageVolume:
		vfsd := ""
		for _, c := range VirtiofsdCandidates {
			if _, err := os.Stat(c); err == nil {
				vfsd = c
				break
			}
		}
		if vfsd == "" {
			return nil, fmt.Errorf("qemu: storage=volume is %w here: no virtiofsd (looked at %s; the kernel has no 9p): apt-get install -y qemu-system-x86", platform.ErrUnsupported, strings.Join(VirtiofsdCandidates, ", "))
		}
		if _, err := p.privateDir("volumes"); err != nil {
			return nil, err
		}
		in.volume = vmowner.VolumePath(p.env.StateDir, in.id)
		if err := in.writeOwner(); err != nil {
			return nil, err
		}
		if err := os.Mkdir(in.volume, 0o755); err != nil {
			in.volume = "" // not ours to remove
			return nil, fmt.Errorf("qemu: %w", err)
		}
		sock := filepath.Join(in.runDir, "vfs.sock")
		vfs := in.command(vfsd, "--socket-path="+sock, "-o", "source="+in.volume, "-o", "cache=none", "-o", "sandbox=chroot")
		var vout bytes.Buffer
		vfs.Stderr = &lockedWriter{w: &vout, mu: &in.mu}
		if err := in.start(vfs); err != nil {
			return nil, fmt.Errorf("qemu: starting virtiofsd: %w", err)
		}
		in.vfs = vfs
		if err := waitSocket(ctx, sock, 10*time.Second); err != nil {
			in.mu.Lock()
			msg := vout.String()
			in.mu.Unlock()
			return nil, fmt.Errorf("qemu: virtiofsd: %w %s", err, strings.TrimSpace(msg))
		}
		args = append(args,
			"-chardev", "socket,id=vfs,path="+sock,
			"-device", "vhost-user-fs-pci,chardev=vfs,tag=scratch",
			"-object", "memory-backend-memfd,id=mem,size="+strconv.FormatInt(in.memory>>20, 10)+"M,share=on",
			"-numa", "node,memdev=mem")
		cmdline = append(cmdline, guest.ParamScratch+"=scratch:virtiofs")
	}
	cmdline = append(cmdline, "--", "agent", "vm-init")
	args = append(args, "-append", strings.Join(cmdline, " "))
	return args, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// makeDisk creates a sparse raw image of size bytes formatted ext4.
func makeDisk(ctx context.Context, path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("qemu: scratch disk: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("qemu: scratch disk: %w", err)
	}
	out, err := exec.CommandContext(ctx, "mkfs.ext4", "-F", "-q", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("qemu: mkfs.ext4 %s: %w: %s", path, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// directIO reports whether path can be opened with O_DIRECT.
func directIO(path string) bool {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECT|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	syscall.Close(fd)
	return true
}

func waitSocket(ctx context.Context, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("socket %s did not appear within %v", path, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// connect dials the control socket qemu listens on.
func (in *Instance) connect(ctx context.Context) (*conn, error) {
	sock := filepath.Join(in.runDir, "ctl.sock")
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", sock)
		if err == nil {
			return newConn(c), nil
		}
		select {
		case <-in.exited:
			return nil, fmt.Errorf("qemu: VM exited at start%s", in.diagnostics())
		case <-ctx.Done():
			return nil, fmt.Errorf("qemu: control socket: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (in *Instance) guestArgv(argv []string) []string {
	return platform.AgentArgv(argv, image.AgentPath)
}

func (in *Instance) runMain() {
	defer close(in.mainDone)
	w := in.spec.MainStdout
	ex, err := in.conn.exec(context.Background(), guest.ExecRequest{Argv: in.guestArgv(in.spec.Main), Dir: guestenv.ScratchDir}, platform.ExecIO{Stdout: w})
	in.mainExit, in.mainErr = ex, err
}

// ID is the VM's name.
func (in *Instance) ID() string { return in.id }

func (in *Instance) isClosed() bool { return instguard.Closed(&in.mu, &in.closed) }

// Exec runs argv in the guest through the control channel.
func (in *Instance) Exec(ctx context.Context, argv []string, stdio platform.ExecIO) error {
	if err := instguard.Exec("qemu", in.id, argv, in.isClosed); err != nil {
		return err
	}
	ex, err := in.conn.exec(ctx, guest.ExecRequest{Argv: in.guestArgv(argv), Stdin: stdio.Stdin != nil, Dir: "/"}, stdio)
	if err != nil {
		return err
	}
	if ex.Error != "" {
		return fmt.Errorf("qemu: exec %q in the guest: %s", argv, ex.Error)
	}
	if ex.Code != 0 {
		return &platform.ExitError{Code: ex.Code, Argv: argv}
	}
	return nil
}

// CopyIn sends a host file to guestPath (parents are created; an existing
// file is replaced).
func (in *Instance) CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error {
	if in.isClosed() {
		return fmt.Errorf("qemu: instance %s is closed", in.id)
	}
	f, err := os.Open(hostPath)
	if err != nil {
		return fmt.Errorf("qemu: copy in: %w", err)
	}
	defer f.Close()
	ex, err := in.conn.put(ctx, guest.PutRequest{Path: guestPath, Mode: mode}, f)
	if err != nil {
		return fmt.Errorf("qemu: copy in: %w", err)
	}
	if ex.Error != "" || ex.Code != 0 {
		return fmt.Errorf("qemu: copy in %s: %s", guestPath, ex.Error)
	}
	return nil
}

// Address is the leased bridge address, or "" with network=none.
func (in *Instance) Address(ctx context.Context) (string, error) {
	if in.lease.IsValid() {
		return in.lease.String(), nil
	}
	return "", nil
}

// Facts implements platform.Instance.
func (in *Instance) Facts(ctx context.Context) map[string]string {
	f := map[string]string{
		"accel":           in.accel,
		"cpus":            strconv.Itoa(in.cpus),
		"memory":          strconv.FormatInt(in.memory, 10),
		"network":         in.network,
		"storage":         in.storage,
		"kernel":          in.kernel.Version,
		"guest_kernel":    in.hello.Kernel,
		"guest_cpus":      strconv.Itoa(in.hello.CPUs),
		"guest_mem_total": strconv.FormatInt(in.hello.MemTotal, 10),
		"guest_uptime_ns": strconv.FormatInt(in.hello.UptimeNS, 10),
		"scratch":         in.hello.Scratch,
		"root":            "initramfs (RAM)",
	}
	if in.rootDisk != "" {
		f["root"] = "ext4 disk " + filepath.Base(in.rootDisk) + " (shared, copy-on-write per VM)"
	}
	if in.tap != "" {
		f["tap"] = in.tap
	}
	if in.cacheMode != "" {
		f["disk_cache"] = in.cacheMode
		f["disk_size"] = strconv.FormatInt(in.p.disk, 10)
	}
	if in.hello.Warnings != "" {
		f["guest_warnings"] = in.hello.Warnings
	}
	return f
}

// Wait returns the main process's status, or waits for the VM to stop.
func (in *Instance) Wait(ctx context.Context) (int, error) {
	if len(in.spec.Main) == 0 {
		select {
		case <-in.exited:
			return 0, nil
		case <-in.closeDone:
			return 0, nil
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	}
	select {
	case <-in.mainDone:
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	if in.mainErr != nil {
		return -1, in.mainErr
	}
	if in.mainExit.Error != "" {
		return in.mainExit.Code, fmt.Errorf("qemu: main process: %s", in.mainExit.Error)
	}
	return in.mainExit.Code, nil
}

// Close kills the VM and removes its tap, lease, disk, volume and sockets.
func (in *Instance) Close(ctx context.Context) error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		<-in.closeDone
		return in.closeErr
	}
	in.closed = true
	in.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	var errs []error
	for _, c := range []*exec.Cmd{in.cmd, in.vfs} {
		if c != nil && c.Process != nil {
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
	}
	if in.cmd != nil {
		<-in.exited
	}
	if in.vfs != nil {
		in.vfs.Wait()
	}
	if in.conn != nil {
		in.conn.close()
	}
	if in.tap != "" {
		if err := hostnet.DeleteLink(ctx, in.tap); err != nil {
			errs = append(errs, err)
		}
	}
	if in.bridge != nil && in.lease.IsValid() {
		if err := in.bridge.Release(ctx, in.lease); err != nil {
			// removing the bridge raced with another process doing so
			if _, serr := os.Stat("/sys/class/net/" + in.bridge.Name); serr == nil {
				errs = append(errs, err)
			}
		}
	}
	paths := []string{in.disk, in.volume, in.overlay, in.runDir}
	if err := in.cg.Remove(); err != nil {
		// keep the run dir: its owner record names the cgroup for
		// isobench clean (and the next Create's sweep)
		errs = append(errs, fmt.Errorf("qemu: %w", err))
		paths = paths[:3]
	}
	for _, path := range paths {
		if path != "" {
			if err := os.RemoveAll(path); err != nil {
				errs = append(errs, err)
			}
		}
	}
	in.closeErr = errors.Join(errs...)
	close(in.closeDone)
	return in.closeErr
}

// conn is the host end of the control channel.
type conn struct {
	c     net.Conn
	w     *guest.Writer
	hello chan guest.Hello
	dead  chan struct{}

	mu      sync.Mutex
	next    uint32
	streams map[uint32]*hostStream
	readErr error
}

type hostStream struct {
	stdout, stderr *guest.Queue
	exit           chan guest.Exit
}

func newConn(c net.Conn) *conn {
	k := &conn{c: c, w: guest.NewWriter(c), hello: make(chan guest.Hello, 1), dead: make(chan struct{}), streams: map[uint32]*hostStream{}}
	go k.read()
	return k
}

func (k *conn) err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.readErr
}

func (k *conn) close() { k.c.Close() }

func (k *conn) read() {
	defer close(k.dead)
	for {
		f, err := guest.ReadFrame(k.c)
		if err != nil {
			k.mu.Lock()
			k.readErr = err
			k.mu.Unlock()
			return
		}
		switch f.Type {
		case guest.FrameHello:
			var h guest.Hello
			json.Unmarshal(f.Payload, &h)
			select {
			case k.hello <- h:
			default:
			}
		case guest.FrameStdout, guest.FrameStderr:
			k.mu.Lock()
			st := k.streams[f.Stream]
			k.mu.Unlock()
			if st != nil {
				if f.Type == guest.FrameStdout {
					st.stdout.Push(f.Payload)
				} else {
					st.stderr.Push(f.Payload)
				}
			}
		case guest.FrameExit:
			var e guest.Exit
			if err := json.Unmarshal(f.Payload, &e); err != nil {
				e = guest.Exit{Code: -1, Error: "bad exit frame: " + err.Error()}
			}
			k.mu.Lock()
			st := k.streams[f.Stream]
			delete(k.streams, f.Stream)
			k.mu.Unlock()
			if st != nil {
				st.exit <- e
			}
		}
	}
}

func (k *conn) open(stdout, stderr io.Writer) (uint32, *hostStream) {
	st := &hostStream{stdout: guest.NewQueue(stdout, nil), stderr: guest.NewQueue(stderr, nil), exit: make(chan guest.Exit, 1)}
	k.mu.Lock()
	k.next++
	id := k.next
	k.streams[id] = st
	k.mu.Unlock()
	return id, st
}

// wait waits for a stream's exit; on cancel it kills the command.
func (k *conn) wait(ctx context.Context, id uint32, st *hostStream, stop chan struct{}) (guest.Exit, error) {
	defer close(stop)
	select {
	case e := <-st.exit:
		st.stdout.Close()
		st.stderr.Close()
		<-st.stdout.Done()
		<-st.stderr.Done()
		return e, nil
	case <-k.dead:
		st.stdout.Abort()
		st.stderr.Abort()
		return guest.Exit{}, fmt.Errorf("qemu: guest control channel lost: %v", k.err())
	case <-ctx.Done():
		k.w.Write(guest.FrameKill, id, nil)
		st.stdout.Abort()
		st.stderr.Abort()
		<-st.stdout.Done()
		<-st.stderr.Done()
		return guest.Exit{}, fmt.Errorf("qemu: %w", ctx.Err())
	}
}

func (k *conn) exec(ctx context.Context, req guest.ExecRequest, stdio platform.ExecIO) (guest.Exit, error) {
	id, st := k.open(stdio.Stdout, stdio.Stderr)
	stop := make(chan struct{})
	if err := k.w.WriteJSON(guest.FrameExec, id, req); err != nil {
		return guest.Exit{}, fmt.Errorf("qemu: exec: %w", err)
	}
	if req.Stdin {
		go k.w.SendData(id, stdio.Stdin, stop)
	}
	return k.wait(ctx, id, st, stop)
}

func (k *conn) put(ctx context.Context, req guest.PutRequest, r io.Reader) (guest.Exit, error) {
	id, st := k.open(nil, nil)
	stop := make(chan struct{})
	if err := k.w.WriteJSON(guest.FramePut, id, req); err != nil {
		return guest.Exit{}, err
	}
	go k.w.SendData(id, r, stop)
	return k.wait(ctx, id, st, stop)
}

// writeOwner records this process and the instance's tap, disk, volume
// and cgroup names in its run dir (vmowner: atomically, a reader sees the
// old record or the new one).
func (in *Instance) writeOwner() error {
	rec := vmowner.Record{PID: os.Getpid(), Tap: in.tap, Disk: in.disk, Volume: in.volume, Cgroup: in.cgName}
	if err := rec.Write(in.runDir); err != nil {
		return fmt.Errorf("qemu: owner record: %w", err)
	}
	return nil
}

// OwnedByOthers names the run dirs, taps, disks, volumes and cgroup names
// of VMs whose owner record names another live process (for leftover
// checks that must not count another test's or run's VMs).
func OwnedByOthers() map[string]bool {
	m := map[string]bool{}
	dirs, _, _ := vmowner.List("")
	for _, d := range dirs {
		rec, err := vmowner.Read(d)
		if err != nil {
			continue
		}
		if rec.PID == os.Getpid() || syscall.Kill(rec.PID, 0) != nil {
			continue
		}
		m[d] = true
		for _, v := range []string{rec.Tap, rec.Disk, rec.Volume, rec.Cgroup} {
			if v != "" {
				m[v] = true
			}
		}
	}
	return m
}

// sweepStale removes the run dirs, taps, disks, volumes and cgroups of
// instances whose isobench process died without closing them (their qemu
// died with it: it runs with a parent-death signal). Only what a valid
// owner record names is removed (vmowner.Read), and only when its disk
// and volume are in this platform's state dir: a record naming another
// is left for `isobench clean`, which knows the state dirs of every run;
// one that fails the checks is left as it is, saying why on the log.
// base is vmowner.Base() when empty (tests give their own).
func (p *Platform) sweepStale(ctx context.Context, base string) {
	dirs, _, err := vmowner.List(base)
	if err != nil {
		p.logf("qemu: not sweeping stale VMs: %v\n", err)
		return
	}
	for _, d := range dirs {
		rec, err := vmowner.Read(d)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) { // no record yet: being created
				p.logf("qemu: not sweeping %s: %v\n", d, err)
			}
			continue
		}
		if err := syscall.Kill(rec.PID, 0); !errors.Is(err, syscall.ESRCH) {
			continue // alive, or not ours to signal
		}
		if sd, err := rec.StateDir(); err != nil || sd != "" && sd != p.env.StateDir {
			continue // another state dir's: isobench clean
		}
		if rec.Tap != "" {
			hostnet.DeleteLink(ctx, rec.Tap)
		}
		for _, v := range []string{rec.Disk, rec.Volume} {
			if v != "" {
				os.RemoveAll(v)
			}
		}
		if rec.Cgroup != "" && removeCgroup(rec.Cgroup) != nil {
			continue // keep the record: isobench clean retries
		}
		os.RemoveAll(d)
	}
}

// logf writes to the platform's log, if any.
func (p *Platform) logf(format string, a ...any) {
	if p.env.Log != nil {
		fmt.Fprintf(p.env.Log, format, a...)
	}
}

// CreateVM boots a VM of s whose guest init also starts service
// (guest.ServiceDocker: dockerd), for platforms that run an engine in the
// guest (docker-in-vm). It returns the concrete instance.
func (p *Platform) CreateVM(ctx context.Context, s platform.Spec, service string) (*Instance, error) {
	if err := checkSpec(s); err != nil {
		return nil, err
	}
	accel, _, err := p.resolveAccel(ctx)
	if err != nil {
		return nil, err
	}
	return p.create(ctx, s, createOpts{accel: accel, guestInit: service})
}

// Exited is closed when the VM's qemu process has ended.
func (in *Instance) Exited() <-chan struct{} { return in.exited }

// quotaVCPUs gives each of the VM's vCPU threads a child of its cgroup,
// vcpuN, with option quota='s CFS quota, after the guest booted (the boot
// runs unlimited): as libvirt's vcpu_quota, a limit per vCPU, and none on
// QEMU's own threads (the main loop, I/O, RCU), whose time on the host is
// the emulation's cost and not the guest's share. One group for all vCPUs
// (this tree before) let an idle vCPU spend the busy one's quota: under
// TCG an idle vCPU of a busy guest costs its host thread 0.07-0.12 of a
// CPU (timer ticks and wake-ups, emulated), which the unlimited VM takes
// from the second host CPU, so a 1-thread guest workload got 0.41 of its
// unlimited rate under quota=0.5 (bench/truth.sh) while the group used
// all of its 0.5. Single-threaded TCG runs every vCPU on one thread
// ("ALL CPUs/TCG"), which gets the quota times the vCPUs.
func (in *Instance) quotaVCPUs() error {
	tids, err := vcpuThreads(in.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("qemu: quota=%g: %w", in.p.quota, err)
	}
	if len(tids) == 1 && in.cpus > 1 {
		if err := in.cg.ThreadQuota("vcpus", in.p.quota*float64(in.cpus), tids); err != nil {
			return fmt.Errorf("qemu: quota=%g on the vCPUs' one thread: %w", in.p.quota, err)
		}
		return nil
	}
	for i, tid := range tids {
		if err := in.cg.ThreadQuota("vcpu"+strconv.Itoa(i), in.p.quota, []int{tid}); err != nil {
			return fmt.Errorf("qemu: quota=%g on vCPU thread %d: %w", in.p.quota, tid, err)
		}
	}
	return nil
}

// vcpuThreads lists the threads of QEMU process pid that run vCPUs, by
// the names -name ...,debug-threads=on gives them: "CPU n/TCG" (one per
// vCPU under multi-threaded TCG), "ALL CPUs/TCG" (single-threaded TCG),
// "CPU n/KVM".
func vcpuThreads(pid int) ([]int, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing QEMU's threads: %w", err)
	}
	var tids []int
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "comm"))
		if err != nil {
			continue
		}
		if isVCPUThread(strings.TrimSpace(string(b))) {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				tids = append(tids, tid)
			}
		}
	}
	if len(tids) == 0 {
		return nil, fmt.Errorf("no vCPU thread among QEMU %d's threads (none named \"CPU n/TCG\" or \"CPU n/KVM\")", pid)
	}
	return tids, nil
}

func isVCPUThread(comm string) bool {
	i := strings.LastIndexByte(comm, '/')
	if i < 0 || !(strings.HasPrefix(comm, "CPU ") || strings.HasPrefix(comm, "ALL CPUs")) {
		return false
	}
	switch comm[i+1:] {
	case "TCG", "KVM", "HVF", "WHPX":
		return true
	}
	return false
}
