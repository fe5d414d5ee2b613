// Command agent is the isobench agent for lifecycle tests: it serves
// "agent ..." with the lifecycle workloads' in-guest load, so the tests do
// not depend on their registration in cmd/isobench.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/isobench/isobench/internal/agent"
	"github.com/isobench/isobench/internal/workload"
	"github.com/isobench/isobench/internal/workload/lifecycle"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "agent" {
		fmt.Fprintln(os.Stderr, "lifecycle test agent: usage: agent agent ARGS")
		os.Exit(2)
	}
	reg, err := workload.NewRegistry(lifecycle.Defs()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lifecycle test agent:", err)
		os.Exit(2)
	}
	os.Exit(agent.Main(context.Background(), reg, os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
}
