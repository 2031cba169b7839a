// Package mockmodel is a scripted model server on loopback that speaks
// enough of the Anthropic Messages API (with SSE streaming) and the Gemini
// API for the real Claude Code and Gemini CLIs to run turns. What a turn
// does is its Step, named by "corral:STEP" in the newest user message
// (scenario.go): a short text, a shell command, a file write, a question,
// or a slow shell command. A tool's result gets a short reply that ends
// the turn; side requests (titles, no tools) get a short text.
package mockmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a running mock model server.
type Server struct {
	URL string
	// command is the shell command of a shell step (SetCommand): a test
	// changes it while the agent's background requests are answered.
	command atomic.Pointer[string]
	// Default is the step of a turn whose message names none.
	Default  Step
	Requests atomic.Int64
	latency  atomic.Int64 // time.Duration: SetLatency
	srv      *http.Server
	ln       net.Listener

	mu     sync.Mutex      // guards called and seen
	called map[string]bool // turns already answered
	seen   map[string]bool // step keywords with their text, as requests carried them
}

// keywordText is a step keyword with the rest of its line, as a request
// body carries it (JSON-escaped).
var keywordText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`corral:[^"\\]*`) })

// note remembers the step keywords a request carried.
func (s *Server) note(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	for _, m := range keywordText().FindAll(body, -1) {
		s.seen[strings.TrimSpace(string(m))] = true
	}
}

// Heard says whether a request has carried text typed as a turn
// ("corral:shell"): the agent took the turn.
func (s *Server) Heard(text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.seen {
		if strings.Contains(k, text) {
			return true
		}
	}
	return false
}

// DefaultSlow is how long a slow step's command sleeps unless its message
// says ("corral:slow 20").
const DefaultSlow = 6

// EditPath is the file an edit step writes unless its message names an
// absolute path ("corral:edit /work/notes.txt").
const EditPath = "/tmp/corral-mock-edit.txt"

// Start serves the Anthropic Messages API on 127.0.0.1 on a free port. A
// turn without a step keyword runs command (a shell step).
func Start(command string) (*Server, error) {
	return serve(command, (*Server).handle)
}

// serve listens on 127.0.0.1 on a free port with the given API handler.
func serve(command string, handle func(*Server, http.ResponseWriter, *http.Request)) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), Default: StepShell, ln: ln}
	s.SetCommand(command)
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := time.Duration(s.latency.Load()); d > 0 && r.Method == http.MethodPost {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		handle(s, w, r)
	})}
	go s.srv.Serve(ln)
	return s, nil
}

// SetCommand sets the shell command of a shell step.
func (s *Server) SetCommand(command string) { s.command.Store(&command) }

// shellCommand is the shell command of a shell step.
func (s *Server) shellCommand() string { return *s.command.Load() }

// SetLatency makes the server wait d before it answers each request, as a
// real model takes before its first token (0: at once).
func (s *Server) SetLatency(d time.Duration) { s.latency.Store(int64(d)) }

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// turn is what the newest user message asks for.
type turn struct {
	step Step
	arg  string // the word after the keyword, if any
}

// turnOf reads the step and its argument from a user message's text.
func (s *Server) turnOf(text string) turn {
	i := strings.LastIndex(text, "corral:")
	if i < 0 {
		return turn{step: s.Default}
	}
	t := turn{step: StepOf(text[i:])}
	rest := strings.TrimPrefix(text[i+len("corral:"):], string(t.step))
	if f := strings.Fields(rest); len(f) > 0 {
		t.arg = strings.Trim(f[0], `"'.,;`)
	}
	return t
}

func (t turn) slowSeconds() int {
	if n, err := strconv.Atoi(t.arg); err == nil && n > 0 && n <= 3600 {
		return n
	}
	return DefaultSlow
}

// DefaultStream is how long a stream step's answer takes unless its
// message says ("corral:stream 20").
const DefaultStream = 8

// streamPieces is how many pieces a stream step's answer comes in per
// second.
const streamPieces = 5

// Stream is a stream step's answer for seconds: its pieces and the pause
// before each. A turn that is no stream step has one piece and no pause.
type Stream struct {
	Pieces []string
	Pause  time.Duration
}

// streamOf is the answer of a stream step lasting seconds.
func streamOf(seconds int) Stream {
	n := seconds * streamPieces
	st := Stream{Pause: time.Second / streamPieces}
	for i := 1; i <= n; i++ {
		p := fmt.Sprintf("word%d ", i)
		if i%12 == 0 {
			p = fmt.Sprintf("word%d.\n", i)
		}
		st.Pieces = append(st.Pieces, p)
	}
	return st
}

// Text is the whole answer.
func (st Stream) Text() string { return strings.Join(st.Pieces, "") }

// Play calls send with each piece after its pause; it stops early, and
// says false, when the client has gone (an interrupted turn).
func (st Stream) Play(r *http.Request, send func(piece string)) bool {
	for _, p := range st.Pieces {
		if st.Pause > 0 {
			select {
			case <-r.Context().Done():
				return false
			case <-time.After(st.Pause):
			}
		}
		send(p)
	}
	return true
}

func (t turn) streamSeconds() int {
	if n, err := strconv.Atoi(t.arg); err == nil && n > 0 && n <= 600 {
		return n
	}
	return DefaultStream
}

func (t turn) editPath() string {
	if strings.HasPrefix(t.arg, "/") {
		return t.arg
	}
	return EditPath
}

// toolCall is a tool call in API-neutral terms.
type toolCall struct {
	name  string
	input map[string]any
}

// question is the question step's question, in the shape both Claude
// Code's AskUserQuestion and Gemini CLI's ask_user take.
func question(withType bool) map[string]any {
	q := map[string]any{"question": "Which colour should the new file use?", "header": "Colour", "multiSelect": false,
		"options": []map[string]any{{"label": "Red", "description": "A warm colour"}, {"label": "Blue", "description": "A cool colour"}}}
	if withType {
		q["type"] = "choice"
	}
	return map[string]any{"questions": []any{q}}
}

type request struct {
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// userText returns the typed text of a message's content (its text
// blocks, not tool results).
func userText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(content, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// userTurn returns the text of every user message of a conversation.
func (r *request) userTurn() string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == "user" {
			b.WriteString(userText(m.Content))
		}
	}
	return b.String()
}

// next decides a request's answer from the conversation's user text. A
// turn is known by how many "corral:" keywords the text holds and by the
// newest one: Claude Code merges a turn's tool results into the next
// prompt and drops replies from the history, and Gemini CLI drops a
// cancelled turn, so neither where a tool result sits nor the count alone
// tells turns apart. The first request of a turn gets the step's tool
// call; every later one (the tool's result included) gets a short text
// that ends the turn.
func (s *Server) next(userText string) (t turn, call bool) {
	key := fmt.Sprint(strings.Count(userText, "corral:"))
	if i := strings.LastIndex(userText, "corral:"); i >= 0 {
		line, _, _ := strings.Cut(userText[i:], "\n")
		key += " " + line
	}
	t = s.turnOf(userText)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.called == nil {
		s.called = map[string]bool{}
	}
	if s.called[key] {
		return t, false
	}
	s.called[key] = true
	return t, true
}

// claudeCall is a step's tool call in Claude Code's tools.
func (s *Server) claudeCall(t turn) (toolCall, bool) {
	switch t.step {
	case StepShell:
		return toolCall{"Bash", map[string]any{"command": s.shellCommand(), "description": "Run the command"}}, true
	case StepSlow:
		// Claude Code refuses a command that starts with a long sleep.
		return toolCall{"Bash", map[string]any{"command": fmt.Sprintf("echo waiting && sleep %d", t.slowSeconds()), "description": "Wait a while"}}, true
	case StepEdit:
		return toolCall{"Write", map[string]any{"file_path": t.editPath(), "content": "written by the corral mock model\n"}}, true
	case StepQuestion:
		return toolCall{"AskUserQuestion", question(false)}, true
	case StepBackground:
		return toolCall{"Bash", map[string]any{"command": fmt.Sprintf("echo background && sleep %d", t.slowSeconds()),
			"description": "Wait in the background", "run_in_background": true}}, true
	}
	return toolCall{}, false
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
	trace(r, body)
	s.note(body)
	var req request
	_ = json.Unmarshal(body, &req)
	var blocks []map[string]any
	stop := "end_turn"
	var call toolCall
	isCall, first := false, false
	var stream *Stream
	if len(req.Tools) > 0 {
		var t turn
		text := req.userTurn()
		t, first = s.next(text)
		call, isCall = s.claudeCall(t)
		if first && t.step == StepStream {
			st := streamOf(t.streamSeconds())
			stream = &st
		}
	}
	switch {
	case len(req.Tools) == 0:
		blocks = []map[string]any{{"type": "text", "text": "Mock title"}}
	case !first:
		blocks = []map[string]any{{"type": "text", "text": "Done. The tool ran."}}
	case stream != nil:
		blocks = []map[string]any{{"type": "text", "text": stream.Text()}}
	case isCall:
		input, _ := json.Marshal(call.input)
		blocks = []map[string]any{{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", s.Requests.Load()), "name": call.name, "input": json.RawMessage(input)}}
		stop = "tool_use"
	default:
		blocks = []map[string]any{{"type": "text", "text": "Here is a short answer in prose."}}
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
			if stream != nil {
				if !stream.Play(r, func(p string) {
					send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": p}})
				}) {
					return
				}
				break
			}
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
