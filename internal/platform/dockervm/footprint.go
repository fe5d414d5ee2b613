package dockervm

import (
	"context"
	"fmt"
	"sync"

	"github.com/isobench/isobench/internal/platform"
)

// Footprint: what the host pays for a container in the VM is the VM. The
// guest kernel, dockerd, containerd, the shims and the containers all live
// in the QEMU process's memory and CPU time, and Docker's images and
// writable layers on the VM's scratch disk; package qemu reads all of it
// from the VM's own cgroup and disk files (qemu.Instance.Footprint).
//
// One VM serves every container of the platform, so its cost is divided
// among the containers alive in it: one container alone carries the whole
// VM, and the containers' sum is always the VM's whole cost. That is what
// a comparison of "Docker in a VM" with "Docker" needs: the footprint
// workload sums memory_bytes, disk_bytes and cpu_seconds over a cell's
// instances, so N containers in one VM add up to one VM, as N containers
// on the host add up to their N cgroups. Reporting the whole VM on every
// container would count it N times; reporting it once, on one container,
// would make identical containers' numbers differ.
//
//   - Memory and disk are the VM's at the moment, divided by the number
//     of live containers. The VM's disk is what its files occupy on the
//     host: the scratch disk image is sparse, and the guest's ext4 reuses
//     blocks that removed containers and the image import freed (the
//     guest does not discard them, as a VM without online discard or a
//     recent fstrim does not), so it is the high-water mark of the
//     guest's use and a container's write grows it only by what lands on
//     never-used blocks.
//   - CPU is dealt out as it accrues: whenever a footprint is read or a
//     container comes or goes, the VM's CPU time since the last deal is
//     split equally among the containers alive meanwhile. Each container's
//     CPUSeconds is then its own share since it was created (never
//     decreasing, as the contract wants), and the shares add up to the
//     VM's CPU since the first container. The VM's CPU while a container
//     is being created is that container's (its startup cost); the VM's
//     boot and idle time before the first container is no container's.
//   - EnginePIDs is empty: the engine (dockerd, containerd) runs in the
//     guest and its cost is inside the VM's. Unlike platform docker,
//     whose instances report their cgroup and list dockerd and containerd
//     apart as the engine, here memory_bytes is everything the host pays
//     and the engine_* metrics are absent.

// ledger deals the VM's cost out to its containers.
type ledger struct {
	mu     sync.Mutex
	live   map[*Instance]bool
	cpu    map[*Instance]float64 // each container's CPU share so far
	last   float64               // the VM's CPU seconds at the last deal
	primed bool
}

// deal splits the VM's CPU since the last deal among the live containers;
// l.mu is held.
func (l *ledger) deal(vmCPU float64) {
	if l.primed && len(l.live) > 0 && vmCPU > l.last {
		share := (vmCPU - l.last) / float64(len(l.live))
		for in := range l.live {
			l.cpu[in] += share
		}
	}
	l.last, l.primed = vmCPU, true
}

// vmCPU reads the VM's CPU seconds; ok is false when it cannot be read
// (the accounting then skips this deal: the next one covers the time).
func (p *Platform) vmCPU(ctx context.Context) (float64, bool) {
	p.mu.Lock()
	vm := p.inst
	p.mu.Unlock()
	if vm == nil {
		return 0, false
	}
	fp, err := vm.Footprint(ctx)
	return fp.CPUSeconds, err == nil
}

// settle deals the VM's CPU so far to the live containers (before one is
// created).
func (p *Platform) settle(ctx context.Context) {
	if cpu, ok := p.vmCPU(ctx); ok {
		p.share.mu.Lock()
		p.share.deal(cpu)
		p.share.mu.Unlock()
	}
}

// join adds a created container; the VM's CPU since the last deal (its
// creation) is its own.
func (p *Platform) join(ctx context.Context, in *Instance) {
	cpu, ok := p.vmCPU(ctx)
	l := &p.share
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live == nil {
		l.live, l.cpu = map[*Instance]bool{}, map[*Instance]float64{}
	}
	if ok && l.primed && cpu > l.last {
		l.cpu[in] = cpu - l.last
		l.last = cpu
	}
	l.live[in] = true
}

// leave deals the VM's CPU up to a container's removal (it takes its
// share of it) and stops counting the container.
func (p *Platform) leave(ctx context.Context, in *Instance) {
	cpu, ok := p.vmCPU(ctx)
	l := &p.share
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.live[in] {
		return
	}
	if ok {
		l.deal(cpu)
	}
	delete(l.live, in)
	delete(l.cpu, in)
}

// Footprint is the container's share of the VM's cost (see above).
func (in *Instance) Footprint(ctx context.Context) (platform.Footprint, error) {
	vm, err := in.vm.Footprint(ctx)
	if err != nil {
		return platform.Footprint{}, fmt.Errorf("%s: the VM's footprint: %w", Name, err)
	}
	l := &in.p.share
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.live[in] {
		return platform.Footprint{}, fmt.Errorf("%s: instance %s is closed", Name, in.ID())
	}
	l.deal(vm.CPUSeconds)
	n := int64(len(l.live))
	return platform.Footprint{
		MemoryBytes: vm.MemoryBytes / n,
		DiskBytes:   vm.DiskBytes / n,
		CPUSeconds:  l.cpu[in],
		// EnginePIDs: none; the engine is in the guest, inside the VM's cost
	}, nil
}

// Close removes the container, then stops counting it in the VM's cost:
// the CPU its removal took is its own.
func (in *Instance) Close(ctx context.Context) error {
	err := in.Instance.Close(ctx)
	in.p.leave(ctx, in)
	return err
}
