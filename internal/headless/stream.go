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
	"regexp"
	"strings"
	"sync"
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
	EventWarning    EventType = "warning"     // the agent warns and goes on (Text says what)
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
	ToolCalls int       `json:"tool_calls,omitempty"`
	Usage     *Usage    `json:"usage,omitempty"`
	// Delta marks a piece of a text that goes on in the next text event.
	Delta bool `json:"delta,omitempty"`
	// Files are the files a tool wrote.
	Files []string `json:"files,omitempty"`
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

// MarshalJSON writes a decision's "allow" even when it is false (a
// denial), and a result's "tool_calls" even when it is 0.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	switch e.Type {
	case EventDecision:
		return json.Marshal(struct {
			plain
			Allow bool `json:"allow"`
		}{plain(e), e.Allow})
	case EventResult:
		return json.Marshal(struct {
			plain
			ToolCalls int `json:"tool_calls"`
		}{plain(e), e.ToolCalls})
	}
	return json.Marshal(plain(e))
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
	r   *bufio.Reader
	off int64 // bytes consumed: where the next line begins
}

// NewLines reads lines from r.
func NewLines(r io.Reader) *Lines { return &Lines{r: bufio.NewReaderSize(r, 64<<10)} }

// Next returns the next line without its newline, or io.EOF.
func (l *Lines) Next() (line []byte, truncated bool, err error) {
	var buf []byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		l.off += int64(len(chunk))
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

// Offset is the number of bytes consumed so far: where the next line
// begins, counted from where reading began.
func (l *Lines) Offset() int64 { return l.off }

// Formats are the stream formats corral reads: Claude Code's stream-json
// (which Qwen Code writes too), codex exec --json, and Gemini CLI's
// stream-json.
const (
	FormatClaude = "claude"
	FormatCodex  = "codex"
	FormatGemini = "gemini"
)

// FormatOf is the stream format an agent name stands for ("" when corral
// does not know it).
func FormatOf(agent string) string {
	switch agent {
	case "claude", "qwen":
		return FormatClaude
	case "codex":
		return FormatCodex
	case "gemini":
		return FormatGemini
	}
	return ""
}

// Parse reads one line of agent's stream ("claude", "qwen", "codex" or
// "gemini"). A line that is not a JSON object is a diagnostic, never an
// error.
func Parse(agent string, line []byte) Event {
	m, ok := object(line)
	if !ok {
		return diagnostic(line)
	}
	return parseAs(FormatOf(agent), m)
}

func object(line []byte) (map[string]json.RawMessage, bool) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, false
	}
	return m, true
}

func parseAs(format string, m map[string]json.RawMessage) Event {
	var e Event
	switch format {
	case FormatCodex:
		e = parseCodex(m)
	case FormatGemini:
		e = parseGemini(m)
	default:
		e = parseClaude(m)
	}
	if e.Type == EventOther {
		// Say what it was: its own type (and subtype), and the line.
		if e.Subtype == "" {
			e.Subtype = strings.Trim(str(m, "type")+"/"+str(m, "subtype"), "/")
		}
		if e.Line == "" {
			e.Line = clipRaw(mustJSON(m))
		}
	}
	return e
}

// clipRaw bounds a raw line kept on an event.
func clipRaw(b []byte) string {
	if len(b) > clipLine {
		return strings.ToValidUTF8(string(b[:clipLine]), "") + "…"
	}
	return string(b)
}

// Parser reads one run's stream. The format named by the agent is a
// guess: the first line whose shape says which format it is settles it,
// and a run whose stream is another agent's is read as that one (with a
// warning event saying so).
type Parser struct {
	format  string
	settled bool
}

// NewParser reads the stream of agent (any name; an unknown one waits for
// the stream to say its format, reading Claude's meanwhile).
func NewParser(agent string) *Parser {
	f := FormatOf(agent)
	if f == "" {
		f = FormatClaude
	}
	return &Parser{format: f}
}

// Format is the format the stream is read as.
func (p *Parser) Format() string { return p.format }

// Parse reads one line into its events.
func (p *Parser) Parse(line []byte) []Event {
	m, ok := object(line)
	if !ok {
		return []Event{diagnostic(line)}
	}
	var evs []Event
	if !p.settled {
		if f := DetectFormat(m); f != "" {
			p.settled = true
			if f != p.format {
				evs = append(evs, Event{Type: EventWarning, Subtype: "format",
					Text: fmt.Sprintf("the stream is in %s's format, not %s's: reading it as %s's", f, p.format, f)})
				p.format = f
			}
		}
	}
	return append(evs, parseAs(p.format, m))
}

// DetectFormat says which format a stream line is in, from the fields only
// that format has ("" when the line does not tell).
func DetectFormat(m map[string]json.RawMessage) string {
	t := str(m, "type")
	_, hasMessage := m["message"]
	_, hasSubtype := m["subtype"]
	_, hasRole := m["role"]
	_, hasStatus := m["status"]
	switch {
	case t == "thread.started" || t == "turn.started" || t == "turn.completed" || t == "turn.failed" || strings.HasPrefix(t, "item."):
		return FormatCodex
	case t == "system" && hasSubtype, t == "control_request",
		(t == "assistant" || t == "user") && hasMessage,
		t == "result" && hasSubtype:
		return FormatClaude
	case t == "init" && !hasSubtype, t == "message" && hasRole, t == "tool_use" && m["tool_name"] != nil,
		t == "result" && hasStatus:
		return FormatGemini
	}
	return ""
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

// apiErrorText is a result text that is the agent reporting a failed model
// request as if it were the answer (Qwen Code: "[API Error: Connection
// error]").
func apiErrorText(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "[API Error") || strings.HasPrefix(s, "API Error:")
}

// commandExit is how Gemini CLI and Qwen Code report a shell command's
// non-zero status in a tool result they call a success.
var commandExit = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^Command exited with code:? (\d+)`) })

// exitStatus marks a tool result whose command exited non-zero as failed.
func exitStatus(e *Event) {
	if m := commandExit().FindStringSubmatch(e.Text); m != nil && m[1] != "0" {
		e.IsError, e.Subtype = true, "exit "+m[1]
	}
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
		if e.IsError {
			if e.Subtype != "" {
				return fmt.Sprintf("result (failed, %s): %s", e.Subtype, e.Text)
			}
			return "result (failed): " + e.Text
		}
		return "result: " + e.Text
	case EventRetry:
		if e.Text != "" {
			return "retrying the model API: " + e.Text
		}
		return "retrying the model API"
	case EventWarning:
		return "warning: " + e.Text
	case EventResult:
		if e.IsError {
			return strings.TrimSpace(fmt.Sprintf("error: %s %s", e.Subtype, e.Text))
		}
		parts := []string{"done: " + e.Subtype}
		if e.Turns > 0 {
			parts = append(parts, fmt.Sprintf("%d turns", e.Turns))
		}
		if e.ToolCalls > 0 {
			parts = append(parts, fmt.Sprintf("%d tool calls", e.ToolCalls))
		}
		if e.Duration > 0 {
			parts = append(parts, fmt.Sprintf("%d ms", e.Duration))
		}
		if e.Usage != nil {
			parts = append(parts, fmt.Sprintf("%d tokens in, %d out", e.Usage.Input, e.Usage.Output))
		}
		if e.CostUSD > 0 {
			parts = append(parts, fmt.Sprintf("$%.4f", e.CostUSD))
		}
		return strings.Join(parts, ", ")
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

// Readable says whether the event belongs in the readable view: events
// corral has no use for stay in --json only.
func (e Event) Readable() bool { return e.Type != EventOther }

// ResultReason is an error result as a reason for the outcome: the
// agent's own words where it gave some.
func ResultReason(r *Event) string {
	var parts []string
	// Claude Code marks an API error's result subtype "success" with
	// is_error true: the subtype then says nothing.
	if r.Subtype != "" && r.Subtype != "success" {
		parts = append(parts, r.Subtype)
	}
	if r.Text != "" {
		parts = append(parts, r.Text)
	}
	if len(parts) == 0 {
		return "the result is an error"
	}
	return "the result is an error: " + strings.Join(parts, ": ")
}
