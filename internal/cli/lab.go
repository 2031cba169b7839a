package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/corral-dev/corral/internal/lab"
	"github.com/spf13/pflag"
)

// runLab measures every detector of "waiting" side by side on the fake
// agent, live.
func runLab(fs *pflag.FlagSet) runFunc {
	seed := fs.Int64("seed", 1, "the seed of the task script (the same seed, the same script)")
	tasks := fs.Int("tasks", 30, "how many tasks the user bot gives")
	asJSON := fs.Bool("json", false, "print the scores as a JSON array")
	osc := fs.Bool("osc7501", false, "the agent also reports with OSC 7501, judged as its own detector")
	return func(ctx context.Context, std IO, _ []string) error {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		scores, err := lab.Run(ctx, lab.Options{Seed: *seed, Tasks: *tasks, OSC7501: *osc, Agent: []string{exe, "fake-agent"},
			Rules: loadRules(std), Progress: func(format string, a ...any) { fmt.Fprintf(std.Stderr, "corral lab: "+format+"\n", a...) }})
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(std.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(scores)
		}
		lab.Table(std.Stdout, scores)
		return nil
	}
}
