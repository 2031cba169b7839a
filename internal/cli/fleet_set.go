package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/corral-dev/corral/internal/server"
)

// fleetSet changes the hub's settings.
func fleetSet(ctx context.Context, std IO, args []string) error {
	fs := newFlags("fleet set", std)
	forgetAfter := fs.Duration("forget-after", -1, "a host unreachable this long leaves the fleet's views (0: never)")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("fleet set takes only flags: corral fleet set --forget-after 72h")
	}
	if *forgetAfter < 0 {
		return usagef("say what to set: corral fleet set --forget-after D (0: never)")
	}
	c, err := connect(ctx)
	if err != nil {
		return err
	}
	ms := forgetAfter.Milliseconds()
	if err := c.Do(ctx, "POST", "/v1/fleet/set", server.FleetSetRequest{ForgetAfterMS: &ms}, nil); err != nil {
		return apiError(err)
	}
	if *forgetAfter == 0 {
		fmt.Fprintln(std.Stdout, "unreachable hosts stay in the fleet's views until forgotten (corral fleet forget)")
	} else {
		fmt.Fprintf(std.Stdout, "a host unreachable for %v leaves the fleet's views\n", forgetAfter.Round(time.Second))
	}
	return nil
}
