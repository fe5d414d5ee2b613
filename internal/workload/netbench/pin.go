package netbench

import (
	"fmt"

	"github.com/isobench/isobench/internal/pin"
)

// CPU pinning, like netperf's -T or taskset around sockperf.
//
// Where the two ends of a request/response run decides its latency more
// than anything else on a VM: on this project's 2-vCPU test host a
// blocking ping-pong between two C processes took 6 us per round trip
// when both were pinned to one vCPU and 65 us when pinned to different
// ones (waking a halted vCPU costs the hypervisor an interrupt and a
// reschedule), and the scheduler's choice for unpinned processes changes
// from run to run and with how many threads a process has. So the network
// workloads can pin each end (client-cpu, server-cpu), the reference runs
// in bench/fidelity-net.sh are pinned the same way, and the pinning is
// recorded in every sample's tags.

// noCPU means "leave the thread where the scheduler puts it".
const noCPU = pin.None

// pinThread binds the calling goroutine's thread to cpu (pin.Thread).
func pinThread(cpu int) error {
	if err := pin.Thread(cpu); err != nil {
		return fmt.Errorf("netbench: %w", err)
	}
	return nil
}
