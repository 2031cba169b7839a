package headless

import (
	"encoding/json"
	"strconv"
)

// acpClient is corral's side of the Agent Client Protocol (v1): JSON-RPC
// 2.0, one message per line. It opens a session, sends the prompt, turns
// the agent's updates into events, and routes session/request_permission
// like any permission request. The turn ends with session/prompt's answer.
type acpClient struct {
	send    func([]byte)
	cwd     string
	prompt  string
	session string
	nextID  int
	pending map[int]string // request id → method
}

func newACP(send func([]byte), cwd, prompt string) *acpClient {
	return &acpClient{send: send, cwd: cwd, prompt: prompt, pending: map[int]string{}}
}

func (c *acpClient) request(method string, params any) {
	c.nextID++
	c.pending[c.nextID] = method
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	c.send(append(b, '\n'))
}

func (c *acpClient) start() {
	c.request("initialize", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"fs": map[string]bool{"readTextFile": false, "writeTextFile": false}, "terminal": false}})
}

type acpMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// onLine handles one message from the agent and returns the events it means.
func (c *acpClient) onLine(line []byte) []Event {
	var m acpMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return []Event{diagnostic(line)}
	}
	switch {
	case m.Method != "" && len(m.ID) > 0: // a request from the agent
		if m.Method == "session/request_permission" {
			return []Event{c.permission(m)}
		}
		c.reply(m.ID, nil, &rpcError{Code: -32601, Message: "corral does not serve " + m.Method})
		return []Event{{Type: EventOther, Subtype: m.Method}}
	case m.Method == "session/update":
		return []Event{c.update(m.Params)}
	case m.Method != "":
		return []Event{{Type: EventOther, Subtype: m.Method}}
	}
	// A response to one of ours.
	id, _ := strconv.Atoi(string(m.ID))
	method := c.pending[id]
	delete(c.pending, id)
	if m.Error != nil {
		return []Event{{Type: EventResult, IsError: true, Subtype: method + " failed", Text: m.Error.Message}}
	}
	switch method {
	case "initialize":
		c.request("session/new", map[string]any{"cwd": c.cwd, "mcpServers": []any{}})
	case "session/new":
		var r struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(m.Result, &r)
		c.session = r.SessionID
		c.request("session/prompt", map[string]any{"sessionId": c.session, "prompt": []any{map[string]string{"type": "text", "text": c.prompt}}})
		return []Event{{Type: EventInit, SessionID: c.session}}
	case "session/prompt":
		var r struct {
			StopReason string `json:"stopReason"`
			Meta       struct {
				Quota struct {
					Tokens rawUsage `json:"token_count"`
				} `json:"quota"`
			} `json:"_meta"`
		}
		_ = json.Unmarshal(m.Result, &r)
		ok := r.StopReason == "end_turn" || r.StopReason == "max_turn_requests" || r.StopReason == "max_tokens"
		return []Event{{Type: EventResult, Subtype: r.StopReason, IsError: !ok, SessionID: c.session, Usage: r.Meta.Quota.Tokens.usage()}}
	}
	return nil
}

func (c *acpClient) update(params json.RawMessage) Event {
	var p struct {
		Update struct {
			Kind    string          `json:"sessionUpdate"`
			Content json.RawMessage `json:"content"`
			Status  string          `json:"status"`
			acpToolCall
		} `json:"update"`
	}
	_ = json.Unmarshal(params, &p)
	u := p.Update
	switch u.Kind {
	case "agent_message_chunk":
		var text struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(u.Content, &text)
		return Event{Type: EventText, Text: text.Text, Delta: true}
	case "tool_call":
		_ = json.Unmarshal(u.Content, &u.acpToolCall.Content)
		return Event{Type: EventToolUse, Tool: u.tool(), Input: u.input()}
	case "tool_call_update":
		if u.Status == "completed" || u.Status == "failed" {
			return Event{Type: EventToolResult, Text: u.Status, IsError: u.Status == "failed"}
		}
	}
	return Event{Type: EventOther, Subtype: u.Kind}
}

type acpOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// acpToolCall is what ACP says of a tool call. Gemini CLI sends no
// rawInput: the tool is its kind and the input its title or content.
type acpToolCall struct {
	Title    string          `json:"title"`
	Kind     string          `json:"kind"`
	RawInput json.RawMessage `json:"rawInput"`
	Content  []struct {
		Type    string `json:"type"`
		Path    string `json:"path"`
		Content struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"content"`
	Locations []struct {
		Path string `json:"path"`
	} `json:"locations"`
}

func (t acpToolCall) tool() string {
	if t.Kind != "" {
		return t.Kind
	}
	return t.Title
}

func (t acpToolCall) input() string {
	if len(t.RawInput) > 0 && string(t.RawInput) != "null" && string(t.RawInput) != "{}" {
		return toolDetail(t.RawInput)
	}
	for _, c := range t.Content {
		if c.Type == "diff" && c.Path != "" {
			return clip(c.Path)
		}
	}
	if t.Title != "" {
		return clip(t.Title)
	}
	for _, l := range t.Locations {
		if l.Path != "" {
			return clip(l.Path)
		}
	}
	for _, c := range t.Content {
		if c.Content.Text != "" {
			return clip(c.Content.Text)
		}
	}
	return ""
}

// permission turns session/request_permission into a permission event;
// its options ride along for the answer.
func (c *acpClient) permission(m acpMessage) Event {
	var p struct {
		ToolCall acpToolCall `json:"toolCall"`
		Options  []acpOption `json:"options"`
	}
	_ = json.Unmarshal(m.Params, &p)
	opts, _ := json.Marshal(p.Options)
	return Event{Type: EventPermission, RequestID: string(m.ID), Tool: p.ToolCall.tool(),
		Input: p.ToolCall.input(), rawInput: opts}
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (c *acpClient) reply(id json.RawMessage, result any, rerr *rpcError) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		msg["error"] = rerr
	} else {
		msg["result"] = result
	}
	b, _ := json.Marshal(msg)
	c.send(append(b, '\n'))
}

// answerPermission picks the agent's own allow_once or reject_once option
// (or cancels when it offers none of that kind).
func (c *acpClient) answerPermission(req Event, allow bool) {
	var opts []acpOption
	_ = json.Unmarshal(req.rawInput, &opts)
	want := []string{"reject_once", "reject_always"}
	if allow {
		want = []string{"allow_once", "allow_always"}
	}
	for _, k := range want {
		for _, o := range opts {
			if o.Kind == k {
				c.reply(json.RawMessage(req.RequestID), map[string]any{"outcome": map[string]string{"outcome": "selected", "optionId": o.OptionID}}, nil)
				return
			}
		}
	}
	c.reply(json.RawMessage(req.RequestID), map[string]any{"outcome": map[string]string{"outcome": "cancelled"}}, nil)
}
