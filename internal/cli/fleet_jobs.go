package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/corral-dev/corral/internal/fleet"
)

// runJobs lists the jobs: this daemon's running ones, or with --fleet
// the fleet's, queued and running, each with its host.
func runJobs(fs *pflag.FlagSet) runFunc {
	onFleet := fs.Bool("fleet", false, "the fleet's jobs: queued (this host's; on the hub, all) and running on every host")
	asJSON := fs.Bool("json", false, "print the jobs as a JSON array")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) > 0 {
			return usagef("jobs takes no arguments, only flags")
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		path := "/v1/jobs"
		if *onFleet {
			path = "/v1/fleet/jobs"
		}
		rows := []fleet.JobRow{}
		if err := c.Do(ctx, "GET", path, nil, &rows); err != nil {
			return apiError(err)
		}
		if *asJSON {
			return printJSON(std, rows)
		}
		tw := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "HOST\tID\tNAME\tAGENT\tSTATE\tFOR\tFLEET JOB\tFROM")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", dash(r.Host), r.ID, dash(r.Name), dash(r.Agent), r.State, age(r.Since), dash(r.FleetJob), dash(r.From))
		}
		return tw.Flush()
	}
}
