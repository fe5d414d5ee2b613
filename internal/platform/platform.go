// Package platform defines how isobench puts a workload somewhere: a Platform
// creates Instances from a Spec; an Instance runs commands, takes files, has
// an address and facts, and is closed. Every implementation lives in a
// package of its own below this one and passes the shared conformance suite
// in platform/conformance.
//
// Nothing here assumes an instance shares the host's file system, clock or
// network namespace: files are copied in, addresses are asked for, and
// durations are measured on the host.
//
// This package is the contract only, and imports nothing above it: the
// /proc, cgroup, mount and file helpers the platforms share are in package
// hostos, what an instance's inside looks like (its scratch directory) in
// guestenv, and the protocol of a platform served from afar in
// platform/platformd (internal/archtest checks this).
package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/isobench/isobench/internal/spec"
	"github.com/isobench/isobench/internal/suggest"
)

// Network modes.
const (
	NetDefault = ""       // the platform's usual mode (bridge for Docker)
	NetBridge  = "bridge" // a private address behind a bridge
	NetHost    = "host"   // the host's network namespace
	NetNone    = "none"   // loopback only
	// NetNAT is a private address behind a bridge whose Spec.Ports are
	// also published on the host's loopback through the engine's NAT
	// (Docker's -p 127.0.0.1::PORT): the host reaches them at Endpoint,
	// the way a user reaches a published service.
	NetNAT = "nat"
)

// Storage modes: where the instance's scratch directory lives.
const (
	StorageRootfs = "rootfs" // the instance's own root file system (overlay for Docker)
	StorageVolume = "volume" // a host directory or volume mounted in
)

// Spec says what instance to create. Zero values mean "no limit" or "the
// platform's default".
type Spec struct {
	Name    string  // unique name; platforms prefix it as they need
	Image   string  // image profile, e.g. "minimal"
	CPUs    float64 // CPU quota in cores (0: unlimited)
	Memory  int64   // memory limit in bytes (0: unlimited)
	Network string  // NetDefault, NetBridge, NetHost, NetNone, NetNAT
	// Ports are TCP ports inside the instance the host will connect to;
	// with NetNAT the platform publishes them on the host (others ignore
	// them: the host reaches Address directly).
	Ports []int
	// SamePorts asks, with NetNAT, that each of Ports be published at its
	// own number on the host, for a server that names its ports in its
	// replies (FTP's passive data ports): the caller picks ports free on
	// the host. A platform that cannot leaves Endpoint's port different,
	// and the caller says so.
	SamePorts bool
	Storage   string // StorageRootfs (default) or StorageVolume
	// Accounting says the caller will read the instance's Footprint: a
	// platform that gives an unlimited instance no cgroup of its own
	// (native) then makes one, without limits, to charge it to.
	Accounting bool
	// CPUGroup asks that the instance's processes share the CPU as one
	// group (a cgroup of their own, without limits), as a container's or a
	// VM's do. The runner sets it for workloads whose ends talk over the
	// network (workload.Needs.Network): their clients run on the host (or
	// in other instances) and compete with the server for the CPU, and
	// where the server's processes are not grouped (native) each of them
	// weighs in the scheduler as much as the one client, which then gets
	// less CPU than beside a container: that measured the load
	// generator's share, not the platform (study 004's web cells read
	// containers up to 1.36x faster than native from it). Platforms whose
	// instances always have a group ignore it.
	CPUGroup bool
	Extra    map[string]string
	Labels   map[string]string
	// Main, when set, is the instance's main process (argv inside the
	// instance; "{agent}" as argv[0] means the isobench agent). Its stdout
	// goes to MainStdout. When unset the instance idles until closed.
	Main       []string
	MainStdout io.Writer
	// Phase, when set, is told when the platform passes a lifecycle phase
	// ("created", "started") on the host clock.
	Phase func(name string, at time.Time)
}

// AgentPlaceholder in Spec.Main or an Exec argv stands for the path of the
// isobench agent binary inside the instance.
const AgentPlaceholder = "{agent}"

// AgentArgv returns a copy of argv with AgentPlaceholder as argv[0]
// replaced by agent, the agent's path where the command runs.
func AgentArgv(argv []string, agent string) []string {
	out := append([]string(nil), argv...)
	if len(out) > 0 && out[0] == AgentPlaceholder {
		out[0] = agent
	}
	return out
}

// Platform creates instances of one isolation technology.
type Platform interface {
	// Name is the platform's registry name, e.g. "docker".
	Name() string
	// Available says whether the platform can run here; the error says why
	// not and what to do.
	Available(ctx context.Context) error
	// Create makes and starts an instance. On error nothing is left behind.
	Create(ctx context.Context, s Spec) (Instance, error)
	// Facts describe the platform on this host (engine version, storage
	// driver, accelerator...), recorded with every run.
	Facts(ctx context.Context) map[string]string
	// Close releases what the platform itself holds (clients, bridges).
	Close(ctx context.Context) error
}

// ExecIO connects a command's standard streams; nil means none.
type ExecIO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// ExitError reports a command that ran and exited non-zero.
type ExitError struct {
	Code int
	Argv []string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("command %q exited with status %d", strings.Join(e.Argv, " "), e.Code)
}

// Instance is one running isolated environment.
type Instance interface {
	// ID is the engine's identifier (container id, pid, vm name).
	ID() string
	// Exec runs argv inside the instance and waits for it. A non-zero exit
	// is reported as *ExitError. "{agent}" as argv[0] runs the agent.
	Exec(ctx context.Context, argv []string, stdio ExecIO) error
	// CopyIn copies a host file to path inside the instance.
	CopyIn(ctx context.Context, hostPath, guestPath string, mode uint32) error
	// Address is an IP the host can reach the instance at ("" with NetNone;
	// the host's loopback with NetHost).
	Address(ctx context.Context) (string, error)
	// Facts about this instance (cpu quota, memory limit, network mode...).
	Facts(ctx context.Context) map[string]string
	// Wait waits for the main process (Spec.Main) to exit and returns its
	// status; for idle instances it returns when the instance stops.
	Wait(ctx context.Context) (int, error)
	// Close stops and removes the instance and everything created for it.
	// It is safe to call more than once.
	Close(ctx context.Context) error
}

// Publisher is implemented by instances whose ports the host reaches at
// another address than Address, through ports the engine published.
type Publisher interface {
	// Published returns the host:port the host dials to reach TCP port
	// inside the instance, and ok=false when that port is not published.
	Published(ctx context.Context, port int) (hostPort string, ok bool, err error)
}

// Endpoint returns the host:port the host dials to reach TCP port inside
// inst: the published port when the instance publishes it, else
// Address:port. It fails when the instance has no address.
func Endpoint(ctx context.Context, inst Instance, port int) (string, error) {
	if p, ok := inst.(Publisher); ok {
		hp, ok, err := p.Published(ctx, port)
		if err != nil {
			return "", err
		}
		if ok {
			return hp, nil
		}
	}
	a, err := inst.Address(ctx)
	if err != nil {
		return "", err
	}
	if a == "" {
		return "", fmt.Errorf("instance %s has no address (network=none)", inst.ID())
	}
	return net.JoinHostPort(a, strconv.Itoa(port)), nil
}

// ErrUnsupported marks an option a platform cannot honour.
var ErrUnsupported = errors.New("not supported by this platform")

// Options are a platform's parsed "name:k=v" options, split into the common
// Spec fields and what is left for the platform.
type Options struct {
	Name  string
	Raw   map[string]string
	Base  Spec // CPUs, Memory, Network, Storage filled from the options
	Extra map[string]string
}

// ParseOptions turns "docker:cpus=1,memory=2g,network=host,storage=volume"
// into a base Spec. allowedExtra lists platform-specific keys it accepts.
func ParseOptions(s string, allowedExtra ...string) (Options, error) {
	// cpus= is finite, above 0 and at most maxCPUs: a limit beyond any
	// real machine is a typo, and NaN or Inf would run unlimited.
	const maxCPUs = 1024
	sp, err := spec.Parse(s)
	if err != nil {
		return Options{}, err
	}
	o := Options{Name: sp.Name, Raw: sp.Params, Extra: map[string]string{}}
	for k, v := range sp.Params {
		switch k {
		case "cpus":
			f, err := strconv.ParseFloat(v, 64)
			if (err == nil || errors.Is(err, strconv.ErrRange)) && f > maxCPUs { // 1e300, 1e400, inf
				return Options{}, fmt.Errorf("%s: cpus=%q is too large (at most %d cores)", sp.Name, v, maxCPUs)
			}
			if err != nil || !(f > 0) { // !(f > 0) also refuses NaN
				return Options{}, fmt.Errorf("%s: cpus=%q must be a positive number of cores, at most %d", sp.Name, v, maxCPUs)
			}
			o.Base.CPUs = f
		case "memory":
			n, err := spec.ParseSize(v)
			if errors.Is(err, spec.ErrTooLarge) {
				return Options{}, fmt.Errorf("%s: memory=%q is too large (at most 1024t)", sp.Name, v)
			}
			if err != nil || n < 4<<20 {
				return Options{}, fmt.Errorf("%s: memory=%q must be a size of at least 4m, e.g. 512m or 2g", sp.Name, v)
			}
			o.Base.Memory = n
		case "network":
			switch v {
			case NetBridge, NetHost, NetNone, NetNAT:
				o.Base.Network = v
			default:
				return Options{}, fmt.Errorf("%s: network=%q must be bridge, nat, host or none", sp.Name, v)
			}
		case "storage":
			switch v {
			case StorageRootfs, StorageVolume:
				o.Base.Storage = v
			default:
				return Options{}, fmt.Errorf("%s: storage=%q must be rootfs or volume", sp.Name, v)
			}
		default:
			ok := false
			for _, a := range allowedExtra {
				if a == k {
					ok = true
				}
			}
			if !ok {
				all := append([]string{"cpus", "memory", "network", "storage"}, allowedExtra...)
				sort.Strings(all)
				if near := suggest.Closest(k, all); near != "" {
					return Options{}, fmt.Errorf("%s has no option %q: did you mean %s? (it has: %s)", sp.Name, k, near, strings.Join(all, ", "))
				}
				return Options{}, fmt.Errorf("%s has no option %q (it has: %s)", sp.Name, k, strings.Join(all, ", "))
			}
			o.Extra[k] = v
		}
	}
	o.Base.Extra = o.Extra
	return o, nil
}

// Canonical renders the options in stable form for storing with samples.
func (o Options) Canonical() string { return spec.Canonical(o.Raw) }

// Label every platform puts on what it creates, so leftovers can be found.
const Label = "isobench"

// ImageLabel marks the images isobench builds. It is not Label: a
// container inherits its image's labels, and one that somebody else
// starts from an isobench image (a reference server in bench/, a user's
// own) is not isobench's to sweep.
const ImageLabel = Label + ".image"

// Preparer is implemented by platforms that must build or import an image
// before instances can be created. The CLI calls it before a run so that
// image work is never timed as startup.
type Preparer interface {
	Prepare(ctx context.Context, profile string) error
}
