package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/headless"
)

// runExec runs an agent headless and relays its stream.
func runExec(ctx context.Context, std IO, args []string) error {
	fs := newFlags("exec", std)
	agent := fs.String("agent", "", "how to read its stream: claude, codex or gemini (default: from the command's name)")
	timeout := fs.Duration("timeout", 0, "kill the run after this long (exit 124)")
	stall := fs.Duration("stall", 0, "say so when the run prints nothing for this long")
	asJSON := fs.Bool("json", false, "print events as NDJSON, then the outcome")
	var command []string
	for i, a := range args {
		if a == "--" {
			command, args = args[i+1:], args[:i]
			break
		}
	}
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if len(command) == 0 {
		return usagef("say what to run after --: corral exec -- claude -p \"…\" --output-format stream-json --verbose")
	}
	if *agent == "" {
		*agent = strings.TrimSuffix(filepath.Base(command[0]), ".js")
	}
	switch *agent {
	case "claude", "codex", "gemini":
	default:
		return usagef("--agent %q: use claude, codex or gemini", *agent)
	}
	enc := json.NewEncoder(std.Stdout)
	out, err := headless.Run(ctx, headless.Options{
		Agent: *agent, Argv: command, Timeout: *timeout, Stall: *stall,
		OnEvent: func(e headless.Event) {
			if *asJSON {
				_ = enc.Encode(e)
			} else {
				fmt.Fprintln(std.Stdout, e.String())
			}
		},
		OnStall: func(quiet time.Duration) {
			if *asJSON {
				_ = enc.Encode(map[string]any{"type": "stalled", "quiet_ms": quiet.Milliseconds()})
			} else {
				fmt.Fprintf(std.Stderr, "corral exec: stalled: no output for %v\n", quiet)
			}
		},
	})
	if err != nil {
		return err
	}
	if *asJSON {
		_ = enc.Encode(map[string]any{"type": "outcome", "outcome": out})
	} else if out.State != "done" {
		fmt.Fprintf(std.Stderr, "corral exec: %s\n", out.Reason)
	}
	if out.ExitCode != 0 {
		return &exitError{code: out.ExitCode, err: fmt.Errorf("")}
	}
	return nil
}
