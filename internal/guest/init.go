package guest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/isobench/isobench/internal/guestenv"
)

// Kernel command line keys the host sets (all optional).
const (
	ParamPort     = "isobench.port"     // virtio-serial port name of the control channel
	ParamIP       = "isobench.ip"       // eth0 address as A.B.C.D/N
	ParamGateway  = "isobench.gw"       // default route via this address
	ParamScratch  = "isobench.scratch"  // SOURCE:FSTYPE mounted at ScratchDir
	ParamHostname = "isobench.hostname" // the guest's host name
	ParamRoot     = "isobench.root"     // DEVICE:FSTYPE the initramfs mounts and switches root to
	ParamInit     = "isobench.init"     // "docker": init starts dockerd (see ServiceDocker)
)

// stageEnv marks the init that runs on the root disk after the initramfs's
// init switched to it.
const stageEnv = "ISOBENCH_GUEST_STAGE"

// DefaultPort is the control port's name when isobench.port is not given.
const DefaultPort = "isobench.0"

// ScratchDir is where the scratch file system is mounted.
const ScratchDir = guestenv.ScratchDir

// ModulesList is the initramfs file naming, one per line and in load
// order, the kernel modules (.ko paths) init loads before anything else.
const ModulesList = "/etc/isobench/modules"

// ProbeOutput is what "vm-init probe" prints: hosts use it to check that an
// agent binary can be a VM's init.
const ProbeOutput = "isobench-guest protocol 1"

const warnEnv = "ISOBENCH_GUEST_WARNINGS"

// Main is "isobench agent vm-init ARGS": with no ARGS the VM's init (pid
// 1), "serve" the exec server init starts, "probe" prints ProbeOutput.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "probe":
			fmt.Fprintln(stdout, ProbeOutput)
			return 0
		case "serve":
			if err := serve(ctx); err != nil {
				fmt.Fprintf(stderr, "isobench vm-init serve: %v\n", err)
				return 1
			}
			return 0
		default:
			fmt.Fprintf(stderr, "isobench vm-init: unknown argument %q (want nothing, serve or probe)\n", args[0])
			return 2
		}
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(stderr, "isobench vm-init: must run as a VM's init (pid 1)")
		return 2
	}
	err := initMain(ctx, stderr)
	fmt.Fprintf(stderr, "isobench vm-init: %v; powering off\n", err)
	syscall.Sync()
	syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
	return 1
}

// cmdline parses /proc/cmdline's key=value words.
func cmdline() map[string]string {
	b, _ := os.ReadFile("/proc/cmdline")
	m := map[string]string{}
	for _, w := range strings.Fields(string(b)) {
		if k, v, ok := strings.Cut(w, "="); ok {
			m[k] = v
		}
	}
	return m
}

func initMain(ctx context.Context, log io.Writer) error {
	mounts := []struct {
		src, dir, fs string
		flags        uintptr
		data         string
	}{
		{"proc", "/proc", "proc", 0, ""},
		{"sysfs", "/sys", "sysfs", 0, ""},
		{"devtmpfs", "/dev", "devtmpfs", 0, ""},
		{"devpts", "/dev/pts", "devpts", 0, "gid=5,mode=620,ptmxmode=666"},
		{"tmpfs", "/dev/shm", "tmpfs", 0, "mode=1777"},
		{"tmpfs", "/run", "tmpfs", 0, "mode=755"},
		{"cgroup2", "/sys/fs/cgroup", "cgroup2", 0, ""},
	}
	var warns []string
	for _, m := range mounts {
		os.MkdirAll(m.dir, 0o755)
		if err := syscall.Mount(m.src, m.dir, m.fs, m.flags, m.data); err != nil && !errors.Is(err, syscall.EBUSY) {
			if m.dir == "/proc" || m.dir == "/sys" || m.dir == "/dev" {
				return fmt.Errorf("mount %s: %w", m.dir, err)
			}
			warns = append(warns, fmt.Sprintf("mount %s: %v", m.dir, err))
		}
	}
	if err := loadModules(ModulesList); err != nil {
		return err
	}
	p := cmdline()
	if r := p[ParamRoot]; r != "" && os.Getenv(stageEnv) == "" {
		return switchRoot(r, mounts[len(mounts)-1].dir, log)
	}
	if h := p[ParamHostname]; h != "" {
		syscall.Sethostname([]byte(h))
		if err := nameHost(HostsFile, hostAddr(p[ParamIP]), h); err != nil {
			warns = append(warns, err.Error())
		}
	}
	if err := noResolver(ResolvFile); err != nil {
		warns = append(warns, err.Error())
	}
	if err := setupNetwork(p[ParamIP], p[ParamGateway]); err != nil {
		return err
	}
	if sc := p[ParamScratch]; sc != "" {
		src, fstype, _ := strings.Cut(sc, ":")
		if err := mountScratch(src, fstype); err != nil {
			return err
		}
	}
	exe := "/proc/self/exe"
	cmd := exec.Command(exe, append(serverArgs(), "serve")...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(append([]string(nil), DefaultEnv...), warnEnv+"="+strings.Join(warns, "; "))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the exec server: %w", err)
	}
	if p[ParamInit] == ServiceDocker {
		startDocker(log)
	}
	// pid 1 only reaps: orphans of commands end up here
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait: %w", err)
		}
		if pid == cmd.Process.Pid {
			return fmt.Errorf("exec server exited (%v)", ws)
		}
	}
}

// switchRoot mounts root ("DEVICE:FSTYPE"), moves it over the
// initramfs's root and executes the agent of the new root as init again
// (with stageEnv set, so it does not switch a second time). The
// initramfs's own mounts are detached first: the next init makes its own.
func switchRoot(root, _ string, log io.Writer) error {
	dev, fstype, _ := strings.Cut(root, ":")
	if fstype == "" {
		fstype = "ext4"
	}
	if err := waitFor(dev, 10*time.Second); err != nil {
		return fmt.Errorf("root disk: %w", err)
	}
	const newRoot = "/newroot"
	os.MkdirAll(newRoot, 0o755)
	if err := syscall.Mount(dev, newRoot, fstype, 0, ""); err != nil {
		return fmt.Errorf("mount root %s (%s): %w", dev, fstype, err)
	}
	// the root disk has no agent of its own (it would tie the disk to one
	// agent build): this one goes onto the VM's copy-on-write root
	agent := filepath.Join(newRoot, AgentPath)
	if err := copyExecutable(AgentPath, agent); err != nil {
		return fmt.Errorf("putting the agent on the root disk: %w", err)
	}
	for _, d := range []string{"/sys/fs/cgroup", "/run", "/dev/shm", "/dev/pts", "/dev", "/sys", "/proc"} {
		syscall.Unmount(d, syscall.MNT_DETACH)
	}
	// the initramfs's files stay in RAM unless removed (what switch_root
	// does): the agent copy is the big one
	os.Remove(AgentPath)
	os.RemoveAll("/lib/isobench-modules")
	if err := os.Chdir(newRoot); err != nil {
		return err
	}
	if err := syscall.Mount(".", "/", "", syscall.MS_MOVE, ""); err != nil {
		return fmt.Errorf("moving the root disk to /: %w", err)
	}
	if err := syscall.Chroot("."); err != nil {
		return fmt.Errorf("chroot to the root disk: %w", err)
	}
	os.Chdir("/")
	env := append(os.Environ(), stageEnv+"=2")
	err := syscall.Exec(AgentPath, append([]string{AgentPath}, serverArgs()...), env)
	return fmt.Errorf("executing the root disk's init %s: %w", AgentPath, err)
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	os.MkdirAll(filepath.Dir(dst), 0o755)
	os.Remove(dst)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// AgentPath is where the agent is on a root disk (image.AgentPath).
const AgentPath = "/usr/local/bin/isobench"

// serverArgs is how init runs itself again: its own argv without the
// trailing vm-init arguments (there are none for init).
func serverArgs() []string {
	if len(os.Args) > 1 {
		return os.Args[1:]
	}
	return []string{"agent", "vm-init"}
}

func loadModules(list string) error {
	f, err := os.Open(list)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		path := strings.TrimSpace(sc.Text())
		if path == "" || strings.HasPrefix(path, "#") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("module %s: %w", path, err)
		}
		if err := initModule(b); err != nil && !errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("loading module %s: %w", path, err)
		}
	}
	return sc.Err()
}

func initModule(image []byte) error {
	if len(image) == 0 {
		return errors.New("empty module")
	}
	params := []byte{0}
	_, _, e := syscall.Syscall(syscall.SYS_INIT_MODULE, uintptr(unsafe.Pointer(&image[0])), uintptr(len(image)), uintptr(unsafe.Pointer(&params[0])))
	runtime.KeepAlive(image)
	if e != 0 {
		return e
	}
	return nil
}

// waitFor polls until path exists or timeout passes.
func waitFor(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %v", path, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mountScratch(src, fstype string) error {
	if strings.HasPrefix(src, "/dev/") {
		if err := waitFor(src, 10*time.Second); err != nil {
			return fmt.Errorf("scratch disk: %w", err)
		}
	}
	os.MkdirAll(ScratchDir, 0o755)
	if err := syscall.Mount(src, ScratchDir, fstype, 0, ""); err != nil {
		return fmt.Errorf("mount scratch %s (%s) on %s: %w", src, fstype, ScratchDir, err)
	}
	return nil
}

// findPort finds the /dev node of the virtio-serial port called name.
func findPort(name string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		names, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
		for _, n := range names {
			b, _ := os.ReadFile(n)
			if strings.TrimSpace(string(b)) == name {
				dev := "/dev/" + filepath.Base(filepath.Dir(n))
				if _, err := os.Stat(dev); err == nil {
					return dev, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("virtio-serial port %q did not appear within %v", name, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func serve(ctx context.Context) error {
	p := cmdline()
	name := p[ParamPort]
	if name == "" {
		name = DefaultPort
	}
	dev, err := findPort(name, 30*time.Second)
	if err != nil {
		return err
	}
	port, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open control port: %w", err)
	}
	defer port.Close()
	h := Hello{Version: ProtocolVersion, CPUs: runtime.NumCPU(), Warnings: os.Getenv(warnEnv), Scratch: p[ParamScratch]}
	if h.Scratch == "" {
		h.Scratch = "rootfs"
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		h.Kernel = utsString(u.Release[:])
	}
	h.MemTotal = memTotal()
	var ts syscall.Timespec
	const clockBoottime = 7
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockBoottime, uintptr(unsafe.Pointer(&ts)), 0); e == 0 {
		h.UptimeNS = ts.Nano()
	}
	return Serve(ctx, port, h)
}

func utsString(b []int8) string {
	var s []byte
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

func memTotal() int64 {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	return 0
}

// setupNetwork brings lo up and, when addr is set, gives eth0 addr.
func setupNetwork(addr, gw string) error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("network: %w", err)
	}
	defer syscall.Close(fd)
	if err := ifUp(fd, "lo"); err != nil {
		return fmt.Errorf("network: lo: %w", err)
	}
	if addr == "" {
		return nil
	}
	pfx, err := netip.ParsePrefix(addr)
	if err != nil || !pfx.Addr().Is4() {
		return fmt.Errorf("network: %s=%q is not an IPv4 prefix", ParamIP, addr)
	}
	if err := waitFor("/sys/class/net/eth0", 10*time.Second); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	if err := ifAddr(fd, "eth0", syscall.SIOCSIFADDR, pfx.Addr().As4()); err != nil {
		return fmt.Errorf("network: eth0 address: %w", err)
	}
	var m [4]byte
	for i := 0; i < pfx.Bits(); i++ {
		m[i/8] |= 0x80 >> (i % 8)
	}
	if err := ifAddr(fd, "eth0", syscall.SIOCSIFNETMASK, m); err != nil {
		return fmt.Errorf("network: eth0 netmask: %w", err)
	}
	if err := ifUp(fd, "eth0"); err != nil {
		return fmt.Errorf("network: eth0 up: %w", err)
	}
	if gw != "" {
		g, err := netip.ParseAddr(gw)
		if err != nil || !g.Is4() {
			return fmt.Errorf("network: %s=%q is not an IPv4 address", ParamGateway, gw)
		}
		if err := addDefaultRoute(fd, g.As4()); err != nil {
			return fmt.Errorf("network: default route: %w", err)
		}
	}
	return nil
}

// ifreq is struct ifreq: a name and a 24-byte union.
type ifreq struct {
	name [16]byte
	data [24]byte
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

func ifUp(fd int, name string) error {
	var r ifreq
	copy(r.name[:], name)
	if err := ioctl(fd, syscall.SIOCGIFFLAGS, unsafe.Pointer(&r)); err != nil {
		return err
	}
	flags := *(*uint16)(unsafe.Pointer(&r.data[0]))
	*(*uint16)(unsafe.Pointer(&r.data[0])) = flags | syscall.IFF_UP | syscall.IFF_RUNNING
	return ioctl(fd, syscall.SIOCSIFFLAGS, unsafe.Pointer(&r))
}

// sockaddrIn4 fills a struct sockaddr_in into b.
func sockaddrIn4(b []byte, a [4]byte) {
	*(*uint16)(unsafe.Pointer(&b[0])) = syscall.AF_INET
	copy(b[4:8], a[:])
}

func ifAddr(fd int, name string, req uintptr, a [4]byte) error {
	var r ifreq
	copy(r.name[:], name)
	sockaddrIn4(r.data[:16], a)
	return ioctl(fd, req, unsafe.Pointer(&r))
}

// rtentry is struct rtentry on 64-bit Linux.
type rtentry struct {
	pad1    uintptr
	dst     [16]byte
	gateway [16]byte
	genmask [16]byte
	flags   uint16
	pad2    int16
	pad3    uintptr
	pad4    uintptr
	metric  int16
	dev     *byte
	mtu     uintptr
	window  uintptr
	irtt    uint16
}

func addDefaultRoute(fd int, gw [4]byte) error {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		return errors.New("default route setup supports 64-bit guests only")
	}
	var r rtentry
	sockaddrIn4(r.dst[:], [4]byte{})
	sockaddrIn4(r.gateway[:], gw)
	sockaddrIn4(r.genmask[:], [4]byte{})
	r.flags = syscall.RTF_UP | syscall.RTF_GATEWAY
	err := ioctl(fd, syscall.SIOCADDRT, unsafe.Pointer(&r))
	if errors.Is(err, syscall.EEXIST) {
		return nil
	}
	return err
}
