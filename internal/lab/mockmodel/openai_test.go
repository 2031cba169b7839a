package mockmodel

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseEvents posts body to url and returns the data of each event (and its
// "event:" name, when the stream names events).
func sseEvents(t *testing.T, url, body string) (names []string, data []map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			names = append(names, strings.TrimPrefix(line, "event: "))
		case line == "data: [DONE]":
			data = append(data, map[string]any{"done": true})
		case strings.HasPrefix(line, "data: "):
			var m map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m); err != nil {
				t.Fatalf("bad data line %q: %v", line, err)
			}
			data = append(data, m)
		}
	}
	return names, data
}

const codexTools = `[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"},"sandbox_permissions":{"type":"string"},"justification":{"type":"string"},"yield_time_ms":{"type":"number"}}}},
{"type":"function","name":"request_user_input","parameters":{"type":"object","properties":{"questions":{"type":"array"}}}},{"type":"web_search"}]`

func responsesBody(user string, tail string) string {
	input := `[{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/src/app</cwd>\n</environment_context>"}]},
{"type":"message","role":"user","content":[{"type":"input_text","text":` + mustJSON(user) + `}]}` + tail + `]`
	return `{"model":"m","stream":true,"tools":` + codexTools + `,"input":` + input + `}`
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestResponsesSteps(t *testing.T) {
	s, err := StartResponses("touch x")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := s.URL + "/v1/responses"
	tests := []struct {
		name, body string
		itemType   string
		want       string // in the item's arguments or text
	}{
		{"prose", responsesBody("corral:prose hi", ""), "message", "Hello."},
		{"shell asks to leave the sandbox", responsesBody("corral:shell go", ""), "function_call", `{"cmd":"touch x","justification":"Do you want to run touch x?","sandbox_permissions":"require_escalated"}`},
		{"slow", responsesBody("corral:slow go", ""), "function_call", `"cmd":"` + SlowCommand + `"`},
		{"edit through the shell tool", responsesBody("corral:edit go", ""), "function_call", "apply_patch <<'EOF'\\n*** Begin Patch\\n*** Add File: corral-mock.txt"},
		{"question", responsesBody("corral:question go", ""), "function_call", QuestionText},
		{"after a tool result", responsesBody("corral:shell go", `,{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok"}`), "message", "Done."},
		{"no tools is a side request", `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"corral:shell title"}]}]}`, "message", "Mock title"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names, data := sseEvents(t, url, tt.body)
			if len(names) < 4 || names[0] != "response.created" || names[len(names)-1] != "response.completed" {
				t.Fatalf("events %v: want response.created first and response.completed last", names)
			}
			var done map[string]any
			for i, n := range names {
				if data[i]["type"] != n {
					t.Errorf("event %q carries type %v", n, data[i]["type"])
				}
				if n == "response.output_item.done" {
					done, _ = data[i]["item"].(map[string]any)
				}
			}
			if done == nil || done["type"] != tt.itemType {
				t.Fatalf("output_item.done item %v, want a %s", done, tt.itemType)
			}
			got, _ := done["arguments"].(string)
			if got == "" {
				got = mustJSON(done)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("item %s does not hold %q", got, tt.want)
			}
		})
	}
}

const chatTools = `[{"type":"function","function":{"name":"run_shell_command","parameters":{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"},"is_background":{"type":"boolean"}}}}},
{"type":"function","function":{"name":"write_file","parameters":{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}}}}}]`

func chatBody(user, tail string) string {
	return `{"model":"m","stream":true,"tools":` + chatTools + `,"messages":[{"role":"system","content":"My operating system is: linux\\nI'm currently working in the directory: /src/app\\nHere is the folder structure"},{"role":"user","content":[{"type":"text","text":` + mustJSON(user) + `}]}` + tail + `]}`
}

func TestChatSteps(t *testing.T) {
	s, err := StartChat("touch x")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := s.URL + "/v1/chat/completions"
	tests := []struct {
		name, body string
		finish     string
		want       string // in the streamed text or tool call
	}{
		{"prose", chatBody("corral:prose hi", ""), "stop", "Hello."},
		{"shell", chatBody("corral:shell go", ""), "tool_calls", `run_shell_command {"command":"touch x","description":"Run touch x","is_background":false}`},
		{"edit writes in the working folder", chatBody("corral:edit go", ""), "tool_calls", `write_file {"content":"written by the mock model\n","file_path":"/src/app/corral-mock.txt"}`},
		{"question without a question tool is prose", chatBody("corral:question go", ""), "stop", QuestionText},
		{"after a tool result", chatBody("corral:shell go", `,{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"run_shell_command","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}`), "stop", "Done."},
		{"no tools is a side request", `{"model":"m","stream":true,"messages":[{"role":"user","content":"corral:shell"}]}`, "stop", "Mock title"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, data := sseEvents(t, url, tt.body)
			if len(data) < 3 || data[len(data)-1]["done"] != true {
				t.Fatalf("stream %v does not end with [DONE]", data)
			}
			var text, name, args, finish string
			for _, d := range data[:len(data)-1] {
				c := d["choices"].([]any)[0].(map[string]any)
				if f, ok := c["finish_reason"].(string); ok {
					finish = f
				}
				delta := c["delta"].(map[string]any)
				if s, ok := delta["content"].(string); ok {
					text += s
				}
				if calls, ok := delta["tool_calls"].([]any); ok {
					fn := calls[0].(map[string]any)["function"].(map[string]any)
					if n, ok := fn["name"].(string); ok {
						name += n
					}
					args += fn["arguments"].(string)
				}
			}
			if finish != tt.finish {
				t.Errorf("finish_reason %q, want %q", finish, tt.finish)
			}
			got := text
			if name != "" {
				got = name + " " + args
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("answer %q does not hold %q", got, tt.want)
			}
		})
	}
}

func TestOpenAINonStreaming(t *testing.T) {
	s, err := StartChat("ls")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Object != "chat.completion" || len(out.Choices) != 1 || out.Choices[0].Message.Content == "" {
		t.Fatalf("non-streamed answer %+v (%v)", out, err)
	}
	resp2, err := http.Post(s.URL+"/v1/nothing", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: status %d, want 404", resp2.StatusCode)
	}
}

// TestLatencyHoldsEachAnswer: a server with a latency answers no request
// before it has passed, and then answers it whole.
func TestLatencyHoldsEachAnswer(t *testing.T) {
	s, err := StartChat("touch x")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const latency = 300 * time.Millisecond
	s.SetLatency(latency)
	for i := 0; i < 2; i++ {
		start := time.Now()
		_, data := sseEvents(t, s.URL+"/v1/chat/completions", chatBody("corral:prose hi", ""))
		if took := time.Since(start); took < latency {
			t.Fatalf("answer %d came after %v, before the latency of %v", i, took, latency)
		}
		if len(data) < 3 || data[len(data)-1]["done"] != true {
			t.Fatalf("answer %d is not whole: %v", i, data)
		}
	}
}
