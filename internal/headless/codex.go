package headless

import (
	"encoding/json"
	"fmt"
	"strings"
)

// codexItem is an item of codex exec --json.
type codexItem struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Message  string `json:"message"`
	Command  string `json:"command"`
	Output   string `json:"aggregated_output"`
	ExitCode *int   `json:"exit_code"`
	Status   string `json:"status"`
	Changes  []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error"`
	Query string `json:"query"`
}

// parseCodex reads `codex exec --json`.
func parseCodex(m map[string]json.RawMessage) Event {
	t := str(m, "type")
	switch t {
	case "thread.started":
		return Event{Type: EventInit, SessionID: str(m, "thread_id")}
	case "item.completed", "item.started":
		var it codexItem
		_ = json.Unmarshal(m["item"], &it)
		started := t == "item.started"
		failed := it.Status == "failed" || it.Status == "declined"
		switch it.Type {
		case "agent_message":
			return Event{Type: EventText, Text: it.Text}
		case "error":
			// An item, not the turn's end: Codex goes on (a fallback, a warning).
			return Event{Type: EventWarning, Text: clip(it.Message)}
		case "command_execution":
			if started {
				return Event{Type: EventToolUse, Tool: "shell", Input: clip(it.Command)}
			}
			e := Event{Type: EventToolResult, Tool: "shell", Text: clip(it.Output), IsError: failed}
			if it.ExitCode != nil && *it.ExitCode != 0 {
				e.IsError = true
				e.Subtype = fmt.Sprintf("exit %d", *it.ExitCode)
			}
			return e
		case "file_change":
			var desc []string
			var files []string
			for _, c := range it.Changes {
				desc = append(desc, c.Kind+" "+c.Path)
				files = append(files, c.Path)
			}
			if started {
				return Event{Type: EventToolUse, Tool: "edit", Input: clip(strings.Join(desc, ", ")), Files: files}
			}
			return Event{Type: EventToolResult, Tool: "edit", Text: clip(it.Status + ": " + strings.Join(desc, ", ")), Files: files, IsError: failed}
		case "mcp_tool_call":
			tool := "mcp:" + it.Server + "/" + it.Tool
			if started {
				return Event{Type: EventToolUse, Tool: tool, Input: toolDetail(it.Arguments)}
			}
			e := Event{Type: EventToolResult, Tool: tool, Text: clip(compact(it.Result)), IsError: failed}
			if it.Error != nil {
				e.IsError, e.Text = true, clip(it.Error.Message)
			}
			return e
		case "web_search":
			if started {
				return Event{Type: EventToolUse, Tool: "web_search", Input: clip(it.Query)}
			}
			return Event{Type: EventToolResult, Tool: "web_search", Text: clip(it.Query), IsError: failed}
		}
	case "turn.completed":
		var r struct {
			Usage rawUsage `json:"usage"`
		}
		_ = json.Unmarshal(mustJSON(m), &r)
		return Event{Type: EventResult, Subtype: "success", Usage: r.Usage.usage()}
	case "turn.failed", "error":
		var e struct {
			Message string `json:"message"`
			Error   struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(mustJSON(m), &e)
		msg := e.Message
		if msg == "" {
			msg = e.Error.Message
		}
		// Codex says it is retrying the model API as an error event and
		// goes on: "Reconnecting... 2/5 (…)", "Reconnecting... waiting for
		// network (…)".
		if t == "error" && strings.HasPrefix(msg, "Reconnecting") {
			return Event{Type: EventRetry, Subtype: "reconnecting", Text: clip(msg)}
		}
		return Event{Type: EventResult, IsError: true, Subtype: t, Text: clip(innerMessage(msg))}
	}
	return Event{Type: EventOther}
}

// innerMessage is the message of an API error body quoted whole as a
// message (Codex: "{\"error\":{\"message\":…}}"; Gemini CLI: "[API
// Error: {…}]"), or msg.
func innerMessage(msg string) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	inner, prefix := msg, ""
	if rest, ok := strings.CutPrefix(msg, "[API Error: "); ok && strings.HasSuffix(rest, "]") {
		inner, prefix = strings.TrimSuffix(rest, "]"), "API Error: "
	}
	if strings.HasPrefix(inner, "{") && json.Unmarshal([]byte(inner), &body) == nil && body.Error.Message != "" {
		return prefix + body.Error.Message
	}
	return msg
}
