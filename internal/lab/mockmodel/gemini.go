package mockmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// StartGemini serves enough of the Gemini API (generateContent, and
// streamGenerateContent with SSE) for the real Gemini CLI to run turns
// that follow the steps: shell and slow steps call run_shell_command, an
// edit step write_file, a question step ask_user (when the CLI offers it),
// a tool's result gets a short reply, and other requests (next-speaker
// checks) get a short JSON text. A turn without a step keyword runs
// command.
func StartGemini(command string) (*Server, error) {
	return serve(command, (*Server).handleGemini)
}

type geminiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             string          `json:"text"`
			FunctionResponse json.RawMessage `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func (g *geminiRequest) hasTool(name string) bool {
	for _, t := range g.Tools {
		for _, f := range t.FunctionDeclarations {
			if f.Name == name {
				return true
			}
		}
	}
	return false
}

// last returns the newest content's text and whether it carries a
// function's result.
func (g *geminiRequest) last() (text string, result bool) {
	if len(g.Contents) == 0 {
		return "", false
	}
	var b strings.Builder
	for _, p := range g.Contents[len(g.Contents)-1].Parts {
		if len(p.FunctionResponse) > 0 {
			result = true
		}
		b.WriteString(p.Text)
		b.WriteByte('\n')
	}
	return b.String(), result
}

// geminiCall is a step's tool call in Gemini CLI's tools.
func (s *Server) geminiCall(t turn, req *geminiRequest) (toolCall, bool) {
	switch t.step {
	case StepShell:
		return toolCall{"run_shell_command", map[string]any{"command": s.Command, "description": "Run the command"}}, true
	case StepSlow:
		return toolCall{"run_shell_command", map[string]any{"command": fmt.Sprintf("sleep %d", t.slowSeconds()), "description": "Wait a while"}}, true
	case StepEdit:
		return toolCall{"write_file", map[string]any{"file_path": t.editPath(), "content": "written by the corral mock model\n"}}, true
	case StepQuestion:
		if req.hasTool("ask_user") {
			return toolCall{"ask_user", question(true)}, true
		}
	}
	return toolCall{}, false
}

func (s *Server) handleGemini(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	var req geminiRequest
	_ = json.Unmarshal(body, &req)
	last, result := req.last()
	var part map[string]any
	switch {
	case strings.Contains(r.URL.Path, ":countTokens"):
		fmt.Fprint(w, `{"totalTokens": 10}`)
		return
	case !strings.Contains(r.URL.Path, ":streamGenerateContent"):
		part = map[string]any{"text": `{"reasoning": "the model answered", "next_speaker": "user"}`}
	case len(req.Tools) == 0:
		part = map[string]any{"text": "Hello."}
	case result:
		part = map[string]any{"text": "Done. The tool ran."}
	default:
		if call, ok := s.geminiCall(s.turnOf(last), &req); ok {
			part = map[string]any{"functionCall": map[string]any{"name": call.name, "args": call.input}}
		} else {
			part = map[string]any{"text": "Here is a short answer in prose."}
		}
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
