package agents

import (
	"bytes"
	"encoding/json"
)

// Permission is a PermissionRequest hook's request as the agent gave it:
// the tool and what a policy rule's input pattern is matched against (the
// command, file path, URL or pattern the tool acts on, or the whole input
// as compact JSON), never clipped. Whole is false when the request could
// not be read whole; Question is true for a question to the person
// (Claude Code's AskUserQuestion), which no policy answers.
type Permission struct {
	Tool     string
	Input    string
	Whole    bool
	Question bool
	// Options are a question's choices, in order (its first question's).
	Options []string
	// InputKey is the field of the tool's input that Input is ("command",
	// "file_path", …); "" when Input is the whole input as JSON, or a
	// request reported only as a message.
	InputKey string
	// Fields are every top-level field of the tool's input, a string as
	// it is and anything else as compact JSON, so a policy can check
	// them all; nil when the input was not read.
	Fields map[string]string
}

// ParsePermission reads a PermissionRequest payload (Claude Code's and
// Codex's share the shape: tool_name, tool_input). ok is false for any
// other payload.
func ParsePermission(payload []byte) (p Permission, ok bool) {
	if len(payload) > MaxPayload {
		return p, false
	}
	var f fields
	if json.Unmarshal(payload, &f) != nil || f == nil || f.str("hook_event_name") != "PermissionRequest" {
		return p, false
	}
	p.Tool = f.str("tool_name")
	raw := bytes.TrimSpace(f["tool_input"])
	var in fields
	if p.Tool == "" || len(raw) == 0 || json.Unmarshal(raw, &in) != nil || in == nil {
		return p, true // not whole: no tool, or no input object to read
	}
	if questionMessage(in) != "" {
		p.Question, p.Options = true, questionOptions(in)
		return p, true
	}
	p.Fields = make(map[string]string, len(in))
	for key, val := range in {
		var s string
		val = bytes.TrimSpace(val)
		if !bytes.HasPrefix(val, []byte(`"`)) || json.Unmarshal(val, &s) != nil {
			var buf bytes.Buffer
			if json.Compact(&buf, val) != nil {
				return Permission{Tool: p.Tool}, true
			}
			s = buf.String()
		}
		p.Fields[key] = s
	}
	for _, key := range []string{"command", "file_path", "path", "url", "pattern"} {
		if s := in.str(key); s != "" {
			p.Input, p.InputKey, p.Whole = s, key, true
			return p, true
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return Permission{Tool: p.Tool}, true
	}
	p.Input, p.Whole = buf.String(), true
	return p, true
}

// questionOptions are the labels of a question's first options list.
func questionOptions(in fields) []string {
	var qs []struct {
		Options []struct {
			Label string `json:"label"`
		} `json:"options"`
	}
	if json.Unmarshal(in["questions"], &qs) != nil || len(qs) == 0 {
		return nil
	}
	var out []string
	for _, o := range qs[0].Options {
		out = append(out, clip(o.Label))
	}
	return out
}
