package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/isobench/isobench/internal/platform"
)

// Instances are the instances one repetition of a host-driven workload
// creates from its HostEnv, each remembered so CloseAll closes them all,
// whatever happened (also after ctx ended).
type Instances struct {
	env HostEnv
	who string // names the workload in errors

	mu   sync.Mutex
	list []platform.Instance
}

// NewInstances makes the instances of one repetition of workload who.
func NewInstances(env HostEnv, who string) *Instances {
	return &Instances{env: env, who: who}
}

// Create makes an instance from the base spec, with a new name and the
// ports the host will connect to; role names it in an error.
func (g *Instances) Create(ctx context.Context, role string, ports ...int) (platform.Instance, error) {
	s := g.env.Base
	s.Name = g.env.NewName()
	s.Ports = ports
	in, err := g.env.Platform.Create(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("%s: create %s instance: %w", g.who, role, err)
	}
	g.mu.Lock()
	g.list = append(g.list, in)
	g.mu.Unlock()
	return in, nil
}

// Add remembers an instance the workload created itself (timing its
// Create, or with a spec of its own), so CloseAll closes it too.
func (g *Instances) Add(in platform.Instance) {
	g.mu.Lock()
	g.list = append(g.list, in)
	g.mu.Unlock()
}

// CloseAll closes every instance Create made or Add was given, concurrently, within two
// minutes of a context that outlives ctx's cancellation.
func (g *Instances) CloseAll(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	g.mu.Lock()
	list := append([]platform.Instance(nil), g.list...)
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, in := range list {
		wg.Add(1)
		go func() { defer wg.Done(); in.Close(cctx) }()
	}
	wg.Wait()
}

// WithInstances runs do with the instances of one repetition of workload
// who and a ctx that is cancelled when do returns, then closes every
// instance (CloseAll), whatever happened.
func WithInstances(ctx context.Context, env HostEnv, who string, do func(ctx context.Context, g *Instances) ([]InstanceResult, error)) ([]InstanceResult, error) {
	g := NewInstances(env, who)
	defer g.CloseAll(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return do(ctx, g)
}

// Together runs one(i) for every instance i in 0..n-1, each in its own
// goroutine, all released at once when every goroutine has started, and
// returns their results in order when none failed, else every error
// joined.
func Together(n int, one func(i int) (InstanceResult, error)) ([]InstanceResult, error) {
	results := make([]InstanceResult, n)
	errs := make([]error, n)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-release
			results[i], errs[i] = one(i)
		}(i)
	}
	close(release)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return results, nil
}
