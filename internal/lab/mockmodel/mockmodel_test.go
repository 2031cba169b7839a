package mockmodel

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
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

// Each step keyword gets its tool call from the Anthropic mock, a tool's
// result ends the turn, and a message without a keyword runs the default.
func TestAnthropicSteps(t *testing.T) {
	s, err := Start("ls -la /tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msg := func(content string) string {
		b, _ := json.Marshal(map[string]any{"tools": []any{map[string]any{"name": "Bash"}},
			"messages": []any{map[string]any{"role": "user", "content": json.RawMessage(content)}}})
		return string(b)
	}
	for _, c := range []struct{ name, content, want string }{
		{"prose", `"corral:prose say hi"`, `"text":"Here is a short answer`},
		{"shell", `[{"type":"text","text":"corral:shell list"}]`, `"name":"Bash"`},
		{"shell command", `"corral:shell"`, `ls -la /tmp`},
		{"edit", `"corral:edit /w/notes.txt"`, `/w/notes.txt`},
		{"question", `"corral:question"`, `"name":"AskUserQuestion"`},
		{"slow", `"corral:slow 9"`, `sleep 9`},
		{"default", `"please list the files"`, `ls -la /tmp`},
		{"result", `[{"type":"tool_result","tool_use_id":"x","content":"ok"}]`, `Done. The tool ran.`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := post(t, s.URL+"/v1/messages", msg(c.content))
			if !strings.Contains(got, c.want) {
				t.Fatalf("want %q in:\n%s", c.want, got)
			}
		})
	}
}

// The Gemini mock follows the same steps with Gemini CLI's tool names; the
// question step uses ask_user only when the CLI offers it.
func TestGeminiSteps(t *testing.T) {
	s, err := StartGemini("ls -la")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := s.URL + "/v1beta/models/gemini-mock:streamGenerateContent?alt=sse"
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
		{"result", `{"functionResponse":{"name":"run_shell_command","response":{}}}`, `Done. The tool ran.`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := post(t, url, req(c.part, "run_shell_command", "write_file", "ask_user")); !strings.Contains(got, c.want) {
				t.Fatalf("want %q in:\n%s", c.want, got)
			}
		})
	}
	if got := post(t, url, req(`{"text":"corral:question"}`, "run_shell_command")); strings.Contains(got, "ask_user") {
		t.Fatalf("ask_user called though not offered:\n%s", got)
	}
}
