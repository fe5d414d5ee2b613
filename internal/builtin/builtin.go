// Package builtin lists the platforms and workloads this binary carries.
// It is the only place that knows them all; everything else takes a registry.
package builtin

import (
	"fmt"

	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/remote"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/astar"
	"github.com/isobench/isobench/internal/workload/blockio"
	"github.com/isobench/isobench/internal/workload/cpu"
	"github.com/isobench/isobench/internal/workload/disk"
	"github.com/isobench/isobench/internal/workload/fsbench"
	"github.com/isobench/isobench/internal/workload/lifecycle"
	"github.com/isobench/isobench/internal/workload/mapreduce"
	"github.com/isobench/isobench/internal/workload/memory"
	"github.com/isobench/isobench/internal/workload/netbench"
	"github.com/isobench/isobench/internal/workload/service"
	"github.com/isobench/isobench/internal/workload/soplex"
	"github.com/isobench/isobench/internal/workload/spark"
	"github.com/isobench/isobench/internal/workload/startup"
	"github.com/isobench/isobench/internal/workload/stream"
	"github.com/isobench/isobench/internal/workload/tooladapt"
	"github.com/isobench/isobench/internal/workload/transfer"
)

// Platforms returns the registry of every platform this binary's OS runs
// (platforms_linux.go, platforms_other.go).
func Platforms() platform.Registry { return remote.Wrap(platform.NewRegistry(platformFactories()...)) }

// Workloads returns the registry of every workload.
func Workloads() workload.Registry {
	defs := []workload.Def{
		cpu.Def,
		memory.Def,
		stream.Def,
		disk.Def,
		blockio.Def,
		fsbench.Def,
		startup.Def,
		astar.Def,  // open substitute for SPEC CPU 473.astar (study 003)
		soplex.Def, // open substitute for SPEC CPU 450.soplex (study 003)
	}
	defs = append(defs, tooladapt.Defs()...)
	defs = append(defs, tooladapt.NetDefs()...) // iperf 2's server and clients in instances, incl. the hidden halves
	defs = append(defs, netbench.Defs()...)     // incl. the hidden _net-server, _net-client halves
	defs = append(defs, lifecycle.Defs()...)    // incl. the hidden _spin load
	defs = append(defs, service.Defs()...)      // incl. the hidden _service, _service-log halves
	defs = append(defs, transfer.Defs()...)     // incl. the hidden _transfer half
	defs = append(defs, spark.Defs()...)        // HiBench on Spark (study 003), incl. the hidden cluster halves
	defs = append(defs, mapreduce.Defs()...)    // HiBench's jobs on Hadoop MapReduce (study 003), incl. the hidden job half
	r, err := workload.NewRegistry(defs...)
	if err != nil {
		// The list above is fixed at compile time; a duplicate is a
		// programming error caught by this package's test.
		panic(fmt.Sprintf("builtin workloads: %v", err))
	}
	return r
}
