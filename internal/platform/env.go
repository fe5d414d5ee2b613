package platform

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// Env is what every platform constructor gets from the caller.
type Env struct {
	// AgentBinary is the host path of a static linux/amd64 isobench binary,
	// copied into (or baked into images for) instances.
	AgentBinary string
	// StateDir keeps built images, rootfs trees and bundles between runs.
	StateDir string
	// Log receives progress messages (image builds...); may be io.Discard.
	Log io.Writer
}

// Factory constructs one kind of platform.
type Factory struct {
	Name  string
	Help  string
	Extra []string // platform-specific option keys
	New   func(ctx context.Context, o Options, env Env) (Platform, error)
	// OwnCPUs says the instances run on CPUs of their own (a VM's vCPUs,
	// gVisor's sentry scheduling its tasks): a process inside binding
	// itself to CPUs does not place the instance on those host CPUs, so a
	// duet run (runner.Plan.Duet) cannot pin it.
	OwnCPUs bool
	// IsHost says the instance is this host itself (native): it has the
	// host's network, servers and tools, so nothing need be checked for
	// it before a run, and it is the natural baseline.
	IsHost bool
	// Cost is what a plan's time estimate (study.NewPlan) counts for one
	// of this platform's instances and for the platform in a run. Every
	// built-in platform declares Cost.Instance (builtin's test checks it);
	// a factory that declares nothing is estimated at DefaultCost.
	Cost Cost
	// Sweep lists what this platform's instances may have left on this
	// host (its engine's instances and what goes with them), for
	// 'isobench clean' and the sweep before a run (package cleanup
	// decides which belong to dead runs and removes those) and for the
	// platform's own tests' leftover check: one description of what it
	// creates. Every built-in platform declares one (builtin's test
	// checks it); NoLeftovers says it leaves nothing on this host.
	Sweep func(ctx context.Context, env SweepEnv) ([]Leftover, error)
	// Image, when set, is the image profile the platform's instances
	// need with options o ("" when the run's will do): a system container
	// boots an init system, which only some images have. A run without
	// --image gives the platform that image; a run whose --image differs
	// is refused before anything starts.
	Image func(o Options) string
	// PartCPU, when set, says whether instances made with options o get
	// a fraction of a CPU, so that even one busy thread is throttled and
	// its CPU idles for part of every period (a VM's per-vCPU quota=);
	// unset: a fractional cpus= (FractionalCPU).
	PartCPU func(o Options) bool
}

// FractionalCPU says whether f's instances with options o get a fraction
// of a CPU: f.PartCPU's answer, or else whether cpus= is not a whole
// number (cpus=0.5; cpus=2 throttles only a workload with more threads).
func (f Factory) FractionalCPU(o Options) bool {
	if f.PartCPU != nil {
		return f.PartCPU(o)
	}
	return o.Base.CPUs > 0 && o.Base.CPUs != math.Trunc(o.Base.CPUs)
}

// Cost is a platform's rough time costs, for estimates only (nothing is
// timed or limited by them).
type Cost struct {
	// Instance is a rough time to create, start and remove one instance;
	// 0: DefaultCost.Instance.
	Instance time.Duration
	// SystemBoot is what booting an image's systemd (init=system) adds to
	// an instance's start; 0: DefaultCost.SystemBoot.
	SystemBoot time.Duration
	// Once is a one-off cost of the platform in a run (docker-in-vm boots
	// its VM); 0: none.
	Once time.Duration
}

// DefaultCost is the cost of a platform whose factory declares none (or
// leaves a field 0): a second per instance, 4 s more to boot systemd, no
// one-off cost.
var DefaultCost = Cost{Instance: time.Second, SystemBoot: 4 * time.Second}

// Costs is f's Cost with DefaultCost in the fields f leaves 0.
func (f Factory) Costs() Cost {
	c := f.Cost
	if c.Instance == 0 {
		c.Instance = DefaultCost.Instance
	}
	if c.SystemBoot == 0 {
		c.SystemBoot = DefaultCost.SystemBoot
	}
	if c.Once == 0 {
		c.Once = DefaultCost.Once
	}
	return c
}

// Cost is the cost of the platform called name (without its options):
// its factory's Costs, or DefaultCost when r has no such platform. A nil
// Registry gives DefaultCost for every name.
func (r Registry) Cost(name string) Cost {
	if f, ok := r[name]; ok {
		return f.Costs()
	}
	return DefaultCost
}

// Registry maps platform names to factories.
type Registry map[string]Factory

// NewRegistry builds a registry from factories.
func NewRegistry(fs ...Factory) Registry {
	r := Registry{}
	for _, f := range fs {
		r[f.Name] = f
	}
	return r
}

// IsHost says whether the platform called name (without its options) is
// this host itself (Factory.IsHost); false for a name r does not have.
func (r Registry) IsHost(name string) bool { return r[name].IsHost }

// Names lists the registered platforms, sorted.
func (r Registry) Names() []string {
	var n []string
	for k := range r {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Parse validates a platform option string against the registry without
// contacting any engine.
func (r Registry) Parse(s string) (Factory, Options, error) {
	name, _, _ := strings.Cut(strings.TrimSpace(s), ":")
	f, ok := r[name]
	if !ok {
		return Factory{}, Options{}, fmt.Errorf("unknown platform %q (known: %s)", name, strings.Join(r.Names(), ", "))
	}
	o, err := ParseOptions(s, f.Extra...)
	if err != nil {
		return Factory{}, Options{}, err
	}
	return f, o, nil
}
