package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OutsideFlag marks the hook command corral puts in an agent's own
// settings: it reports only for agents started outside corral (in a tmux
// pane corral watches), since a corral pane's agent has hooks of its own on
// its command line and would report twice.
const OutsideFlag = "--outside"

// ClaudeSettingsPath is Claude Code's user settings file:
// $CLAUDE_CONFIG_DIR/settings.json, else ~/.claude/settings.json.
func ClaudeSettingsPath(env []string) (string, error) {
	if dir := lookup(env, "CLAUDE_CONFIG_DIR"); dir != "" {
		return filepath.Join(dir, "settings.json"), nil
	}
	home := lookup(env, "HOME")
	if home == "" {
		return "", errors.New("HOME is not set: cannot find Claude Code's settings (set CLAUDE_CONFIG_DIR)")
	}
	return filepath.Join(home, ".claude", "settings.json"), nil
}

// isCorralOutsideHook says whether a hook entry's command is corral's.
func isCorralOutsideHook(cmd string) bool {
	return strings.Contains(cmd, "'hook'") && strings.Contains(cmd, "'"+OutsideFlag+"'")
}

// MergeClaudeHooks returns Claude Code settings with corral's hooks for
// agents started outside corral added (or, with remove, taken away),
// keeping every other setting and hook as it was; changed says whether
// anything changed. Unknown fields are kept, in their own order where the
// JSON object allows.
func MergeClaudeHooks(settings []byte, hook []string, remove bool) (out []byte, changed bool, err error) {
	root := map[string]any{}
	if len(bytes.TrimSpace(settings)) > 0 {
		if err := json.Unmarshal(settings, &root); err != nil {
			return nil, false, fmt.Errorf("Claude Code's settings are not a JSON object (%v): fix or move the file, then run this again", err)
		}
	}
	hooks, _ := root["hooks"].(map[string]any)
	if root["hooks"] != nil && hooks == nil {
		return nil, false, errors.New(`Claude Code's settings have "hooks" that is not an object: fix it, then run this again`)
	}
	if hooks == nil {
		hooks = map[string]any{}
	}
	cmd := shellQuote(append(append([]string(nil), hook...), "--agent", "claude-code", OutsideFlag))
	for _, ev := range claudeEvents {
		groups, _ := hooks[ev].([]any)
		var kept []any
		for _, g := range groups {
			if gm, ok := g.(map[string]any); ok && groupIsCorral(gm) {
				continue
			}
			kept = append(kept, g)
		}
		if !remove {
			kept = append(kept, map[string]any{"hooks": []any{map[string]any{"type": "command", "command": cmd, "timeout": 10}}})
		}
		if len(kept) == 0 {
			delete(hooks, ev)
		} else {
			hooks[ev] = kept
		}
	}
	if len(hooks) == 0 {
		delete(root, "hooks")
	} else {
		root["hooks"] = hooks
	}
	out, err = json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, false, err
	}
	out = append(out, '\n')
	var before any
	_ = json.Unmarshal(settings, &before)
	var after any
	_ = json.Unmarshal(out, &after)
	beforeJSON, _ := json.Marshal(before)
	afterJSON, _ := json.Marshal(after)
	return out, !bytes.Equal(beforeJSON, afterJSON), nil
}

func groupIsCorral(g map[string]any) bool {
	list, _ := g["hooks"].([]any)
	if len(list) == 0 {
		return false
	}
	for _, h := range list {
		hm, _ := h.(map[string]any)
		cmd, _ := hm["command"].(string)
		if !isCorralOutsideHook(cmd) {
			return false
		}
	}
	return true
}

// ClaudeGlobalInstalled says whether Claude Code's user settings carry
// corral's hooks for agents started outside corral.
func ClaudeGlobalInstalled(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	return bytes.Contains(b, []byte(OutsideFlag)) && bytes.Contains(b, []byte("corral"))
}

// InstallClaudeGlobal adds (or with remove takes away) corral's hooks in
// Claude Code's user settings at path; changed says whether the file
// changed.
func InstallClaudeGlobal(path string, hook []string, remove bool) (changed bool, err error) {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if remove && errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	out, changed, err := MergeClaudeHooks(old, hook, remove)
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if !changed {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := writeAtomic(path, out, mode); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}
