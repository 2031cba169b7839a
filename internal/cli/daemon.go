package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/config"
)

// Exit statuses scripts rely on.
const (
	exitRefused = 3   // send while blocked, answer while not blocked or with a choice the prompt lacks
	exitEnded   = 4   // wait: a pane exited, and exited was not a state waited for
	exitTimeout = 124 // wait timed out
	// A command for another host of the fleet: the hub or the host cannot
	// be reached (sysexits' EX_UNAVAILABLE), or this host may not command
	// it (EX_NOPERM).
	exitUnavailable = 69
	exitNoPerm      = 77
)

// connect returns a client, starting the daemon if none answers.
func connect(ctx context.Context) (*client.Client, error) {
	sock, err := config.CheckSocketPath()
	if err != nil {
		return nil, err
	}
	stateDir, err := config.CheckStateDir()
	if err != nil {
		return nil, err
	}
	c := client.New(sock)
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find corral's own binary to start the daemon: %w", err)
	}
	if err := c.EnsureDaemon(ctx, exe, filepath.Join(stateDir, "daemon.log")); err != nil {
		return nil, err
	}
	return c, nil
}

// apiError turns a daemon error into the CLI's exit status and message.
func apiError(err error) error {
	var ce *client.Error
	if errors.As(err, &ce) {
		switch ce.Code() {
		case "blocked":
			return &exitError{code: exitRefused, err: fmt.Errorf("%v; answer it with corral answer, or see it with corral screen", ce)}
		case "not_blocked":
			return &exitError{code: exitRefused, err: fmt.Errorf("%v; nothing to answer", ce)}
		case "exited", "no_input", "not_taken", "unknown_prompt", "no_answer":
			return &exitError{code: exitRefused, err: ce}
		case "starting":
			return &exitError{code: exitTimeout, err: ce}
		case "hub_unreachable", "host_unreachable", "unreachable":
			return &exitError{code: exitUnavailable, err: ce}
		case "not_permitted":
			return &exitError{code: exitNoPerm, err: ce}
		}
		return ce
	}
	return err
}
