package headless

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecordedStreams reads the real CLIs' streams (testdata/headless,
// recorded by TestRecordRealStreams) into events and an outcome, as a job
// reads them: the recording is replayed by a real process.
func TestRecordedStreams(t *testing.T) {
	for _, c := range []struct {
		file, agent string
		types       string // the events, in order
		state       string // the outcome
		check       func(t *testing.T, evs []Event, out Outcome)
	}{
		{file: "codex/prose", agent: "codex", types: "init,warning,other,assistant,result", state: "done",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if u := out.Result.Usage; u == nil || u.Input != 10 || u.Output != 5 {
					t.Errorf("usage %+v", u)
				}
			}},
		{file: "codex/edit", agent: "codex", types: "init,warning,other,tool_use,tool_result,assistant,result", state: "done",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if e := evs[3]; e.Tool != "edit" || e.Input != "add /work/corral-mock.txt" || len(e.Files) != 1 {
					t.Errorf("edit %+v", e)
				}
				if e := evs[4]; e.IsError || e.Files[0] != "/work/corral-mock.txt" {
					t.Errorf("edit result %+v", e)
				}
			}},
		// codex exec rejects a request to leave the sandbox (stderr says so).
		{file: "codex/shell", agent: "codex", types: "init,warning,other,assistant,result", state: "done"},
		{file: "codex/shell_fails", agent: "codex", types: "init,warning,other,tool_use,tool_result,assistant,result", state: "done",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if e := evs[4]; !e.IsError || e.Subtype != "exit 3" || e.String() != "result (failed, exit 3): " {
					t.Errorf("failed command's result %+v", e)
				}
			}},
		// The model API refused the request (HTTP 400): the agent's own words.
		{file: "codex/refused", agent: "codex", types: "init,warning,other,result,result", state: "error",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if out.Reason != "the result is an error: turn.failed: the mock model refuses this request (corral-fail)" {
					t.Errorf("reason %q", out.Reason)
				}
			}},
		{file: "gemini/refused", agent: "gemini", types: "init,other,result", state: "error",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if out.Reason != "the result is an error: error: API Error: the mock model refuses this request (corral-fail)" {
					t.Errorf("reason %q", out.Reason)
				}
			}},
		{file: "qwen/refused", agent: "qwen", types: "init,assistant,result", state: "error",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if out.Reason != "the result is an error: api_error: [API Error: 400 the mock model refuses this request (corral-fail)]" {
					t.Errorf("reason %q", out.Reason)
				}
			}},
		// The model server was gone: Codex waits for the network for ever,
		// saying so on stdout; the recording ends where it was killed.
		{file: "codex/lost", agent: "codex", types: "init,warning,other,retry,retry,retry", state: "error",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if !strings.Contains(evs[3].Text, "waiting for network") || !strings.Contains(out.Reason, "without a result") {
					t.Errorf("retry %+v, reason %q", evs[3], out.Reason)
				}
			}},
		{file: "gemini/prose", agent: "gemini", types: "init,other,assistant,result", state: "done",
			check: func(t *testing.T, evs []Event, out Outcome) {
				r := out.Result
				if !evs[2].Delta || r.Duration == 0 || r.Usage == nil || r.Usage.Input != 20 {
					t.Errorf("delta %+v result %+v", evs[2], r)
				}
				if s := r.String(); !strings.HasPrefix(s, "done: success, ") || !strings.HasSuffix(s, " ms, 20 tokens in, 10 out") {
					t.Errorf("summary %q", s)
				}
			}},
		// Without --yolo, gemini -p has no shell tool: the call fails.
		{file: "gemini/shell", agent: "gemini", types: "init,other,tool_use,tool_result,assistant,result", state: "done",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if e := evs[3]; !e.IsError || !strings.Contains(e.Text, "not found") {
					t.Errorf("tool result %+v", e)
				}
				if out.Result.ToolCalls != 1 || !strings.Contains(out.Result.String(), "1 tool calls") {
					t.Errorf("result %+v", out.Result)
				}
			}},
		{file: "gemini/shell_yolo", agent: "gemini", types: "init,other,tool_use,tool_result,assistant,result", state: "done",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if e := evs[2]; e.Tool != "run_shell_command" || e.Input != "touch corral-shell.txt && exit 3" {
					t.Errorf("tool use %+v", e)
				}
				if e := evs[3]; !e.IsError || e.Subtype != "exit 3" {
					t.Errorf("a command that exited 3 is a failed result: %+v", e)
				}
			}},
		{file: "gemini/edit_yolo", agent: "gemini", types: "init,other,tool_use,tool_result,assistant,result", state: "done",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if e := evs[2]; e.Tool != "write_file" || e.Input != "corral-mock.txt" {
					t.Errorf("tool use %+v", e)
				}
			}},
		// Gemini CLI retries on stderr only; stdout stops after the prompt.
		{file: "gemini/lost", agent: "gemini", types: "init,other", state: "error"},
		{file: "qwen/prose", agent: "qwen", types: "init,assistant,result", state: "done"},
		{file: "qwen/shell", agent: "qwen", types: "init,assistant,result", state: "done"},
		{file: "qwen/shell_yolo", agent: "qwen", types: "init,tool_use,tool_result,assistant,result", state: "done",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if e := evs[2]; !e.IsError || e.Subtype != "exit 3" {
					t.Errorf("a command that exited 3 is a failed result: %+v", e)
				}
			}},
		{file: "qwen/edit_yolo", agent: "qwen", types: "init,tool_use,tool_result,assistant,result", state: "done",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if evs[1].Tool != "write_file" || out.Result.Turns != 2 {
					t.Errorf("tool %+v result %+v", evs[1], out.Result)
				}
			}},
		// Qwen Code reports a lost model server as a successful answer.
		{file: "qwen/lost", agent: "qwen", types: "init,assistant,result", state: "error",
			check: func(t *testing.T, evs []Event, out Outcome) {
				if out.Result.Subtype != "api_error" || !strings.Contains(out.Reason, "Connection error") {
					t.Errorf("result %+v reason %q", out.Result, out.Reason)
				}
			}},
		// Read with the wrong --agent, the stream says what it is.
		{file: "qwen/prose", agent: "gemini", types: "warning,init,assistant,result", state: "done"},
		{file: "codex/prose", agent: "claude", types: "warning,init,warning,other,assistant,result", state: "done"},
		{file: "gemini/prose", agent: "auto", types: "warning,init,other,assistant,result", state: "done"},
	} {
		t.Run(c.file+"_as_"+c.agent, func(t *testing.T) {
			path, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "headless", c.file+".jsonl"))
			if _, err := os.Stat(path); err != nil {
				t.Fatal(err)
			}
			var evs []Event
			out, err := Run(context.Background(), Options{Agent: c.agent, Argv: []string{"cat", path}, Timeout: 20 * time.Second,
				OnEvent: func(e Event) { evs = append(evs, e) }})
			if err != nil {
				t.Fatal(err)
			}
			if got := types(evs); got != c.types || out.State != c.state {
				t.Fatalf("events %s (want %s), outcome %+v (want %s)", got, c.types, out, c.state)
			}
			if c.check != nil {
				c.check(t, evs, out)
			}
		})
	}
}

// TestStderrRetries: Gemini CLI's retries, on stderr only, are events.
func TestStderrRetries(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "headless", "gemini", "lost.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	n, want := 0, strings.Count(string(data), "\nAttempt ")
	for _, l := range strings.Split(string(data), "\n") {
		if e, ok := StderrEvent(l); ok {
			n++
			if e.Type != EventRetry || !strings.HasPrefix(e.Text, "Attempt") {
				t.Errorf("%+v", e)
			}
		}
	}
	if n != want || n == 0 {
		t.Fatalf("%d retries, want %d", n, want)
	}
}

// TestRecordedACP replays the agents' side of real ACP sessions (Gemini
// CLI --experimental-acp, Qwen Code --acp): their permission requests have
// no rawInput, so the tool is the call's kind and the input its title or
// the file it edits, and a policy's input rule matches them.
func TestRecordedACP(t *testing.T) {
	// The recorded command is `touch corral-shell.txt && exit 3`: each
	// simple command must be allowed, and && agreed to.
	const policy = "[[rule]]\ntool = \"execute\"\ninput = '^(touch [^ ]+|exit [0-9]+)$'\noperators = [\"&&\"]\ndecision = \"allow\"\n"
	for _, c := range []struct {
		file, tool, input string
		allow             bool
	}{
		{"gemini/acp_shell_allowed", "execute", "touch corral-shell.txt && exit 3", true},
		{"gemini/acp_edit_denied", "edit", "/work/corral-mock.txt", false},
		{"qwen/acp_shell_allowed", "execute", "touch corral-shell.txt && exit 3", true},
		{"qwen/acp_edit_denied", "edit", "/work/corral-mock.txt", false},
	} {
		t.Run(c.file, func(t *testing.T) {
			pol, err := ParsePolicy("test", []byte(policy))
			if err != nil {
				t.Fatal(err)
			}
			path, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "headless", c.file+".jsonl"))
			var decided []Event
			var text strings.Builder
			out, err := Run(context.Background(), Options{Agent: "acp", Prompt: "corral:shell", Policy: pol,
				Argv: []string{"cat", path}, Timeout: 20 * time.Second,
				OnEvent: func(e Event) {
					switch e.Type {
					case EventDecision:
						decided = append(decided, e)
					case EventText:
						text.WriteString(e.Text)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			if out.State != "done" || len(decided) != 1 || decided[0].Tool != c.tool || decided[0].Input != c.input ||
				decided[0].Allow != c.allow || !strings.Contains(text.String(), "Done. The tool ran.") {
				t.Fatalf("outcome %+v, decisions %+v, text %q", out, decided, text.String())
			}
			// Gemini CLI tells the turn's tokens in the prompt's answer.
			if strings.HasPrefix(c.file, "gemini/") && (out.Result.Usage == nil || out.Result.Usage.Input != 20) {
				t.Fatalf("outcome %+v, decisions %+v, text %q", out, decided, text.String())
			}
		})
	}
}

// TestParseLines covers what the recordings do not: items and fields the
// agents' own code shows they write.
func TestParseLines(t *testing.T) {
	for _, c := range []struct {
		agent, line string
		want        Event
	}{
		{"codex", `{"type":"item.started","item":{"id":"i","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"query":"x"},"status":"in_progress"}}`,
			Event{Type: EventToolUse, Tool: "mcp:docs/search", Input: `{"query":"x"}`}},
		{"codex", `{"type":"item.completed","item":{"id":"i","type":"mcp_tool_call","server":"docs","tool":"search","error":{"message":"no server"},"status":"failed"}}`,
			Event{Type: EventToolResult, Tool: "mcp:docs/search", Text: "no server", IsError: true}},
		{"codex", `{"type":"item.started","item":{"id":"i","type":"web_search","query":"go 1.26"}}`,
			Event{Type: EventToolUse, Tool: "web_search", Input: "go 1.26"}},
		{"codex", `{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":"a.go","kind":"update"}],"status":"failed"}}`,
			Event{Type: EventToolResult, Tool: "edit", Text: "failed: update a.go", IsError: true, Files: []string{"a.go"}}},
		{"codex", `{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}`,
			Event{Type: EventRetry, Subtype: "reconnecting", Text: "Reconnecting... 1/5 (stream disconnected before completion)"}},
		{"gemini", `{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session turns"},"stats":{"duration_ms":5,"tool_calls":2}}`,
			Event{Type: EventResult, Subtype: "error", IsError: true, Text: "Reached max session turns", Duration: 5, ToolCalls: 2}},
		{"gemini", `{"type":"tool_result","tool_id":"t","status":"error","output":"","error":{"type":"x","message":"denied"}}`,
			Event{Type: EventToolResult, Subtype: "error", IsError: true, Text: "denied"}},
		{"gemini", `{"type":"error","severity":"warning","message":"Loop detected"}`,
			Event{Type: EventWarning, Subtype: "warning", Text: "Loop detected"}},
		// A result that does not say it succeeded did not.
		{"qwen", `{"type":"result","result":"ok"}`,
			Event{Type: EventResult, Subtype: "incomplete", IsError: true, Text: "ok"}},
		{"claude", `{"type":"result","subtype":"success","is_error":false,"result":"API Error: 529 overloaded"}`,
			Event{Type: EventResult, Subtype: "api_error", IsError: true, Text: "API Error: 529 overloaded"}},
		{"claude", `{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"error":"overloaded"}`,
			Event{Type: EventRetry, Subtype: "api_retry", Text: "attempt 2/10 overloaded"}},
	} {
		got := Parse(c.agent, []byte(c.line))
		if got.String() != c.want.String() || got.Type != c.want.Type || got.IsError != c.want.IsError || got.Subtype != c.want.Subtype ||
			got.Duration != c.want.Duration || got.ToolCalls != c.want.ToolCalls || strings.Join(got.Files, ",") != strings.Join(c.want.Files, ",") {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.agent, c.line, got, c.want)
		}
	}
}

// TestRecordedQwenRelay replays Qwen Code's side of its permission relay
// (Claude Code's control protocol, after an initialize request).
func TestRecordedQwenRelay(t *testing.T) {
	// The recorded command is `touch corral-shell.txt && exit 3`: each
	// simple command must be allowed, and && agreed to.
	const policy = "[[rule]]\ntool = \"run_shell_command\"\ninput = '^(touch [^ ]+|exit [0-9]+)$'\noperators = [\"&&\"]\ndecision = \"allow\"\n"
	for _, c := range []struct {
		file, tool, input string
		allow             bool
	}{
		{"qwen/relay_shell_allowed", "run_shell_command", "touch corral-shell.txt && exit 3", true},
		{"qwen/relay_edit_denied", "write_file", "/work/corral-mock.txt", false},
	} {
		t.Run(c.file, func(t *testing.T) {
			pol, _ := ParsePolicy("test", []byte(policy))
			path, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "headless", c.file+".jsonl"))
			var decided []Event
			out, err := Run(context.Background(), Options{Agent: "qwen", Prompt: "corral:shell", Policy: pol,
				Argv: []string{"cat", path}, Timeout: 20 * time.Second,
				OnEvent: func(e Event) {
					if e.Type == EventDecision {
						decided = append(decided, e)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			if out.State != "done" || len(decided) != 1 || decided[0].Tool != c.tool || decided[0].Input != c.input || decided[0].Allow != c.allow {
				t.Fatalf("outcome %+v, decisions %+v", out, decided)
			}
		})
	}
}

func TestQwenRelayArgv(t *testing.T) {
	argv, prompt, ok := QwenRelay([]string{"qwen", "-p", "fix it", "--output-format", "stream-json"}, "")
	if !ok || prompt != "fix it" || strings.Join(argv, " ") != "qwen --output-format stream-json --input-format stream-json --channel SDK" {
		t.Fatalf("%q %q %v", argv, prompt, ok)
	}
	open := string(RelayOpening("qwen", "fix it"))
	if !strings.HasPrefix(open, `{"request":{"hooks":null,"subtype":"initialize"}`) || !strings.Contains(open, "\n{\"message\"") {
		t.Fatalf("opening %q", open)
	}
	if _, _, ok := QwenRelay([]string{"qwen", "--output-format", "stream-json"}, ""); ok {
		t.Fatal("no prompt, no relay")
	}
}
