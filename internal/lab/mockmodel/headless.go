package mockmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Helpers for recording agents run headless (corral exec), where nobody
// approves anything.

// FailWord in a request makes the servers started here answer it with
// HTTP 400 and an error body both OpenAI's and Google's clients read: a
// model API that refuses the request, for recording how agents report it.
const FailWord = "corral-fail"

// refusing answers requests that carry FailWord with an error, and hands
// the others to next.
func refusing(next func(*Server, http.ResponseWriter, *http.Request)) func(*Server, http.ResponseWriter, *http.Request) {
	return func(s *Server, w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
		if bytes.Contains(body, []byte(FailWord)) {
			s.Requests.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"code":400,"message":"the mock model refuses this request (corral-fail)","status":"INVALID_ARGUMENT","type":"invalid_request_error"}}`)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next(s, w, r)
	}
}

// StartChatRefusing serves Chat Completions as StartChat does, refusing
// requests that carry FailWord.
func StartChatRefusing(command string) (*Server, error) {
	return serve(command, refusing((*Server).handleChat))
}

// StartResponsesUnescalated serves the Responses API as StartResponses
// does (refusing requests that carry FailWord), except that a shell step never asks to leave Codex's sandbox:
// `codex exec` rejects any such request (its approval policy is never),
// so the command runs, in the sandbox, and its exit status shows.
func StartResponsesUnescalated(command string) (*Server, error) {
	return serve(command, refusing(func(s *Server, w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
		body = bytes.ReplaceAll(body, []byte(`"sandbox_permissions"`), []byte(`"sandbox_permissions_hidden"`))
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.handleResponses(w, r)
	}))
}

// StartGeminiSteps serves the Gemini API with the Step convention: the
// newest user text picks the turn (corral:shell runs Command through
// run_shell_command, corral:edit writes EditFile with write_file, anything
// else is prose; FailWord gets an error); a turn whose newest part is a function's response gets
// a short closing answer; requests that are not streamed (routing, next
// speaker) get a short JSON text.
func StartGeminiSteps(command string) (*Server, error) {
	return serve(command, refusing((*Server).handleGeminiSteps))
}

func (s *Server) handleGeminiSteps(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	trace(r, body)
	if strings.Contains(r.URL.Path, ":countTokens") {
		fmt.Fprint(w, `{"totalTokens": 10}`)
		return
	}
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             string          `json:"text"`
				FunctionResponse json.RawMessage `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	_ = json.Unmarshal(body, &req)
	user, afterTool := "", false
	if n := len(req.Contents); n > 0 {
		for _, p := range req.Contents[n-1].Parts {
			user += p.Text
			if len(p.FunctionResponse) > 0 {
				afterTool = true
			}
		}
	}
	var part map[string]any
	switch step := StepOf(user); {
	case !strings.Contains(r.URL.Path, ":streamGenerateContent"):
		part = map[string]any{"text": `{"reasoning": "the model answered", "next_speaker": "user", "complexity_reasoning": "simple", "complexity_score": 1}`}
	case afterTool:
		part = map[string]any{"text": "Done. The tool ran."}
	case step == StepShell || step == StepSlow:
		command := s.shellCommand()
		if step == StepSlow {
			command = SlowCommand
		}
		part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command",
			"args": map[string]any{"command": command, "description": "Run " + command}}}
	case step == StepEdit:
		path := EditFile
		if cwd := findCwd(string(body)); cwd != "" {
			path = strings.TrimRight(cwd, "/") + "/" + EditFile
		}
		part = map[string]any{"functionCall": map[string]any{"name": "write_file",
			"args": map[string]any{"file_path": path, "content": EditText}}}
	default:
		part = map[string]any{"text": "Hello. This is a short answer from the mock model."}
	}
	writeGeminiPart(w, r, part)
}
