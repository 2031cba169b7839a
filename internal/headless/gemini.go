package headless

import (
	"encoding/json"
)

// parseGemini reads `gemini -p --output-format stream-json`.
func parseGemini(m map[string]json.RawMessage) Event {
	switch str(m, "type") {
	case "init":
		return Event{Type: EventInit, SessionID: str(m, "session_id")}
	case "message":
		if str(m, "role") == "assistant" {
			var delta bool
			_ = json.Unmarshal(m["delta"], &delta)
			return Event{Type: EventText, Text: str(m, "content"), Delta: delta}
		}
	case "tool_use":
		return Event{Type: EventToolUse, Tool: str(m, "tool_name"), Input: toolDetail(m["parameters"])}
	case "tool_result":
		var r struct {
			Status string `json:"status"`
			Output string `json:"output"`
			Error  struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(mustJSON(m), &r)
		e := Event{Type: EventToolResult, Text: clip(r.Output), Subtype: r.Status, IsError: r.Status != "" && r.Status != "success"}
		if e.IsError && r.Error.Message != "" {
			e.Text = clip(r.Error.Message)
		}
		exitStatus(&e)
		return e
	case "error":
		return Event{Type: EventWarning, Subtype: str(m, "severity"), Text: clip(str(m, "message"))}
	case "result":
		var r struct {
			Status string `json:"status"`
			Error  struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
			Stats struct {
				rawUsage
				Duration  int64 `json:"duration_ms"`
				ToolCalls int   `json:"tool_calls"`
			} `json:"stats"`
		}
		_ = json.Unmarshal(mustJSON(m), &r)
		return Event{Type: EventResult, Subtype: r.Status, IsError: r.Status != "success", Text: clip(innerMessage(r.Error.Message)),
			Duration: r.Stats.Duration, ToolCalls: r.Stats.ToolCalls, Usage: r.Stats.usage()}
	}
	return Event{Type: EventOther}
}
