package cli

import (
	"context"
	"errors"

	"github.com/corral-dev/corral/internal/headless"
)

// runJobHold holds a headless job so that it outlives the daemon
// (headless.HoldMain); the daemon starts it (never a user).
func runJobHold(_ context.Context, std IO, args []string) error {
	if code := headless.HoldMain(args, std.Stdout, std.Stderr); code != 0 {
		return &exitError{code: code, err: errors.New("")}
	}
	return nil
}
