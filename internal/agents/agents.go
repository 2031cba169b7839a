// Package agents knows how each agent CLI reports on itself: the
// integration corral adds to its command line for one run (never touching
// the user's own settings files), and how to read what its hooks send.
package agents

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Claude Code hook events corral listens to.
var claudeEvents = []string{"SessionStart", "PermissionRequest", "Notification", "UserPromptSubmit", "PostToolUse", "Stop", "StopFailure", "SessionEnd"}

// Launch is a command line with corral's reporting added for one run.
type Launch struct {
	Argv  []string
	Env   []string // added to the program's environment
	Agent string   // the agent integrated with ("" for none)
	// Files were written for this run; remove them when it ends.
	Files []string
}

// Gemini CLI hook events corral listens to.
var geminiEvents = []string{"Notification", "BeforeAgent", "AfterAgent", "AfterTool", "SessionEnd"}

// IntegrateRun is Integrate plus the agents whose integration is a file:
// Gemini CLI reads extra settings from GEMINI_CLI_SYSTEM_DEFAULTS_PATH (the
// lowest-precedence layer; hook lists are concatenated with the user's
// own), so corral writes one into dir for this run. NOTE: Gemini CLI skips
// that file when a parent folder is writable by others (/tmp): dir must be
// a private folder, as the default state folder is. env is the program's
// environment: a user who set that variable, or a machine with its own
// /etc/gemini-cli/system-defaults.json, is left alone.
func IntegrateRun(argv []string, hook []string, env []string, dir, id string) (Launch, error) {
	out, agent := Integrate(argv, hook)
	l := Launch{Argv: out, Agent: agent}
	if agent != "" || len(argv) == 0 || filepath.Base(argv[0]) != "gemini" {
		return l, nil
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH=") {
			return l, nil
		}
	}
	if _, err := os.Stat("/etc/gemini-cli/system-defaults.json"); err == nil {
		return l, nil
	}
	cmd := shellQuote(append(append([]string(nil), hook...), "--agent", "gemini"))
	// Gemini CLI runs hooks with a sanitised environment (names with TOKEN
	// go): the hook gets corral's variables from its own definition.
	hookEnv := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "CORRAL_") {
			hookEnv[k] = v
		}
	}
	entry := []map[string]any{{"matcher": "*", "hooks": []map[string]any{{"name": "corral", "type": "command", "command": cmd, "timeout": 10000, "env": hookEnv}}}}
	hooks := map[string]any{}
	for _, ev := range geminiEvents {
		hooks[ev] = entry
	}
	data, _ := json.MarshalIndent(map[string]any{"hooks": hooks}, "", "  ")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return l, fmt.Errorf("gemini integration: %w", err)
	}
	path := filepath.Join(dir, "gemini-"+id+".json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return l, fmt.Errorf("gemini integration: %w", err)
	}
	l.Env = []string{"GEMINI_CLI_SYSTEM_DEFAULTS_PATH=" + path}
	l.Agent, l.Files = "gemini", []string{path}
	return l, nil
}

// Integrate returns the command line with corral's reporting added, and the
// agent it is for ("" when the command is no agent corral integrates
// with through its command line). hook is the command a hook runs, e.g.
// ["/usr/bin/corral", "hook"].
func Integrate(argv []string, hook []string) ([]string, string) {
	if len(argv) == 0 {
		return argv, ""
	}
	switch filepath.Base(argv[0]) {
	case "claude":
		cmd := shellQuote(append(append([]string(nil), hook...), "--agent", "claude-code"))
		entry := []map[string]any{{"hooks": []map[string]any{{"type": "command", "command": cmd, "timeout": 10}}}}
		hooks := map[string]any{}
		for _, ev := range claudeEvents {
			hooks[ev] = entry
		}
		settings, _ := json.Marshal(map[string]any{"hooks": hooks})
		return insertAfterFirst(argv, "--settings", string(settings)), "claude-code"
	case "codex":
		parts := make([]string, 0, len(hook)+2)
		for _, h := range append(append([]string(nil), hook...), "--agent", "codex") {
			parts = append(parts, fmt.Sprintf("%q", h))
		}
		return insertAfterFirst(argv, "-c", "notify=["+strings.Join(parts, ",")+"]"), "codex"
	}
	return argv, ""
}

func insertAfterFirst(argv []string, extra ...string) []string {
	out := append([]string{argv[0]}, extra...)
	return append(out, argv[1:]...)
}

// shellQuote joins words for sh -c, each in single quotes.
func shellQuote(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
