package cli

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/corral-dev/corral/internal/replay"
	"github.com/corral-dev/corral/internal/rules"
	"github.com/spf13/pflag"
)

// replayChange is one change in `corral replay --json`. Its shape is stable.
type replayChange struct {
	T       float64 `json:"t"`
	State   string  `json:"state"`
	Kind    string  `json:"kind"`
	Source  string  `json:"source"`
	Rule    string  `json:"rule"`
	Message string  `json:"message"`
}

func runReplay(fs *pflag.FlagSet) runFunc {
	agent := fs.String("agent", "", "use this agent's rules instead of recognising it")
	asJSON := fs.Bool("json", false, "print the changes as a JSON array")
	screenOnly := fs.Bool("screen-only", false, "ignore the program's own OSC 7501 reports")
	size := fs.String("size", "120x32", "screen size `COLSxROWS` for raw byte files (casts carry their own)")
	return func(_ context.Context, io IO, pos []string) error {
		if len(pos) != 1 {
			return usagef("need one recording file (a .cast or raw bytes; - reads stdin)")
		}
		rec, set, err := loadInputs(io, pos[0], *size, *agent)
		if err != nil {
			return err
		}
		res := replay.Run(rec, replay.Options{Rules: set, Agent: *agent, ScreenOnly: *screenOnly})
		defer res.Close()

		if *asJSON {
			changes := []replayChange{}
			for _, c := range res.Changes {
				d := c.Decision
				changes = append(changes, replayChange{T: replay.Offset(c.At).Seconds(), State: string(d.State), Kind: d.Kind,
					Source: string(d.Source), Rule: d.Rule, Message: d.Message})
			}
			if err := printJSON(io, changes); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(io.Stdout, "agent: %s (%s)\n", res.Engine.Manifest().Name, res.Engine.Manifest().Source)
			tw := tabwriter.NewWriter(io.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tSTATE\tKIND\tSOURCE\tRULE\tMESSAGE")
			for _, c := range res.Changes {
				d := c.Decision
				fmt.Fprintf(tw, "%.3fs\t%s\t%s\t%s\t%s\t%s\n", replay.Offset(c.At).Seconds(), d.State, dash(d.Kind), d.Source, dash(d.Rule), d.Message)
			}
			tw.Flush()
		}
		counters := res.Engine.Counters()
		if rec.Skipped > 0 || counters.StatusDiscarded > 0 {
			fmt.Fprintf(io.Stderr, "corral replay: skipped %d malformed recording lines, discarded %d status reports\n", rec.Skipped, counters.StatusDiscarded)
		}
		return nil
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// loadInputs reads the recording (raw files sized by size, "COLSxROWS") and
// the rules in force, and checks that agent, if given, is one of them.
func loadInputs(std IO, file, size, agent string) (*replay.Recording, *rules.Set, error) {
	cols, rows, err := parseSize(size)
	if err != nil {
		return nil, nil, err
	}
	set := loadRules(std)
	if err := manifestFor(set, agent); err != nil {
		return nil, nil, err
	}
	rec, err := readRecording(std, file, cols, rows)
	if err != nil {
		return nil, nil, err
	}
	return rec, set, nil
}

// readRecording reads a cast or raw byte file; "-" is stdin.
func readRecording(std IO, path string, cols, rows int) (*replay.Recording, error) {
	r := std.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("open recording: %w", err)
		}
		defer f.Close()
		r = f
	}
	rec, err := replay.ReadAll(r, cols, rows)
	if err != nil {
		return nil, fmt.Errorf("read recording %s: %w", path, err)
	}
	return rec, nil
}
