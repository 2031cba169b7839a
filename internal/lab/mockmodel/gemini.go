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
			Text string `json:"text"`
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

// userTurn returns the text of every user content of a conversation.
func (g *geminiRequest) userTurn() string {
	var b strings.Builder
	for _, c := range g.Contents {
		if c.Role != "user" {
			continue
		}
		for _, p := range c.Parts {
			b.WriteString(p.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// geminiCall is a step's tool call in Gemini CLI's tools.
func (s *Server) geminiCall(t turn, req *geminiRequest) (toolCall, bool) {
	switch t.step {
	case StepShell:
		return toolCall{"run_shell_command", map[string]any{"command": s.shellCommand(), "description": "Run the command"}}, true
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
	trace(r, body)
	s.note(body)
	var req geminiRequest
	_ = json.Unmarshal(body, &req)
	var part map[string]any
	switch {
	case strings.Contains(r.URL.Path, ":countTokens"):
		fmt.Fprint(w, `{"totalTokens": 10}`)
		return
	case !strings.Contains(r.URL.Path, ":streamGenerateContent"):
		part = map[string]any{"text": `{"reasoning": "the model answered", "next_speaker": "user"}`}
	case len(req.Tools) == 0:
		part = map[string]any{"text": "Hello."}
	default:
		text := req.userTurn()
		t, first := s.next(text)
		call, ok := s.geminiCall(t, &req)
		switch {
		case first && t.step == StepStream:
			writeGeminiStream(w, r, streamOf(t.streamSeconds()))
			return
		case !first:
			part = map[string]any{"text": "Done. The tool ran."}
		case ok:
			part = map[string]any{"functionCall": map[string]any{"name": call.name, "args": call.input}}
		default:
			part = map[string]any{"text": "Here is a short answer in prose."}
		}
	}
	writeGeminiPart(w, r, part)
}

// writeGeminiPart answers a Gemini API request with one candidate part,
// as SSE for streamGenerateContent and as JSON otherwise.
func writeGeminiPart(w http.ResponseWriter, r *http.Request, part map[string]any) {
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

// writeGeminiStream answers streamGenerateContent with a stream step's
// pieces, one SSE event each; the last carries the finish reason.
func writeGeminiStream(w http.ResponseWriter, r *http.Request, st Stream) {
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	i := 0
	st.Play(r, func(piece string) {
		i++
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": piece}}}, "index": 0}
		if i == len(st.Pieces) {
			cand["finishReason"] = "STOP"
		}
		b, _ := json.Marshal(map[string]any{"candidates": []any{cand},
			"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": i, "totalTokenCount": 10 + i}})
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	})
}
