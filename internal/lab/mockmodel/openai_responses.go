package mockmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

type responsesRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Tools  []json.RawMessage `json:"tools"`
	Input  json.RawMessage   `json:"input"`
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	trace(r, body)
	s.note(body)
	switch {
	case strings.HasSuffix(r.URL.Path, "/models"):
		models(w)
		return
	case !strings.HasSuffix(r.URL.Path, "/responses"):
		oaiError(w, http.StatusNotFound, "the mock serves POST /v1/responses only, not "+r.URL.Path)
		return
	}
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		oaiError(w, http.StatusBadRequest, "request body is not JSON: "+err.Error())
		return
	}
	var tools []oaiTool
	for _, raw := range req.Tools {
		var t struct {
			Type       string          `json:"type"`
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name != "" {
			tools = append(tools, oaiTool{Name: t.Name, Custom: t.Type == "custom", Params: paramTypes(t.Parameters)})
		}
	}
	var items []responsesItem
	if err := json.Unmarshal(req.Input, &items); err != nil {
		// A plain string input is one user message.
		var text string
		_ = json.Unmarshal(req.Input, &text)
		items = []responsesItem{{Type: "message", Role: "user", Content: json.RawMessage(fmt.Sprintf("%q", text))}}
	}
	user, afterTool := "", false
	for _, it := range items {
		switch {
		case it.Role == "user":
			user, afterTool = contentText(it.Content), false
		case strings.HasSuffix(it.Type, "_call_output"):
			afterTool = true
		}
	}
	turn := s.plan(tools, afterTool, user, string(body))
	model := req.Model
	if model == "" {
		model = "mock-model"
	}
	n := s.Requests.Load()
	respID := fmt.Sprintf("resp_mock_%d", n)
	var item map[string]any
	if c := turn.Call; c != nil {
		if c.Custom {
			item = map[string]any{"id": fmt.Sprintf("ctc_mock_%d", n), "type": "custom_tool_call", "status": "completed",
				"call_id": c.ID, "name": c.Name, "input": c.Args}
		} else {
			item = map[string]any{"id": fmt.Sprintf("fc_mock_%d", n), "type": "function_call", "status": "completed",
				"call_id": c.ID, "name": c.Name, "arguments": c.Args}
		}
	} else {
		item = map[string]any{"id": fmt.Sprintf("msg_mock_%d", n), "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": turn.Text, "annotations": []any{}}}}
	}
	usage := map[string]any{"input_tokens": 10, "input_tokens_details": map[string]int{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": map[string]int{"reasoning_tokens": 0}, "total_tokens": 15}
	response := func(status string, output []any) map[string]any {
		r := map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status,
			"model": model, "output": output, "parallel_tool_calls": false, "tool_choice": "auto", "tools": []any{}}
		if status == "completed" {
			r["usage"] = usage
		}
		return r
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(response("completed", []any{item}))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	seq := 0
	send := func(event string, data map[string]any) {
		data["type"] = event
		data["sequence_number"] = seq
		seq++
		sse(w, event, data)
	}
	send("response.created", map[string]any{"response": response("in_progress", []any{})})
	send("response.in_progress", map[string]any{"response": response("in_progress", []any{})})
	id := item["id"]
	added := map[string]any{}
	for k, v := range item {
		added[k] = v
	}
	added["status"] = "in_progress"
	switch item["type"] {
	case "message":
		added["content"] = []any{}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		send("response.content_part.added", map[string]any{"item_id": id, "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		if !turn.pieces().Play(r, func(piece string) {
			send("response.output_text.delta", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "delta": piece})
		}) {
			return
		}
		send("response.output_text.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "text": turn.Text})
		send("response.content_part.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": turn.Text, "annotations": []any{}}})
	case "function_call":
		added["arguments"] = ""
		send("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		send("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": 0, "delta": turn.Call.Args})
		send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": 0, "arguments": turn.Call.Args})
	case "custom_tool_call":
		added["input"] = ""
		send("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		send("response.custom_tool_call_input.delta", map[string]any{"item_id": id, "output_index": 0, "delta": turn.Call.Args})
		send("response.custom_tool_call_input.done", map[string]any{"item_id": id, "output_index": 0, "input": turn.Call.Args})
	}
	send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	send("response.completed", map[string]any{"response": response("completed", []any{item})})
}
