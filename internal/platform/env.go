package platform

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
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
