package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/corral-dev/corral/internal/agents"
)

// runIntegrate installs or removes the integrations that need a file of
// the user's: Gemini CLI takes hooks from an ordinary user only through
// an extension in ~/.gemini/extensions. Without an agent it says how each
// agent gets corral's hooks.
func runIntegrate(_ context.Context, std IO, args []string) error {
	fs := newFlags("integrate", std)
	remove := fs.Bool("remove", false, "take the integration away")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	home := agents.GeminiHome(os.Environ())
	if len(pos) == 0 {
		fmt.Fprintln(std.Stdout, "claude-code  on its command line for each run (--settings): nothing to install")
		fmt.Fprintln(std.Stdout, "codex        on its command line for each run (-c notify=…): nothing to install")
		if agents.GeminiInstalled(home) {
			fmt.Fprintf(std.Stdout, "gemini       corral's extension in %s (corral integrate gemini --remove takes it away)\n", agents.GeminiExtensionDir(home))
		} else {
			fmt.Fprintln(std.Stdout, "gemini       not installed: corral integrate gemini adds corral's Gemini CLI extension (its hooks do nothing outside corral)")
		}
		return nil
	}
	if len(pos) != 1 {
		return usagef("need one agent: gemini")
	}
	switch pos[0] {
	case "gemini":
	case "claude", "claude-code", "codex":
		return usagef("%s needs nothing installed: corral adds its hooks to its command line for each run", pos[0])
	default:
		return usagef("no integration to install for %q: gemini is the one that needs a file (claude-code and codex need none)", pos[0])
	}
	if *remove {
		dir, removed, err := agents.RemoveGemini(home)
		if err != nil {
			return err
		}
		if removed {
			fmt.Fprintf(std.Stdout, "removed %s\n", dir)
		} else {
			fmt.Fprintf(std.Stdout, "nothing to remove: %s is not there\n", dir)
		}
		return nil
	}
	dir, err := agents.InstallGemini(home)
	if err != nil {
		return err
	}
	fmt.Fprintf(std.Stdout, "installed %s: Gemini CLI started in a corral pane from now on reports through its hooks\n", dir)
	return nil
}
