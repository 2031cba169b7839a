// Command corral runs terminal coding agents and knows, for each one,
// whether it is working, blocked on you, idle, done, in error or exited.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/corral-dev/corral/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.StdIO())
	stop()
	os.Exit(code)
}
