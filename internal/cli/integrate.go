package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/corral-dev/corral/internal/agents"
	"github.com/spf13/pflag"
)

// runIntegrate installs or removes the integrations that need a file of
// the user's: Gemini CLI takes hooks from an ordinary user only through
// an extension in ~/.gemini/extensions. Without an agent it says how each
// agent gets corral's hooks.
func runIntegrate(fs *pflag.FlagSet) runFunc {
	remove := fs.Bool("remove", false, "take the integration away")
	global := fs.Bool("global", false, "claude-code: add corral's hooks to Claude Code's own settings, for agents started outside corral in the tmux panes corral watches")
	asJSON := fs.Bool("json", false, "print as JSON: alone, an array of {\"agent\", \"installed\", \"how\"}; with an agent, that object")
	return func(_ context.Context, std IO, pos []string) error {
		home := agents.GeminiHome(os.Environ())
		gemini := func() integration {
			dir := agents.GeminiExtensionDir(home)
			if agents.GeminiInstalled(home) {
				return integration{"gemini", true, "corral's extension in " + dir, dir}
			}
			return integration{"gemini", false, "corral's extension, not installed: corral integrate gemini adds it", dir}
		}
		if len(pos) == 0 && *asJSON {
			return printJSON(std, []integration{
				{"claude-code", true, "on its command line for each run (--settings): nothing to install", ""},
				{"codex", true, "on its command line for each run (-c notify=…): nothing to install", ""},
				gemini(),
			})
		}
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
		case "claude", "claude-code":
			if *global {
				return integrateClaudeGlobal(std, *remove, *asJSON)
			}
			return usagef("%s needs nothing installed for corral's panes: corral adds its hooks to its command line for each run; --global adds them to its settings for agents started outside corral, in watched tmux panes", pos[0])
		case "codex":
			return usagef("%s needs nothing installed: corral adds its hooks to its command line for each run", pos[0])
		default:
			return usagef("no integration to install for %q: gemini is the one that needs a file (claude-code and codex need none)", pos[0])
		}
		if *remove {
			dir, removed, err := agents.RemoveGemini(home)
			if err != nil {
				return err
			}
			if *asJSON {
				return printJSON(std, gemini())
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
		if *asJSON {
			return printJSON(std, gemini())
		}
		fmt.Fprintf(std.Stdout, "installed %s: Gemini CLI started in a corral pane from now on reports through its hooks\n", dir)
		return nil
	}
}

// integration is how one agent gets corral's hooks (integrate --json).
type integration struct {
	Agent     string `json:"agent"`
	Installed bool   `json:"installed"` // hooks reach corral: nothing to install, or installed
	How       string `json:"how"`
	Dir       string `json:"dir,omitempty"` // the extension's folder, for Gemini CLI
}

// integrateClaudeGlobal adds (or removes) corral's hooks in Claude Code's
// user settings: an agent started outside corral, in a tmux pane corral
// watches, then reports through them.
func integrateClaudeGlobal(std IO, remove, asJSON bool) error {
	path, err := agents.ClaudeSettingsPath(os.Environ())
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find corral's own executable for the hook command: %w", err)
	}
	changed, err := agents.InstallClaudeGlobal(path, []string{exe, "hook"}, remove)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(std, integration{"claude-code", agents.ClaudeGlobalInstalled(path), "corral's hooks in " + path + " for agents started outside corral", path})
	}
	switch {
	case remove && changed:
		fmt.Fprintf(std.Stdout, "removed corral's hooks from %s\n", path)
	case remove:
		fmt.Fprintf(std.Stdout, "nothing to remove: %s has no hooks of corral's\n", path)
	case changed:
		fmt.Fprintf(std.Stdout, "added corral's hooks to %s: Claude Code started in a tmux pane corral watches reports through them (restart running sessions to take them)\n", path)
	default:
		fmt.Fprintf(std.Stdout, "%s has corral's hooks already\n", path)
	}
	return nil
}
