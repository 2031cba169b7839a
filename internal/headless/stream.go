// Package headless runs agents non-interactively, for pipelines: it reads
// their machine-readable output (Claude Code's stream-json, codex exec
// --json, Gemini CLI's stream-json) line by line into typed events, keeps
// stderr apart, and decides how the run ended — never hanging on a prompt.
package headless

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// EventType names what a line said.
type EventType string

const (
	EventInit       EventType = "init"        // the session started; SessionID is known
	EventText       EventType = "assistant"   // assistant text
	EventToolUse    EventType = "tool_use"    // a tool call
	EventToolResult EventType = "tool_result" // a tool's result
	EventRetry      EventType = "retry"       // the model API is being retried
	EventResult     EventType = "result"      // the run's result (the last line of a good run)
	EventPermission EventType = "permission"  // the agent asks to use a tool (control protocol)
	EventDecision   EventType = "decision"    // corral's answer to a permission request
	EventDiagnostic EventType = "diagnostic"  // a line that is not an event (kept, counted)
	EventOther      EventType = "other"       // a JSON line corral has no use for
)

// Event is one line of an agent's stream.
type Event struct {
	Type      EventType `json:"type"`
	SessionID string    `json:"session_id,omitempty"`
	Text      string    `json:"text,omitempty"`
	Tool      string    `json:"tool,omitempty"`
	Input     string    `json:"input,omitempty"`
	IsError   bool      `json:"is_error,omitempty"`
	Subtype   string    `json:"subtype,omitempty"`
	CostUSD   float64   `json:"cost_usd,omitempty"`
	Duration  int64     `json:"duration_ms,omitempty"`
	Turns     int       `json:"turns,omitempty"`
	// Line is the raw line for diagnostics (clipped).
	Line string `json:"line,omitempty"`
	// RequestID names a permission request; Allow and By say how it was
	// decided (decision events).
	RequestID string `json:"request_id,omitempty"`
	Allow     bool   `json:"allow,omitempty"`
	By        string `json:"by,omitempty"`
	// rawInput is the tool's input as sent, echoed back on allow.
	rawInput json.RawMessage
}

// MaxLine bounds one line; a longer line is cut and kept as a diagnostic.
const MaxLine = 64 << 20

// clipLine bounds the raw line kept on a diagnostic.
const clipLine = 2048

// Lines reads newline-terminated lines of any length up to MaxLine,
// whatever the reads' boundaries. A last line without a newline (the
// writer died mid-line) is returned too. A line over MaxLine is returned
// cut, with truncated set.
type Lines struct {
	r *bufio.Reader
}

// NewLines reads lines from r.
func NewLines(r io.Reader) *Lines { return &Lines{r: bufio.NewReaderSize(r, 64<<10)} }

// Next returns the next line without its newline, or io.EOF.
func (l *Lines) Next() (line []byte, truncated bool, err error) {
	var buf []byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLine {
			room := MaxLine - len(buf)
			if room > 0 {
				buf = append(buf, chunk[:room]...)
			}
			truncated = true
		} else {
			buf = append(buf, chunk...)
		}
		switch {
		case err == nil:
			return bytes.TrimRight(buf, "\r\n"), truncated, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(buf) > 0:
			return bytes.TrimRight(buf, "\r\n"), truncated, nil
		default:
			return nil, false, err
		}
	}
}

// Parse reads one line of agent's stream ("claude", "codex" or "gemini").
// A line that is not a JSON object is a diagnostic, never an error.
func Parse(agent string, line []byte) Event {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return diagnostic(line)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return diagnostic(line)
	}
	switch agent {
	case "codex":
		return parseCodex(m)
	case "gemini":
		return parseGemini(m)
	}
	return parseClaude(m)
}

func diagnostic(line []byte) Event {
	s := string(line)
	if len(s) > clipLine {
		s = s[:clipLine] + "…"
	}
	return Event{Type: EventDiagnostic, Line: strings.ToValidUTF8(s, "\uFFFD")}
}

func str(m map[string]json.RawMessage, key string) string {
	var s string
	_ = json.Unmarshal(m[key], &s)
	return s
}

// parseClaude reads `claude -p --output-format stream-json --verbose`.
func parseClaude(m map[string]json.RawMessage) Event {
	switch str(m, "type") {
	case "system":
		switch str(m, "subtype") {
		case "init":
			return Event{Type: EventInit, SessionID: str(m, "session_id")}
		case "api_retry":
			return Event{Type: EventRetry, Subtype: "api_retry"}
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
				return Event{Type: EventToolUse, Tool: c.Name, Input: compact(c.Input)}
			case "tool_result":
				return Event{Type: EventToolResult, Text: clip(compact(c.Content)), IsError: c.IsError}
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
			Subtype  string  `json:"subtype"`
			IsError  bool    `json:"is_error"`
			Cost     float64 `json:"total_cost_usd"`
			Duration int64   `json:"duration_ms"`
			Turns    int     `json:"num_turns"`
			Result   string  `json:"result"`
			Session  string  `json:"session_id"`
		}
		_ = json.Unmarshal(mustJSON(m), &r)
		return Event{Type: EventResult, Subtype: r.Subtype, IsError: r.IsError, CostUSD: r.Cost, Duration: r.Duration,
			Turns: r.Turns, Text: r.Result, SessionID: r.Session}
	}
	return Event{Type: EventOther}
}

// parseCodex reads `codex exec --json`.
func parseCodex(m map[string]json.RawMessage) Event {
	switch str(m, "type") {
	case "thread.started":
		return Event{Type: EventInit, SessionID: str(m, "thread_id")}
	case "item.completed", "item.started":
		var it struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Command string `json:"command"`
			Output  string `json:"aggregated_output"`
		}
		_ = json.Unmarshal(m["item"], &it)
		switch it.Type {
		case "agent_message":
			return Event{Type: EventText, Text: it.Text}
		case "command_execution":
			if str(m, "type") == "item.started" {
				return Event{Type: EventToolUse, Tool: "shell", Input: it.Command}
			}
			return Event{Type: EventToolResult, Text: clip(it.Output)}
		}
	case "turn.completed":
		return Event{Type: EventResult, Subtype: "success"}
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
		return Event{Type: EventResult, IsError: true, Subtype: str(m, "type"), Text: msg}
	}
	return Event{Type: EventOther}
}

// parseGemini reads `gemini -p --output-format stream-json`.
func parseGemini(m map[string]json.RawMessage) Event {
	switch str(m, "type") {
	case "init":
		return Event{Type: EventInit, SessionID: str(m, "session_id")}
	case "message":
		if str(m, "role") == "assistant" {
			return Event{Type: EventText, Text: str(m, "content")}
		}
	case "tool_use":
		return Event{Type: EventToolUse, Tool: str(m, "tool_name"), Input: compact(m["parameters"])}
	case "tool_result":
		return Event{Type: EventToolResult, Text: clip(str(m, "output"))}
	case "error":
		return Event{Type: EventDiagnostic, Line: str(m, "message")}
	case "result":
		status := str(m, "status")
		return Event{Type: EventResult, Subtype: status, IsError: status != "" && status != "success"}
	}
	return Event{Type: EventOther}
}

// toolDetail is what a permission is for: a shell command, a path, or the
// input as compact JSON.
func toolDetail(input json.RawMessage) string {
	var fields map[string]any
	if json.Unmarshal(input, &fields) == nil {
		for _, key := range []string{"command", "file_path", "path", "url", "pattern"} {
			if v, ok := fields[key].(string); ok && v != "" {
				return clip(v)
			}
		}
	}
	return compact(input)
}

func mustJSON(m map[string]json.RawMessage) []byte {
	b, _ := json.Marshal(m)
	return b
}

func compact(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return clip(string(raw))
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return clip(s)
	}
	return clip(buf.String())
}

func clip(s string) string {
	if len(s) > clipLine {
		return s[:clipLine] + "…"
	}
	return s
}

// String is a one-line readable form, for `corral exec` without --json.
func (e Event) String() string {
	switch e.Type {
	case EventInit:
		return "session " + e.SessionID
	case EventText:
		return "assistant: " + e.Text
	case EventToolUse:
		return fmt.Sprintf("tool %s: %s", e.Tool, e.Input)
	case EventToolResult:
		return "result: " + e.Text
	case EventRetry:
		return "retrying the model API"
	case EventResult:
		if e.IsError {
			return fmt.Sprintf("error: %s %s", e.Subtype, e.Text)
		}
		return fmt.Sprintf("done: %s, %d turns, %d ms, $%.4f", e.Subtype, e.Turns, e.Duration, e.CostUSD)
	case EventDiagnostic:
		return "(not an event) " + e.Line
	case EventPermission:
		return fmt.Sprintf("permission? %s: %s", e.Tool, e.Input)
	case EventDecision:
		verb := "denied"
		if e.Allow {
			verb = "allowed"
		}
		return fmt.Sprintf("%s %s: %s (%s)", verb, e.Tool, e.Input, e.By)
	}
	return string(e.Type)
}
