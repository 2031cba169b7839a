package mockmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// The OpenAI-style servers follow the Step convention: the newest user text
// picks what the model does ("corral:shell", "corral:edit", …); a request
// whose newest input is a tool's result gets a short closing answer; a
// request that carries no tools (titles, summaries, next-speaker checks)
// gets a short text.

// SlowCommand is the shell command a StepSlow turn asks to run. It does
// not start with sleep: Qwen Code refuses a command that does.
const SlowCommand = "echo slow; sleep 30"

// EditFile is the file (relative to the agent's working folder) a StepEdit
// turn writes, and EditText its content.
const (
	EditFile = "corral-mock.txt"
	EditText = "written by the mock model\n"
)

// QuestionText is the question a StepQuestion turn asks, and
// QuestionOptions its choices.
const QuestionText = "Which colour should the button be?"

var QuestionOptions = []string{"Red", "Blue"}

// StartResponses serves the OpenAI Responses API (POST …/responses with SSE
// streaming), which Codex speaks, on 127.0.0.1 on a free port. Point Codex
// at URL+"/v1". command is what StepShell asks to run.
func StartResponses(command string) (*Server, error) {
	return serve(command, (*Server).handleResponses)
}

// StartChat serves the OpenAI Chat Completions API (POST
// …/chat/completions, streamed or not), which Qwen Code and opencode speak,
// on 127.0.0.1 on a free port. Point the agent at URL+"/v1".
func StartChat(command string) (*Server, error) {
	return serve(command, (*Server).handleChat)
}

// oaiTool is a tool the agent offered: its name, whether it is a freeform
// (custom) tool, and the names and types of its parameters.
type oaiTool struct {
	Name   string
	Custom bool
	Params map[string]string // property name → JSON type ("string", "array", …)
}

// oaiCall is one tool call the model makes.
type oaiCall struct {
	ID     string
	Name   string
	Custom bool   // a freeform tool: Args is the raw input, not JSON
	Args   string // JSON arguments, or the custom tool's input
}

// oaiTurn is what the model answers: text, or one tool call. A stream
// step's text comes as its Stream's pieces.
type oaiTurn struct {
	Text   string
	Call   *oaiCall
	Stream *Stream
}

// pieces is how a turn's text is streamed: a stream step's pieces, or
// the text's words at once.
func (t oaiTurn) pieces() Stream {
	if t.Stream != nil {
		return *t.Stream
	}
	return Stream{Pieces: words(t.Text)}
}

var (
	cwdPatterns = sync.OnceValue(func() []*regexp.Regexp {
		return []*regexp.Regexp{
			regexp.MustCompile(`<cwd>([^<\n]+)</cwd>`),
			regexp.MustCompile(`(?i)(?:working (?:in the )?directory|cwd)(?: is)?[:\s]+['"\x60]?(/[^\s'"\x60<>,\\]+)`),
		}
	})
	traceMu sync.Mutex
)

// trace appends one request to $CORRAL_MOCKMODEL_TRACE when it is set: the
// way to see what a new agent version sends.
func trace(r *http.Request, body []byte) {
	path := os.Getenv("CORRAL_MOCKMODEL_TRACE")
	if path == "" {
		return
	}
	traceMu.Lock()
	defer traceMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "=== %s %s %s\n%s\n", time.Now().Format(time.RFC3339Nano), r.Method, r.URL.Path, body)
}

// findCwd looks for the agent's working folder in what it sent (Codex's
// environment context, a system prompt's "working directory").
func findCwd(text string) string {
	for _, re := range cwdPatterns() {
		if m := re.FindStringSubmatch(text); m != nil {
			return strings.TrimRight(m[1], ".")
		}
	}
	return ""
}

func pickTool(tools []oaiTool, names ...string) *oaiTool {
	for _, n := range names {
		for i := range tools {
			if strings.EqualFold(tools[i].Name, n) {
				return &tools[i]
			}
		}
	}
	return nil
}

// plan decides a turn. afterTool is true when the newest input is a tool
// result; user is the newest user text; all is the whole request (to find
// the working folder in).
func (s *Server) plan(tools []oaiTool, afterTool bool, user, all string) oaiTurn {
	n := s.Requests.Load()
	if len(tools) == 0 {
		return oaiTurn{Text: "Mock title"}
	}
	if afterTool {
		return oaiTurn{Text: "Done. The tool ran."}
	}
	id := fmt.Sprintf("call_mock_%d", n)
	step := StepOf(user)
	switch step {
	case StepStream:
		st := streamOf(s.turnOf(user).streamSeconds())
		return oaiTurn{Text: st.Text(), Stream: &st}
	case StepShell, StepSlow:
		command := s.shellCommand()
		if step == StepSlow {
			command = SlowCommand
		}
		t := pickTool(tools, "shell_command", "shell", "exec_command", "run_shell_command", "bash")
		if t == nil {
			return oaiTurn{Text: "I have no shell tool."}
		}
		args := map[string]any{}
		// Crush asks before every command but a read-only one run alone
		// (no ";"), and timeout is one of those; its shell moves a command
		// to the background after a minute unless told otherwise.
		if step == StepSlow && t.Params["auto_background_after"] != "" {
			command = "timeout 60 sleep 30"
			args["auto_background_after"] = 120
		}
		switch {
		case t.Params["command"] == "array":
			args["command"] = []string{"bash", "-lc", command}
		case t.Params["cmd"] != "":
			args["cmd"] = command
		default:
			args["command"] = command
		}
		if t.Params["description"] != "" {
			args["description"] = "Run " + command
		}
		if t.Params["is_background"] != "" {
			args["is_background"] = false
		}
		if t.Params["timeout_ms"] != "" && step == StepSlow {
			args["timeout_ms"] = 120000
		}
		if t.Params["yield_time_ms"] != "" && step == StepSlow {
			args["yield_time_ms"] = 30000
		}
		// Codex runs commands in a sandbox and asks only to leave it: a
		// shell step asks, as a model does, so that it is approved.
		if t.Params["sandbox_permissions"] != "" && step == StepShell {
			args["sandbox_permissions"] = "require_escalated"
			args["justification"] = "Do you want to run " + command + "?"
		}
		b := marshal(args)
		return oaiTurn{Call: &oaiCall{ID: id, Name: t.Name, Args: string(b)}}
	case StepEdit:
		if t := pickTool(tools, "apply_patch"); t != nil {
			patch := "*** Begin Patch\n*** Add File: " + EditFile + "\n+" + strings.TrimSuffix(EditText, "\n") + "\n*** End Patch\n"
			if t.Custom {
				return oaiTurn{Call: &oaiCall{ID: id, Name: t.Name, Custom: true, Args: patch}}
			}
			b := marshal(map[string]string{"input": patch})
			return oaiTurn{Call: &oaiCall{ID: id, Name: t.Name, Args: string(b)}}
		}
		t := pickTool(tools, "write_file", "write", "create_file", "create")
		if t == nil {
			// Codex without an apply_patch tool takes a patch through its
			// shell tool, and shows it as an edit.
			if t := pickTool(tools, "exec_command", "shell_command"); t != nil {
				patch := "*** Begin Patch\n*** Add File: " + EditFile + "\n+" + strings.TrimSuffix(EditText, "\n") + "\n*** End Patch"
				key := "cmd"
				if t.Params["cmd"] == "" {
					key = "command"
				}
				b := marshal(map[string]string{key: "apply_patch <<'EOF'\n" + patch + "\nEOF\n"})
				return oaiTurn{Call: &oaiCall{ID: id, Name: t.Name, Args: string(b)}}
			}
			return oaiTurn{Text: "I have no file tool."}
		}
		path := EditFile
		if cwd := findCwd(all); cwd != "" {
			path = strings.TrimRight(cwd, "/") + "/" + EditFile
		}
		args := map[string]any{}
		for _, k := range []string{"file_path", "filePath", "path"} {
			if t.Params[k] != "" {
				args[k] = path
				break
			}
		}
		for _, k := range []string{"content", "file_text", "contents"} {
			if t.Params[k] != "" {
				args[k] = EditText
				break
			}
		}
		b := marshal(args)
		return oaiTurn{Call: &oaiCall{ID: id, Name: t.Name, Args: string(b)}}
	case StepQuestion:
		t := pickTool(tools, "request_user_input", "ask_user_question", "ask_user", "question", "askuserquestion")
		if t == nil {
			return oaiTurn{Text: QuestionText + " " + strings.Join(QuestionOptions, " or ") + "?"}
		}
		if t.Params["message"] != "" && t.Params["requestedSchema"] != "" {
			// Copilot CLI's ask_user is a form: a message and a schema.
			b := marshal(map[string]any{"message": QuestionText, "requestedSchema": map[string]any{
				"properties": map[string]any{"colour": map[string]any{"type": "string", "title": "Colour", "enum": QuestionOptions}},
				"required":   []string{"colour"}}})
			return oaiTurn{Call: &oaiCall{ID: id, Name: t.Name, Args: string(b)}}
		}
		if t.Params["confirm_title"] != "" {
			// Crush's question tool: a typed question with choices by id.
			var choices []map[string]string
			for _, o := range QuestionOptions {
				choices = append(choices, map[string]string{"id": strings.ToLower(o), "label": o})
			}
			q := map[string]any{"type": "single_choice", "question": QuestionText, "description": "Pick one.", "choices": choices}
			b := marshal(map[string]any{"questions": []any{q}})
			return oaiTurn{Call: &oaiCall{ID: id, Name: t.Name, Args: string(b)}}
		}
		var opts []map[string]string
		for _, o := range QuestionOptions {
			opts = append(opts, map[string]string{"label": o, "description": o + " it is"})
		}
		q := map[string]any{"question": QuestionText, "header": "Colour", "options": opts, "id": "colour", "multiSelect": false}
		b := marshal(map[string]any{"questions": []any{q}})
		return oaiTurn{Call: &oaiCall{ID: id, Name: t.Name, Args: string(b)}}
	}
	return oaiTurn{Text: "Hello. This is a short answer from the mock model."}
}

// marshal is json.Marshal without HTML escaping: arguments read as a
// model writes them ("<<'EOF'", not "\u003c\u003c'EOF'").
func marshal(v any) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	b := marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// words splits a reply into a few streamed pieces.
func words(text string) []string {
	var out []string
	for _, w := range strings.SplitAfter(text, " ") {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

func oaiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b := marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
	w.Write(b)
}

// models answers a model-list request with one model.
func models(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"object":"list","data":[{"id":"mock-model","object":"model","created":1700000000,"owned_by":"corral"}],"models":[]}`)
}

// paramTypes reads the property types of a JSON schema.
func paramTypes(schema json.RawMessage) map[string]string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	out := map[string]string{}
	for k, v := range s.Properties {
		switch t := v.Type.(type) {
		case string:
			out[k] = t
		case []any:
			if len(t) > 0 {
				out[k], _ = t[0].(string)
			}
		}
		if out[k] == "" {
			out[k] = "any"
		}
	}
	return out
}

// contentText flattens a message content (a string, or a list of parts
// with "text").
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		b.WriteString("\n")
	}
	return b.String()
}
