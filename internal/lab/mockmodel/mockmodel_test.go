package mockmodel

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func anthropicRequest(contents ...string) string {
	var msgs []any
	for _, c := range contents {
		msgs = append(msgs, map[string]any{"role": "user", "content": json.RawMessage(c)})
	}
	b, _ := json.Marshal(map[string]any{"tools": []any{map[string]any{"name": "Bash"}}, "messages": msgs})
	return string(b)
}

// Each step keyword gets its tool call from the Anthropic mock, and a
// message without a keyword runs the default.
func TestAnthropicSteps(t *testing.T) {
	for _, c := range []struct{ name, content, want string }{
		{"prose", `"corral:prose say hi"`, `"text":"Here is a short answer`},
		{"shell", `[{"type":"text","text":"corral:shell list"}]`, `"name":"Bash"`},
		{"shell command", `"corral:shell"`, `ls -la /tmp`},
		{"edit", `"corral:edit /w/notes.txt"`, `/w/notes.txt`},
		{"question", `"corral:question"`, `"name":"AskUserQuestion"`},
		{"slow", `"corral:slow 9"`, `sleep 9`},
		{"default", `"please list the files"`, `ls -la /tmp`},
		{"result then prompt", `[{"type":"tool_result","tool_use_id":"x","content":"ok"},{"type":"text","text":"corral:question"}]`, `AskUserQuestion`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Start("ls -la /tmp")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := post(t, s.URL+"/v1/messages", anthropicRequest(c.content))
			if !strings.Contains(got, c.want) {
				t.Fatalf("want %q in:\n%s", c.want, got)
			}
		})
	}
}

// A turn gets one tool call; every later request of the same turn (the
// tool's result, wherever Claude Code puts it) ends it with text; the
// next keyword starts the next turn.
func TestAnthropicTurns(t *testing.T) {
	s, err := Start("ls -la /tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := s.URL + "/v1/messages"
	for i, c := range []struct {
		contents []string
		want     string
	}{
		{[]string{`"corral:shell"`}, `"name":"Bash"`},
		{[]string{`"corral:shell"`, `[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]`}, `Done. The tool ran.`},
		{[]string{`"corral:shell"`, `[{"type":"tool_result","tool_use_id":"t1","content":"ok"},{"type":"text","text":"corral:edit /w/a"}]`}, `"name":"Write"`},
		{[]string{`"corral:shell"`, `[{"type":"tool_result","tool_use_id":"t1","content":"ok"},{"type":"tool_result","tool_use_id":"t2","content":"ok"},{"type":"text","text":"corral:edit /w/a"}]`}, `Done. The tool ran.`},
	} {
		if got := post(t, url, anthropicRequest(c.contents...)); !strings.Contains(got, c.want) {
			t.Fatalf("request %d: want %q in:\n%s", i, c.want, got)
		}
	}
}

// The Gemini mock follows the same steps with Gemini CLI's tool names; the
// question step uses ask_user only when the CLI offers it.
func TestGeminiSteps(t *testing.T) {
	req := func(part string, tools ...string) string {
		var decl []any
		for _, n := range tools {
			decl = append(decl, map[string]any{"name": n})
		}
		b, _ := json.Marshal(map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{json.RawMessage(part)}}},
			"tools": []any{map[string]any{"functionDeclarations": decl}}})
		return string(b)
	}
	for _, c := range []struct{ name, part, want string }{
		{"shell", `{"text":"corral:shell"}`, `"name":"run_shell_command"`},
		{"edit", `{"text":"corral:edit /w/a.txt"}`, `"name":"write_file"`},
		{"question", `{"text":"corral:question"}`, `"name":"ask_user"`},
		{"slow", `{"text":"corral:slow 7"}`, `sleep 7`},
		{"prose", `{"text":"corral:prose"}`, `short answer in prose`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := StartGemini("ls -la")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			url := s.URL + "/v1beta/models/gemini-mock:streamGenerateContent?alt=sse"
			if got := post(t, url, req(c.part, "run_shell_command", "write_file", "ask_user")); !strings.Contains(got, c.want) {
				t.Fatalf("want %q in:\n%s", c.want, got)
			}
		})
	}
	s, err := StartGemini("ls -la")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := s.URL + "/v1beta/models/gemini-mock:streamGenerateContent?alt=sse"
	if got := post(t, url, req(`{"text":"corral:question"}`, "run_shell_command")); strings.Contains(got, "ask_user") {
		t.Fatalf("ask_user called though not offered:\n%s", got)
	}
}

// A stream step's answer comes word by word over its seconds, on every
// API.
func TestStreamStep(t *testing.T) {
	chat, err := StartChat("ls")
	if err != nil {
		t.Fatal(err)
	}
	defer chat.Close()
	claude, err := Start("ls")
	if err != nil {
		t.Fatal(err)
	}
	defer claude.Close()
	gemini, err := StartGemini("ls")
	if err != nil {
		t.Fatal(err)
	}
	defer gemini.Close()
	geminiBody := `{"contents":[{"role":"user","parts":[{"text":"corral:stream 1"}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`
	// The three servers are asked at once (a group's parallel subtests
	// end before the group does).
	t.Run("each API", func(t *testing.T) {
		for _, c := range []struct{ name, url, body string }{
			{"chat", chat.URL + "/v1/chat/completions", chatBody("corral:stream 1", "")},
			{"anthropic", claude.URL + "/v1/messages", strings.Replace(anthropicRequest(`"corral:stream 1"`), `{`, `{"stream":true,`, 1)},
			{"gemini", gemini.URL + "/v1beta/models/m:streamGenerateContent?alt=sse", geminiBody},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				got := post(t, c.url, c.body)
				if d := time.Since(start); d < 800*time.Millisecond || d > 5*time.Second {
					t.Errorf("the answer took %v, want about 1s", d)
				}
				if !strings.Contains(got, "word5") || strings.Count(got, "word") < 5 {
					t.Errorf("answer does not stream word1…word5:\n%s", got)
				}
			})
		}
	})
	for _, s := range []*Server{chat, claude, gemini} {
		if !s.Heard("corral:stream") || s.Heard("corral:shell") {
			t.Errorf("%s: Heard does not say which turns requests carried", s.URL)
		}
	}
}
