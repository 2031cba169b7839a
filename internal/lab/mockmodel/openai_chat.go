package mockmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

type chatRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	trace(r, body)
	s.note(body)
	switch {
	case strings.HasSuffix(r.URL.Path, "/models"):
		models(w)
		return
	case !strings.HasSuffix(r.URL.Path, "/chat/completions"):
		oaiError(w, http.StatusNotFound, "the mock serves POST /v1/chat/completions only, not "+r.URL.Path)
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		oaiError(w, http.StatusBadRequest, "request body is not JSON: "+err.Error())
		return
	}
	var tools []oaiTool
	for _, t := range req.Tools {
		if t.Function.Name != "" {
			tools = append(tools, oaiTool{Name: t.Function.Name, Params: paramTypes(t.Function.Parameters)})
		}
	}
	user, afterTool := "", false
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			user, afterTool = contentText(m.Content), false
		case "tool":
			afterTool = true
		}
	}
	turn := s.plan(tools, afterTool, user, string(body))
	model := req.Model
	if model == "" {
		model = "mock-model"
	}
	n := s.Requests.Load()
	id := fmt.Sprintf("chatcmpl-mock-%d", n)
	created := time.Now().Unix()
	finish := "stop"
	var calls []any
	if c := turn.Call; c != nil {
		finish = "tool_calls"
		calls = []any{map[string]any{"index": 0, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args}}}
	}
	usage := map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": turn.Text}
		if calls != nil {
			msg["content"] = nil
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		sse(w, "", c)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if c := turn.Call; c != nil {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil, nil)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0,
			"function": map[string]any{"arguments": c.Args}}}}, nil, nil)
	} else {
		if !turn.pieces().Play(r, func(piece string) { chunk(map[string]any{"content": piece}, nil, nil) }) {
			return
		}
	}
	chunk(map[string]any{}, finish, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
