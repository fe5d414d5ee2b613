// Command isobench measures what isolation costs. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/isobench/isobench/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.NewState(), os.Args[1:])
	stop()
	os.Exit(code)
}
