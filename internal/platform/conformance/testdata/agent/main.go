// Command agent is a stand-in for cmd/isobench used by the platform
// conformance suite while the real command does not build: it serves only
// "agent ..." with the cpu workload.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/isobench/isobench/internal/agent"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/cpu"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "agent" {
		fmt.Fprintln(os.Stderr, "test agent: usage: agent agent ARGS")
		os.Exit(2)
	}
	reg, err := workload.NewRegistry(cpu.Def)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test agent:", err)
		os.Exit(2)
	}
	os.Exit(agent.Main(context.Background(), reg, os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
}
