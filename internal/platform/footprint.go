package platform

import "context"

// Footprint is what one instance costs the host at a moment.
type Footprint struct {
	// MemoryBytes is the memory charged to the instance's cgroup, less
	// inactive file cache (as docker stats counts it).
	MemoryBytes int64
	// CPUSeconds is the CPU time the instance's cgroup has used since it
	// was created (cumulative; take differences over a window).
	CPUSeconds float64
	// DiskBytes is what the instance added on disk (its writable layer,
	// volume or scratch directory).
	DiskBytes int64
	// EnginePIDs are host processes of the engine serving the instance
	// (daemons shared by every instance included), whose own memory and
	// CPU the caller may read from /proc. Empty when there is no engine.
	EnginePIDs []int
}

// Footprinter is implemented by instances that can report their footprint.
type Footprinter interface {
	Footprint(ctx context.Context) (Footprint, error)
}
