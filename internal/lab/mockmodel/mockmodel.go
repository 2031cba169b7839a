// Package mockmodel is a scripted model server on loopback that speaks
// enough of the Anthropic Messages API (with SSE streaming) for the real
// Claude Code CLI to run a turn: a prompt gets a Bash tool call (which
// makes Claude Code draw its permission dialog), the tool's result gets a
// short reply that ends the turn, and side requests (titles, no tools) get
// a short text.
package mockmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
)

// Server is a running mock model server.
type Server struct {
	URL      string
	Command  string // the Bash command it asks to run
	Requests atomic.Int64
	srv      *http.Server
	ln       net.Listener
}

// Start serves the Anthropic Messages API on 127.0.0.1 on a free port.
func Start(command string) (*Server, error) {
	return serve(command, (*Server).handle)
}

// serve listens on 127.0.0.1 on a free port with the given API handler.
func serve(command string, handle func(*Server, http.ResponseWriter, *http.Request)) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), Command: command, ln: ln}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(s, w, r) })}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

type request struct {
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	if !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		if strings.HasSuffix(r.URL.Path, "/count_tokens") {
			fmt.Fprint(w, `{"input_tokens": 10}`)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"type":"error","error":{"type":"not_found_error","message":"not here"}}`)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	var req request
	_ = json.Unmarshal(body, &req)
	last := ""
	if n := len(req.Messages); n > 0 {
		last = string(req.Messages[n-1].Content)
	}
	var blocks []map[string]any
	stop := "end_turn"
	switch {
	case len(req.Tools) == 0:
		blocks = []map[string]any{{"type": "text", "text": "Mock title"}}
	case strings.Contains(last, "tool_result"):
		blocks = []map[string]any{{"type": "text", "text": "Done. The command ran."}}
	default:
		input, _ := json.Marshal(map[string]string{"command": s.Command, "description": "List files"})
		blocks = []map[string]any{{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", s.Requests.Load()), "name": "Bash", "input": json.RawMessage(input)}}
		stop = "tool_use"
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_mock", "type": "message", "role": "assistant", "model": "claude-mock",
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 5}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_mock", "type": "message",
		"role": "assistant", "model": "claude-mock", "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(b["input"].(json.RawMessage))}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 5}})
	send("message_stop", map[string]any{"type": "message_stop"})
}
