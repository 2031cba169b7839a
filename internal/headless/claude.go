package headless

import (
	"encoding/json"
	"fmt"
	"strings"
)

// parseClaude reads `claude -p --output-format stream-json --verbose`, and
// Qwen Code's stream, which has the same shape.
func parseClaude(m map[string]json.RawMessage) Event {
	switch str(m, "type") {
	case "system":
		switch str(m, "subtype") {
		case "init":
			return Event{Type: EventInit, SessionID: str(m, "session_id")}
		case "api_retry":
			var r struct {
				Attempt int    `json:"attempt"`
				Max     int    `json:"max_retries"`
				Error   string `json:"error"`
			}
			_ = json.Unmarshal(mustJSON(m), &r)
			text := ""
			if r.Attempt > 0 {
				text = fmt.Sprintf("attempt %d/%d", r.Attempt, r.Max)
			}
			if r.Error != "" {
				text = strings.TrimSpace(text + " " + r.Error)
			}
			return Event{Type: EventRetry, Subtype: "api_retry", Text: clip(text)}
		}
	case "assistant", "user":
		var msg struct {
			Content []struct {
				Type    string          `json:"type"`
				Text    string          `json:"text"`
				Name    string          `json:"name"`
				Input   json.RawMessage `json:"input"`
				Content json.RawMessage `json:"content"`
				IsError bool            `json:"is_error"`
			} `json:"content"`
		}
		_ = json.Unmarshal(m["message"], &msg)
		for _, c := range msg.Content {
			switch c.Type {
			case "text":
				return Event{Type: EventText, Text: c.Text}
			case "tool_use":
				return Event{Type: EventToolUse, Tool: c.Name, Input: toolDetail(c.Input)}
			case "tool_result":
				e := Event{Type: EventToolResult, Text: clip(compact(c.Content)), IsError: c.IsError}
				exitStatus(&e)
				return e
			}
		}
	case "control_request":
		var req struct {
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype  string          `json:"subtype"`
				ToolName string          `json:"tool_name"`
				Input    json.RawMessage `json:"input"`
			} `json:"request"`
		}
		_ = json.Unmarshal(mustJSON(m), &req)
		if req.Request.Subtype == "can_use_tool" {
			return Event{Type: EventPermission, RequestID: req.RequestID, Tool: req.Request.ToolName,
				Input: toolDetail(req.Request.Input), rawInput: req.Request.Input}
		}
		return Event{Type: EventOther, RequestID: req.RequestID, Subtype: req.Request.Subtype}
	case "result":
		var r struct {
			Subtype  *string  `json:"subtype"`
			IsError  *bool    `json:"is_error"`
			Cost     float64  `json:"total_cost_usd"`
			Duration int64    `json:"duration_ms"`
			Turns    int      `json:"num_turns"`
			Result   string   `json:"result"`
			Error    string   `json:"error"`
			Session  string   `json:"session_id"`
			Usage    rawUsage `json:"usage"`
		}
		_ = json.Unmarshal(mustJSON(m), &r)
		e := Event{Type: EventResult, CostUSD: r.Cost, Duration: r.Duration, Turns: r.Turns, Text: r.Result,
			SessionID: r.Session, Usage: r.Usage.usage()}
		if r.Subtype != nil {
			e.Subtype = *r.Subtype
		}
		switch {
		case r.Subtype == nil || r.IsError == nil:
			// Success is said, never assumed.
			e.IsError = true
			if e.Subtype == "" {
				e.Subtype = "incomplete"
			}
			if e.Text == "" {
				e.Text = "the result line has no subtype or is_error"
			}
		case *r.IsError || *r.Subtype != "success":
			e.IsError = true
		case apiErrorText(r.Result):
			e.IsError, e.Subtype = true, "api_error"
		}
		if e.IsError && e.Text == "" {
			e.Text = r.Error
		}
		return e
	}
	return Event{Type: EventOther}
}

// rawUsage is token usage as the agents write it.
type rawUsage struct {
	Input       int64 `json:"input_tokens"`
	Output      int64 `json:"output_tokens"`
	Cached      int64 `json:"cached_input_tokens"`
	CacheRead   int64 `json:"cache_read_input_tokens"`
	GeminiCache int64 `json:"cached"`
}

func (u rawUsage) usage() *Usage {
	if u == (rawUsage{}) {
		return nil
	}
	return &Usage{Input: u.Input, Output: u.Output, Cached: u.Cached + u.CacheRead + u.GeminiCache}
}

// Usage counts a run's tokens.
type Usage struct {
	Input  int64 `json:"input_tokens"`
	Output int64 `json:"output_tokens"`
	Cached int64 `json:"cached_tokens,omitempty"`
}
