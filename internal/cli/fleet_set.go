package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/corral-dev/corral/internal/fleet"
)

// fleetSet changes the fleet's settings: the hub's, and this host's own.
func fleetSet(fs *pflag.FlagSet) runFunc {
	forgetAfter := fs.Duration("forget-after", -1, "on the hub: a host unreachable this long leaves the fleet's views (0: never)")
	maxJobs := fs.Int("max-jobs", -1, "how many fleet jobs this host runs at once (0: none), at once and kept in its config")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) > 0 {
			return usagef("fleet set takes only flags: corral fleet set --max-jobs 2, corral fleet set --forget-after 72h")
		}
		var req fleet.SetRequest
		if *forgetAfter >= 0 {
			ms := forgetAfter.Milliseconds()
			req.ForgetAfterMS = &ms
		}
		if fs.Changed("max-jobs") {
			if *maxJobs < 0 {
				return usagef("--max-jobs must be 0 (take no jobs) or more")
			}
			req.MaxJobs = maxJobs
		}
		if req.ForgetAfterMS == nil && req.MaxJobs == nil {
			return usagef("say what to set: corral fleet set --max-jobs N, or on the hub --forget-after D (0: never)")
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		var out fleet.SetResult
		if err := c.Do(ctx, "POST", "/v1/fleet/set", req, &out); err != nil {
			return apiError(err)
		}
		if out.Note != "" {
			fmt.Fprintln(std.Stderr, "corral fleet set: "+out.Note)
		}
		switch {
		case req.ForgetAfterMS == nil:
		case *forgetAfter == 0:
			fmt.Fprintln(std.Stdout, "unreachable hosts stay in the fleet's views until forgotten (corral fleet forget)")
		default:
			fmt.Fprintf(std.Stdout, "a host unreachable for %v leaves the fleet's views\n", forgetAfter.Round(time.Second))
		}
		switch {
		case req.MaxJobs == nil:
		case *maxJobs == 0:
			fmt.Fprintln(std.Stdout, "this host takes no fleet jobs (the running ones end as they would)")
		default:
			fmt.Fprintf(std.Stdout, "this host runs up to %d fleet jobs at once\n", *maxJobs)
		}
		return nil
	}
}
