package cli

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/corral-dev/corral/internal/fleet"
)

// fleetForget removes a host that is gone for good from the fleet's views.
func fleetForget(_ *pflag.FlagSet) runFunc {
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) != 1 {
			return usagef("need the host's name: corral fleet forget HOST")
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		var out fleet.ForgetResult
		if err := c.Do(ctx, "POST", "/v1/fleet/forget", fleet.ForgetRequest{Host: pos[0]}, &out); err != nil {
			return apiError(err)
		}
		fmt.Fprintf(std.Stdout, "forgot %s: its panes and heartbeat are gone from the fleet's views\n", pos[0])
		return nil
	}
}
