package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proctest"
)

// A job's readable output and its screen: streamed text pieces on one
// line, no line for events corral does not use, and the stream's own
// format whatever --agent said.
func TestExecReadableOutputAndScreen(t *testing.T) {
	t.Parallel()
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

// A job whose agent retries the model API says so in corral ls until the
// run goes on; retries it prints on stderr only count too.
func TestExecRetryingJob(t *testing.T) {
	t.Parallel()
	proctest.Slow(t, "about 6 s")
	e := newEnv(t)
	for _, c := range []struct{ name, agent, script, message string }{
		{"codex-retry", "codex", `echo '{"type":"thread.started","thread_id":"t1"}'; echo '{"type":"error","message":"Reconnecting... 1/5 (stream disconnected)"}'; sleep 3; echo '{"type":"turn.completed"}'`,
			"retrying the model API: Reconnecting... 1/5 (stream disconnected)"},
		{"gemini-retry", "gemini", `echo '{"type":"init","session_id":"g1","model":"m"}'; echo 'Attempt 1 failed. Retrying with backoff... Error: fetch failed' >&2; sleep 3; echo '{"type":"result","status":"success","stats":{}}'`,
			"retrying the model API: Attempt 1 failed. Retrying with backoff... Error: fetch failed"},
	} {
		cmd := exec.Command(corralBin, "exec", "--name", c.name, "--agent", c.agent, "--", "sh", "-c", c.script)
		cmd.Env = e.vars
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var p *paneJSON
		if !proctest.WaitFor(10*time.Second, func() bool {
			var ps []paneJSON
			e.lookOrRun("/v1/panes", &ps, "ls", "--json")
			p = nil
			for i := range ps {
				if ps[i].Name == c.name {
					p = &ps[i]
				}
			}
			return p != nil && p.State == "working" && p.Kind == "retrying" && p.Message == c.message
		}) {
			t.Fatalf("%s: never retrying in corral ls: %+v", c.name, p)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p := e.pane(c.name); p.State != "done" {
			t.Fatalf("%s after the run: %+v", c.name, p)
		}
	}
}
