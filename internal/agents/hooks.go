package agents

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/internal/signal"
)

// Report is what one hook call says. Ignore: it says nothing about the
// pane's state. Clear: the session ended; forget the hook's last word.
type Report struct {
	State   signal.State
	Kind    string
	Message string
	Clear   bool
	Ignore  bool
	Event   string
}

// hookPayload is the union of the fields corral reads from Claude Code,
// Codex and Gemini CLI hook payloads.
type hookPayload struct {
	HookEventName    string          `json:"hook_event_name"`
	ToolName         string          `json:"tool_name"`
	ToolInput        json.RawMessage `json:"tool_input"`
	NotificationType string          `json:"notification_type"`
	Message          string          `json:"message"`
	Error            string          `json:"error"`
	Type             string          `json:"type"` // Codex notify
}

// MaxPayload bounds a hook payload.
const MaxPayload = 1 << 20

// ParseHook reads a hook payload from agent.
func ParseHook(agent string, payload []byte) (Report, error) {
	if len(payload) > MaxPayload {
		return Report{}, fmt.Errorf("hook payload is %d bytes; the limit is %d", len(payload), MaxPayload)
	}
	var p hookPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return Report{}, fmt.Errorf("hook payload is not JSON: %v", err)
	}
	ev := p.HookEventName
	if ev == "" {
		ev = p.Type
	}
	r := Report{Event: ev}
	switch ev {
	case "PermissionRequest":
		r.State, r.Kind, r.Message = signal.Blocked, "permission", approveMessage(p.ToolName, p.ToolInput)
	case "Notification":
		switch p.NotificationType {
		case "permission_prompt", "ToolPermission":
			r.State, r.Kind, r.Message = signal.Blocked, "permission", clip(p.Message)
		case "elicitation_dialog":
			r.State, r.Kind, r.Message = signal.Blocked, "question", clip(p.Message)
		default:
			r.Ignore = true // idle_prompt and others say nothing new
		}
	case "UserPromptSubmit", "PreToolUse", "PostToolUse", "BeforeAgent", "BeforeTool", "AfterTool":
		r.State = signal.Working
	case "Stop", "AfterAgent", "agent-turn-complete":
		r.State = signal.Done
	case "StopFailure":
		r.State, r.Message = signal.Error, clip(p.Error)
	case "SessionStart":
		r.State = signal.Idle
	case "SessionEnd":
		r.Clear = true
	default:
		// SubagentStop is a sub-agent's, not the agent's; others say nothing.
		r.Ignore = true
	}
	return r, nil
}

// approveMessage says what a permission is for: "approve Bash: ls -la /tmp".
func approveMessage(tool string, input json.RawMessage) string {
	var fields map[string]any
	_ = json.Unmarshal(input, &fields)
	detail := ""
	for _, key := range []string{"command", "file_path", "path", "url", "pattern"} {
		if v, ok := fields[key].(string); ok && v != "" {
			detail = v
			break
		}
	}
	if detail == "" && len(input) > 0 && string(input) != "null" {
		detail = string(input)
	}
	msg := "approve " + tool
	if detail != "" {
		msg += ": " + detail
	}
	return clip(msg)
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return s
}
