package mockmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// StartGemini serves enough of the Gemini API (generateContent, and
// streamGenerateContent with SSE) for the real Gemini CLI to run a turn:
// a prompt gets a run_shell_command call, its result gets a short reply,
// and other requests (next-speaker checks) get a short JSON text.
func StartGemini(command string) (*Server, error) {
	return serve(command, (*Server).handleGemini)
}

func (s *Server) handleGemini(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	text := string(body)
	var part map[string]any
	switch {
	case strings.Contains(r.URL.Path, ":countTokens"):
		fmt.Fprint(w, `{"totalTokens": 10}`)
		return
	case !strings.Contains(r.URL.Path, ":streamGenerateContent"):
		part = map[string]any{"text": `{"reasoning": "the model answered", "next_speaker": "user"}`}
	case strings.Contains(text, "functionResponse"):
		part = map[string]any{"text": "Done. The command ran."}
	case strings.Contains(text, "run_shell_command"):
		part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command",
			"args": map[string]any{"command": s.Command, "description": "Run it"}}}
	default:
		part = map[string]any{"text": "Hello."}
	}
	b, _ := json.Marshal(map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
	})
	if strings.Contains(r.URL.Path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
