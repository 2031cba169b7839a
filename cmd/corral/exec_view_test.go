package main

import (
	"strings"
	"testing"
)

// A job's readable output and its screen: streamed text pieces on one
// line, no line for events corral does not use, and the stream's own
// format whatever --agent said.
func TestExecReadableOutputAndScreen(t *testing.T) {
	e := newEnv(t)
	script := `echo '{"type":"init","session_id":"g-1","model":"m"}'
echo '{"type":"message","role":"user","content":"hi"}'
echo '{"type":"message","role":"assistant","content":"Hello ","delta":true}'
echo '{"type":"message","role":"assistant","content":"there.","delta":true}'
echo '{"type":"result","status":"success","stats":{"duration_ms":42,"tool_calls":1,"input_tokens":3,"output_tokens":4}}'`
	out := e.must("exec", "--name", "view", "--agent", "codex", "--", "sh", "-c", script)
	want := "warning: the stream is in gemini's format, not codex's: reading it as gemini's\nsession g-1\nassistant: Hello there.\ndone: success, 1 tool calls, 42 ms, 3 tokens in, 4 out\n"
	if out != want {
		t.Fatalf("readable output:\n%s\nwant:\n%s", out, want)
	}
	screen := e.must("screen", "view")
	if !strings.Contains(screen, "assistant: Hello there.\n") || strings.Contains(screen, "other") {
		t.Fatalf("screen:\n%s", screen)
	}
}
