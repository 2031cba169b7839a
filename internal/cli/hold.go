package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/api"
	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/handover"
	"github.com/corral-dev/corral/internal/holder"
	"github.com/corral-dev/corral/internal/procs"
	"github.com/corral-dev/corral/internal/server"
	"github.com/spf13/pflag"
)

// runHold is a pane's holder; the daemon starts it (never a user).
func runHold(_ context.Context, std IO, args []string) error {
	if len(args) != 0 {
		return usagef("hold takes no arguments: the daemon starts it, with its config on stdin")
	}
	if code := holder.Main(std.Stdin, std.Stdout, std.Stderr); code != 0 {
		return &exitError{code: code, err: errors.New("")}
	}
	return nil
}

// runGuard stands between the daemon and a headless job (procs.GuardMain);
// the daemon starts it (never a user).
func runGuard(_ context.Context, std IO, args []string) error {
	if code := procs.GuardMain(args, std.Stderr); code != 0 {
		return &exitError{code: code, err: errors.New("")}
	}
	return nil
}

// HandoverWait bounds how long a new daemon waits for the old one to hand
// its panes over.
const HandoverWait = 15 * time.Second

// handOver asks the running daemon (if any) to let go of its panes and
// stop, and waits until it has. It reports whether one was running. With
// recv, the daemon passes its lock and listening socket on to recv
// (returned; nil when it cannot), so that no other daemon can start in
// between.
func handOver(ctx context.Context, recv *handover.Receiver) (bool, *handover.Inherited, error) {
	c := clientNoStart()
	var old struct {
		PID int `json:"pid"`
	}
	if c.Do(ctx, "GET", "/v1/status", nil, &old) != nil {
		return false, nil, nil
	}
	// stopped: the old daemon no longer answers, or another one does (a
	// client, corral exec taking its job's stream again, may start one
	// the moment the old one has gone).
	stopped := func() bool {
		var st struct {
			PID int `json:"pid"`
		}
		return c.Do(ctx, "GET", "/v1/status", nil, &st) != nil || st.PID != old.PID
	}
	req := map[string]string{}
	if recv != nil {
		req["to"] = recv.Path()
	}
	var res struct {
		Passes bool `json:"passes"`
	}
	if err := c.Do(ctx, "POST", "/v1/handover", req, &res); err != nil {
		var ce *client.Error
		if errors.As(err, &ce) && strings.Contains(ce.Error(), "404") {
			return true, nil, fmt.Errorf("the running daemon is too old to hand its panes over; end it with corral shutdown (its panes end too): %w", err)
		}
		return true, nil, apiError(err)
	}
	if recv != nil && res.Passes {
		in, err := recv.Receive(HandoverWait)
		if err == nil {
			return true, in, nil
		}
		// It let go of them instead: the lock is taken the ordinary way.
		fmt.Fprintf(os.Stderr, "corral: %v\n", err)
	}
	deadline := time.Now().Add(HandoverWait)
	for !stopped() {
		if time.Now().After(deadline) {
			return true, nil, fmt.Errorf("the running daemon did not stop within %v of the hand-over", HandoverWait)
		}
		select {
		case <-ctx.Done():
			return true, nil, ctx.Err()
		case <-afterMillis(10):
		}
	}
	return true, nil, nil
}

// newServerReplacing makes the server, waiting for the old daemon's lock
// after a hand-over.
func newServerReplacing(opts server.Options) (*server.Server, error) {
	deadline := time.Now().Add(HandoverWait)
	for {
		srv, err := server.New(opts)
		if err == nil || !errors.Is(err, server.ErrRunning) || time.Now().After(deadline) {
			return srv, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runRestart hands the running daemon's panes over to a new daemon of
// this binary, started in the background: an upgrade that ends nothing.
func runRestart(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, std IO, _ []string) error {
		if _, _, err := handOver(ctx, nil); err != nil {
			return err
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		var st struct {
			PID   int `json:"pid"`
			Panes int `json:"panes"`
		}
		if err := c.Do(ctx, "GET", "/v1/status", nil, &st); err != nil {
			return apiError(err)
		}
		fmt.Fprintf(std.Stdout, "daemon %d serves %d panes\n", st.PID, st.Panes)
		return nil
	}
}

func runRestore(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the result as JSON")
	forget := fs.Bool("forget", false, "drop the lost panes instead of starting them")
	return func(ctx context.Context, std IO, ids []string) error {
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		var out []api.Restored
		req := struct {
			Forget bool     `json:"forget"`
			IDs    []string `json:"ids,omitempty"`
		}{*forget, ids}
		if err := c.Do(ctx, "POST", "/v1/restore", req, &out); err != nil {
			return apiError(err)
		}
		if *asJSON {
			b, _ := json.MarshalIndent(out, "", "  ")
			fmt.Fprintf(std.Stdout, "%s\n", b)
		}
		failed := 0
		for _, r := range out {
			name := r.Name
			if name == "" {
				name = "-"
			}
			switch {
			case r.Error != "":
				failed++
				fmt.Fprintf(std.Stderr, "%s  %s  not restored: %s\n", r.Was, name, r.Error)
			case *asJSON:
			case *forget:
				fmt.Fprintf(std.Stdout, "%s  %s  forgotten (%s)\n", r.Was, name, strings.Join(r.Command, " "))
			case r.Resumed != "":
				fmt.Fprintf(std.Stdout, "%s  %s  restarted in %s, resuming conversation %s\n", r.ID, name, r.Cwd, r.Resumed)
			default:
				fmt.Fprintf(std.Stdout, "%s  %s  restarted in %s, fresh: %s\n", r.ID, name, r.Cwd, r.Note)
			}
		}
		if len(out) == 0 && !*asJSON {
			fmt.Fprintln(std.Stderr, "corral restore: no pane to restore (every pane in the table still runs, or none was lost)")
		}
		if failed > 0 {
			return fmt.Errorf("%d of %d panes not restored", failed, len(out))
		}
		return nil
	}
}
