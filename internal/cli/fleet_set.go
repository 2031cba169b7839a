package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/corral-dev/corral/internal/server"
)

// fleetSet changes the hub's settings.
func fleetSet(fs *pflag.FlagSet) runFunc {
	forgetAfter := fs.Duration("forget-after", -1, "a host unreachable this long leaves the fleet's views (0: never)")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) > 0 {
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
}
