// Command agent is a stand-in isobench binary for the qemu platform's tests
// while internal/agent does not dispatch "vm-init" yet: it serves
// "agent vm-init ..." with package guest and "agent ..." with the agent and
// the cpu workload.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/isobench/isobench/internal/agent"
	"github.com/isobench/isobench/internal/guest"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/cpu"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "agent" {
		fmt.Fprintln(os.Stderr, "qemu test agent: usage: agent agent ARGS")
		os.Exit(2)
	}
	if len(os.Args) > 2 && os.Args[2] == "vm-init" {
		os.Exit(guest.Main(context.Background(), os.Args[3:], os.Stdout, os.Stderr))
	}
	reg, err := workload.NewRegistry(cpu.Def)
	if err != nil {
		fmt.Fprintln(os.Stderr, "qemu test agent:", err)
		os.Exit(2)
	}
	os.Exit(agent.Main(context.Background(), reg, os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
}
