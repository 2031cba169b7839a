package agents

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/internal/combine"
)

// Report is what one hook call says. Ignore: it says nothing about the
// pane's state. Clear: the session ended; forget the hook's last word.
type Report struct {
	State   combine.State
	Kind    string
	Message string
	Clear   bool
	Ignore  bool
	Event   string
	// Session is the conversation the report is about (Claude Code's and
	// Gemini CLI's session_id); NewSession: that session just started.
	Session    string
	NewSession bool
	// Why says why an ignored report was ignored. Hidden: the report is
	// of a turn the agent ran for itself, under a session of its own that
	// is not the user's conversation (it cannot be resumed).
	Why    string
	Hidden bool
	// Reminder: the agent's notice that it waits, which may come again
	// for a prompt it reported already (Claude Code's Notification, about
	// 6 s after its PermissionRequest): it does not replace that report's
	// words (detect.Hook.Reminder).
	Reminder bool
}

// hiddenRequests begin the input of turns an agent runs for itself, not
// for its user: Codex notifies the end of its title-generation thread as
// if it were a turn of the conversation.
var hiddenRequests = []string{"Generate a concise, single-line task title"}

// MaxPayload bounds a hook payload.
const MaxPayload = 1 << 20

// ParseHook reads a hook payload from agent. A payload that is not a JSON
// object is an error; a field of an unexpected type reads as absent; an
// event corral does not know is ignored.
func ParseHook(agent string, payload []byte) (Report, error) {
	if len(payload) > MaxPayload {
		return Report{}, fmt.Errorf("hook payload is %d bytes; the limit is %d", len(payload), MaxPayload)
	}
	var p fields
	if err := json.Unmarshal(payload, &p); err != nil || p == nil {
		return Report{}, fmt.Errorf("hook payload is not a JSON object: %s", clip(string(payload[:min(len(payload), 60)])))
	}
	ev := p.str("hook_event_name")
	if ev == "" {
		ev = p.str("type") // Codex notify
	}
	r := Report{Event: ev, Session: p.str("session_id")}
	switch ev {
	case "PermissionRequest":
		r.State = combine.Blocked
		r.Kind, r.Message = approveMessage(p.str("tool_name"), p["tool_input"])
	case "Notification":
		r.Reminder = true
		switch p.str("notification_type") {
		case "permission_prompt", "ToolPermission":
			r.State, r.Kind, r.Message = combine.Blocked, "permission", clip(p.str("message"))
		case "elicitation_dialog", "agent_needs_input":
			// agent_needs_input: a notice waits for the user's choice (Claude
			// Code's auto mode that cannot check a session's actions), about
			// 6 s after it is drawn, as permission_prompt is.
			r.State, r.Kind, r.Message = combine.Blocked, "question", clip(p.str("message"))
		default:
			r.Ignore, r.Why = true, "notification "+p.str("notification_type") // idle_prompt and others say nothing new
		}
	case "UserPromptSubmit", "PreToolUse", "PostToolUse", "BeforeAgent", "BeforeTool", "AfterTool":
		r.State = combine.Working
	case "agent-turn-complete":
		for _, in := range p.strs("input-messages") {
			for _, hidden := range hiddenRequests {
				if strings.HasPrefix(strings.TrimSpace(in), hidden) {
					r.Ignore, r.Why, r.Hidden = true, "the agent's own hidden request", true
					return r, nil
				}
			}
		}
		r.State = combine.Done
	case "Stop", "AfterAgent":
		r.State = combine.Done
		if n := p.count("background_tasks"); n > 0 {
			r.Message = combine.Background(n)
		}
	case "StopFailure":
		r.State, r.Message = combine.Error, clip(p.str("error"))
	case "SessionStart":
		r.State, r.NewSession = combine.Idle, true
	case "SessionEnd":
		r.Clear = true
	default:
		// SubagentStop is a sub-agent's, not the agent's; others say nothing.
		r.Ignore, r.Why = true, "event "+clip(ev)
		if ev == "" {
			r.Why = "no event name"
		}
	}
	return r, nil
}

// fields is a JSON object read leniently: a hook payload of any shape
// must not fail a field it does not need.
type fields map[string]json.RawMessage

// str returns the field as a string, or "" when it is absent or not one.
func (f fields) str(key string) string {
	var s string
	if json.Unmarshal(f[key], &s) != nil {
		return ""
	}
	return s
}

// count returns how many the field holds: a list's length, or a number.
func (f fields) count(key string) int {
	var list []json.RawMessage
	if json.Unmarshal(f[key], &list) == nil {
		return len(list)
	}
	var n float64
	if json.Unmarshal(f[key], &n) == nil && n > 0 && n < 1e6 {
		return int(n)
	}
	return 0
}

// strs returns the field as a list of strings, skipping anything else.
func (f fields) strs(key string) []string {
	var raw []json.RawMessage
	_ = json.Unmarshal(f[key], &raw)
	var out []string
	for _, r := range raw {
		var s string
		if json.Unmarshal(r, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// approveMessage says what a permission is for: "approve Bash: ls -la
// /tmp". A question (Claude Code's AskUserQuestion) is a question, with its
// words and options, not a tool's input.
func approveMessage(tool string, input json.RawMessage) (kind, message string) {
	var in fields
	_ = json.Unmarshal(input, &in)
	if q := questionMessage(in); q != "" {
		return "question", q
	}
	detail := ""
	for _, key := range []string{"command", "file_path", "path", "url", "pattern"} {
		if v := in.str(key); v != "" {
			detail = v
			break
		}
	}
	if detail == "" && len(input) > 0 && string(input) != "null" {
		detail = string(input)
	}
	if tool == "" {
		tool = "a tool"
	}
	msg := "approve " + tool
	if detail != "" {
		msg += ": " + detail
	}
	return "permission", clip(msg)
}

// questionMessage reads {"questions":[{"question":…,"options":[{"label":…}…]}…]}
// as "question? (A / B / C)"; "" when input holds no question.
func questionMessage(in fields) string {
	var qs []struct {
		Question string `json:"question"`
		Options  []struct {
			Label string `json:"label"`
		} `json:"options"`
	}
	if json.Unmarshal(in["questions"], &qs) != nil || len(qs) == 0 || strings.TrimSpace(qs[0].Question) == "" {
		return ""
	}
	msg := qs[0].Question
	var labels []string
	for _, o := range qs[0].Options {
		if o.Label != "" {
			labels = append(labels, o.Label)
		}
	}
	if len(labels) > 0 {
		msg += " (" + strings.Join(labels, " / ") + ")"
	}
	if len(qs) > 1 {
		msg += fmt.Sprintf(" and %d more", len(qs)-1)
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
