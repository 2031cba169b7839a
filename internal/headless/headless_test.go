package headless

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	rulesdata "github.com/corral-dev/corral/agents"

	"github.com/corral-dev/corral/internal/osproc"
	"github.com/corral-dev/corral/internal/proctest"
	"github.com/corral-dev/corral/internal/rules"
	"golang.org/x/sys/unix"
)

const (
	initLine   = `{"type":"system","subtype":"init","session_id":"sess-42","model":"m","tools":["Bash"]}`
	textLine   = `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Hello."}]}}`
	toolLine   = `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}`
	resultLine = `{"type":"result","subtype":"success","is_error":false,"duration_ms":1200,"num_turns":2,"total_cost_usd":0.0123,"session_id":"sess-42","result":"Hello."}`
)

// The test binary doubles as a fake headless agent.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "jobhold" { // the job holder of held_test.go
		os.Exit(HoldMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	if os.Getenv("FAKE_HELD") != "" {
		os.Exit(fakeHeld())
	}
	if mode := os.Getenv("FAKE_STREAM"); mode != "" {
		os.Exit(fake(mode))
	}
	os.Exit(m.Run())
}

func fake(mode string) int {
	w := os.Stdout
	switch mode {
	case "good":
		// Lines split across writes, and a garbage line in between.
		fmt.Fprint(w, initLine[:20])
		time.Sleep(20 * time.Millisecond)
		fmt.Fprintln(w, initLine[20:])
		fmt.Fprintln(w, "Warning: not JSON at all")
		fmt.Fprintln(w, textLine)
		fmt.Fprintln(w, toolLine)
		fmt.Fprintln(os.Stderr, "some stderr noise")
		fmt.Fprintln(w, resultLine)
	case "longline":
		fmt.Fprintln(w, initLine)
		fmt.Fprintf(w, `{"type":"assistant","message":{"content":[{"type":"text","text":"%s"}]}}`+"\n", strings.Repeat("x", 3<<20))
		fmt.Fprintln(w, resultLine)
	case "noresult":
		fmt.Fprintln(w, initLine)
		fmt.Fprint(w, `{"type":"assistant","message":{"content":[{"type":"te`) // dies mid-line
		return 7
	case "noresult0":
		fmt.Fprintln(w, initLine)
	case "iserror":
		fmt.Fprintln(w, initLine)
		fmt.Fprintln(w, `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":9}`)
	case "hang":
		fmt.Fprintln(w, initLine)
		// A child in the same group, to check the group is killed.
		pid, _ := syscall.ForkExec("/bin/sleep", []string{"sleep", "300"}, &syscall.ProcAttr{})
		fmt.Fprintf(os.Stderr, "child %d\n", pid)
		time.Sleep(time.Hour)
	case "quiet-then-done":
		fmt.Fprintln(w, initLine)
		time.Sleep(400 * time.Millisecond)
		fmt.Fprintln(w, resultLine)
	case "relay":
		// The control protocol as Claude Code speaks it with
		// --permission-prompt-tool stdio.
		in := NewLines(os.Stdin)
		first, _, err := in.Next()
		if err != nil || !strings.Contains(string(first), `"type":"user"`) {
			fmt.Fprintf(os.Stderr, "no prompt: %q %v\n", first, err)
			return 9
		}
		fmt.Fprintln(w, initLine)
		fmt.Fprintln(w, `{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm -rf build"}}}`)
		reply, _, _ := in.Next()
		behavior := "deny"
		if strings.Contains(string(reply), `"behavior":"allow"`) && strings.Contains(string(reply), `"updatedInput":{"command":"rm -rf build"}`) {
			behavior = "allow"
		}
		fmt.Fprintf(w, `{"type":"assistant","message":{"content":[{"type":"text","text":"%s"}]}}`+"\n", behavior)
		fmt.Fprintln(w, resultLine)
		// Like Claude Code, wait for stdin to close before exiting.
		for {
			if _, _, err := in.Next(); err != nil {
				return 0
			}
		}
	case "blockbuffer":
		// Like many CLIs: line-buffered on a terminal, block-buffered on a
		// pipe. It waits for the reader to see its first line before ending.
		var out io.Writer = w
		var flush func()
		if _, err := unix.IoctlGetTermios(int(w.Fd()), osproc.GetTermios); err != nil {
			bw := bufio.NewWriterSize(w, 4096)
			out, flush = bw, func() { bw.Flush() }
		} else {
			flush = func() {}
		}
		fmt.Fprintln(out, "\x1b[1m"+initLine+"\x1b[0m") // colours a pty-lite reader strips
		wait := 10 * time.Second
		if d, err := time.ParseDuration(os.Getenv("FAKE_WAIT")); err == nil {
			wait = d
		}
		if seen := os.Getenv("SEEN_FILE"); seen != "" {
			proctest.WaitFor(wait, func() bool { _, err := os.Stat(seen); return err == nil })
		}
		fmt.Fprintln(out, resultLine)
		flush()
	case "prompt-on-pty":
		fmt.Fprintln(w, initLine)
		fmt.Fprintln(w, strings.Repeat("─", 40))
		fmt.Fprintln(w, " Do you want to proceed?")
		fmt.Fprintln(w, " ❯ 1. Yes")
		fmt.Fprintln(w, "   2. No")
		fmt.Fprintln(w, " Esc to cancel · Tab to amend")
		time.Sleep(time.Hour)
	case "deaf":
		// Never reads stdin, and asks for things corral answers on stdin
		// until the pipe is full.
		fmt.Fprintln(w, initLine)
		for i := 0; i < 5000; i++ {
			fmt.Fprintf(w, `{"type":"control_request","request_id":"c%d","request":{"subtype":"hook_callback"}}`+"\n", i)
		}
		fmt.Fprintln(w, `{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}`)
		time.Sleep(time.Hour)
	case "acp":
		return fakeACP(w)
	case "codex":
		for _, l := range []string{`{"type":"thread.started","thread_id":"th-1"}`, `{"type":"turn.started"}`,
			`{"type":"item.started","item":{"id":"i1","type":"command_execution","command":"ls -la"}}`,
			`{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"ls -la","aggregated_output":"a\nb"}}`,
			`{"type":"item.completed","item":{"id":"i2","type":"agent_message","text":"Listed."}}`,
			`{"type":"turn.completed","usage":{"input_tokens":1}}`} {
			fmt.Fprintln(w, l)
		}
	}
	return 0
}

func run(t *testing.T, mode string, o Options) (Outcome, []Event) {
	t.Helper()
	var evs []Event
	o.Argv = []string{os.Args[0]}
	o.Env = append(o.Env, "FAKE_STREAM="+mode)
	if o.Agent == "" {
		o.Agent = "claude"
	}
	o.OnEvent = func(e Event) { evs = append(evs, e) }
	out, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return out, evs
}

func types(evs []Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, string(e.Type))
	}
	return strings.Join(s, ",")
}

func TestGoodRun(t *testing.T) {
	t.Parallel()
	out, evs := run(t, "good", Options{})
	if got := types(evs); got != "init,diagnostic,assistant,tool_use,result" {
		t.Fatalf("events %s", got)
	}
	if out.State != "done" || out.ExitCode != 0 || out.SessionID != "sess-42" || out.Diagnostics != 1 ||
		!strings.Contains(out.Stderr, "some stderr noise") || out.Result.Turns != 2 || out.Result.CostUSD != 0.0123 {
		t.Fatalf("outcome %+v", out)
	}
	if evs[3].Tool != "Bash" || evs[3].Input != "ls" {
		t.Fatalf("tool use %+v", evs[3])
	}
}

func TestMegabyteLine(t *testing.T) {
	t.Parallel()
	out, evs := run(t, "longline", Options{})
	if out.State != "done" || len(evs) != 3 || len(evs[1].Text) != 3<<20 {
		t.Fatalf("outcome %+v, %d events", out, len(evs))
	}
}

func TestMissingResult(t *testing.T) {
	t.Parallel()
	out, evs := run(t, "noresult", Options{})
	if out.State != "error" || out.ExitCode != 7 || out.Reason != "exited without a result event (exit status 7)" {
		t.Fatalf("outcome %+v", out)
	}
	// The torn last line is kept as a diagnostic.
	if got := types(evs); got != "init,diagnostic" {
		t.Fatalf("events %s", got)
	}
}

// A run that ends without a result fails even when the agent exits 0.
func TestMissingResultExitZero(t *testing.T) {
	t.Parallel()
	out, _ := run(t, "noresult0", Options{})
	if out.State != "error" || out.ExitCode != ExitFailed || out.Reason != "exited without a result event (exit status 0)" {
		t.Fatalf("outcome %+v", out)
	}
}

func TestErrorResult(t *testing.T) {
	t.Parallel()
	out, _ := run(t, "iserror", Options{})
	if out.State != "error" || out.Reason != "the result is an error: error_max_turns" || out.ExitCode != 1 {
		t.Fatalf("outcome %+v", out)
	}
}

func TestTimeoutKillsTheGroup(t *testing.T) {
	t.Parallel()
	start := time.Now()
	out, _ := run(t, "hang", Options{Timeout: 300 * time.Millisecond})
	if out.State != "error" || out.ExitCode != ExitTimeout || time.Since(start) > 10*time.Second {
		t.Fatalf("outcome %+v after %v", out, time.Since(start))
	}
	var child int
	fmt.Sscanf(out.Stderr, "child %d", &child)
	if child == 0 {
		t.Fatalf("no child reported: %q", out.Stderr)
	}
	if !proctest.WaitFor(5*time.Second, func() bool { return !proctest.Alive(child) }) {
		t.Fatalf("child %d outlived the run", child)
	}
}

func TestStall(t *testing.T) {
	t.Parallel()
	var stalls int
	out, evs := run(t, "quiet-then-done", Options{Stall: 100 * time.Millisecond, OnStall: func(time.Duration) { stalls++ }})
	if out.State != "done" || stalls == 0 {
		t.Fatalf("outcome %+v, stalls %d", out, stalls)
	}
	// Each stall is an event of the run too, in its place in the stream
	// (one may come before the first line, on a slow start).
	got := types(evs)
	if strings.Count(got, "stall") != stalls || !strings.HasSuffix(got, "init,stall,result") {
		t.Fatalf("events %s, stalls %d", got, stalls)
	}
	if st := evs[len(evs)-2]; st.Text != "no output for 100ms" || st.Duration != 100 {
		t.Fatalf("stall event %+v", st)
	}
}

// An agent that does not read its stdin must not stop the run from
// seeing its timeout, its cancellation or a permission answer.
func TestDeafAgentCannotHoldTheRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		cancel  bool
		held    bool // under a job holder, which must not be held either
	}{{"timeout", 300 * time.Millisecond, false, false}, {"cancel", 0, true, false},
		{"timeout held", 300 * time.Millisecond, false, true}, {"cancel held", 0, true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			asked := make(chan func(bool, string), 1)
			o := Options{Agent: "claude", Argv: []string{os.Args[0]}, Env: []string{"FAKE_STREAM=deaf"}, Prompt: "go",
				Timeout: tc.timeout, OnPermission: func(_ Event, answer func(bool, string)) { asked <- answer }}
			if tc.held {
				o.Spool, o.Hold = t.TempDir(), []string{os.Args[0], "jobhold"}
				o.OnStart = endAtCleanup(t, o.Spool)
			}
			ended := make(chan Outcome, 1)
			start := time.Now()
			go func() {
				out, _ := Run(ctx, o)
				ended <- out
			}()
			var out Outcome
			select {
			case answer := <-asked:
				answered := make(chan struct{})
				go func() { answer(true, "test"); close(answered) }()
				select {
				case <-answered:
				case <-time.After(2 * time.Second):
					t.Fatalf("answering a permission request waited on the agent's full stdin")
				}
				if tc.cancel {
					cancel()
				}
				select {
				case out = <-ended:
				case <-time.After(10 * time.Second):
					t.Fatalf("the run did not end within 10s")
				}
			case out = <-ended: // the timeout came first
			case <-time.After(10 * time.Second):
				t.Fatalf("the run neither asked nor ended: stuck writing to the agent's stdin")
			}
			{
				if out.State != "error" || out.ExitCode == 0 || tc.cancel && !strings.Contains(out.Reason, "cancelled") ||
					!tc.cancel && out.ExitCode != ExitTimeout {
					t.Fatalf("outcome %+v", out)
				}
				t.Logf("ended in %v: %s", time.Since(start), out.Reason)
			}
		})
	}
}

func TestCancelKillsTheGroup(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	out, err := Run(ctx, Options{Agent: "claude", Argv: []string{os.Args[0]}, Env: []string{"FAKE_STREAM=hang"}})
	if err != nil || out.State != "error" || !strings.Contains(out.Reason, "cancelled") {
		t.Fatalf("outcome %+v %v", out, err)
	}
}

func TestCodexStream(t *testing.T) {
	t.Parallel()
	out, evs := run(t, "codex", Options{Agent: "codex"})
	if out.State != "done" || out.SessionID != "th-1" || types(evs) != "init,other,tool_use,tool_result,assistant,result" {
		t.Fatalf("outcome %+v events %s", out, types(evs))
	}
}

func TestParseGemini(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]EventType{
		`{"type":"init","session_id":"g1","model":"x"}`:                       EventInit,
		`{"type":"message","role":"assistant","content":"hi","delta":true}`:   EventText,
		`{"type":"tool_use","tool_name":"run_shell_command","parameters":{}}`: EventToolUse,
		`{"type":"result","status":"success","stats":{}}`:                     EventResult,
		`not json`: EventDiagnostic,
	} {
		if got := Parse("gemini", []byte(line)).Type; got != want {
			t.Errorf("%s: %s, want %s", line, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	seeds := []string{initLine, textLine, toolLine, resultLine, `{"type":"item.completed","item":{}}`, "garbage"}
	// The first lines of every recording of the real CLIs.
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "headless", "*", "*.jsonl"))
	for _, name := range files {
		data, _ := os.ReadFile(name)
		for i, l := range strings.Split(string(data), "\n") {
			if i < 8 && l != "" {
				seeds = append(seeds, l)
			}
		}
	}
	for _, l := range seeds {
		for _, agent := range []string{"claude", "codex", "gemini", "qwen", "auto"} {
			f.Add(agent, l)
		}
	}
	f.Fuzz(func(t *testing.T, agent, line string) {
		p := NewParser(agent)
		evs := append(p.Parse([]byte(line)), Parse(agent, []byte(line)))
		for _, e := range evs {
			if len(e.Line) > clipLine+4 || len(e.Text) > clipLine+4 && e.Type != EventText && e.Type != EventResult {
				t.Fatalf("unbounded event %+v", e)
			}
		}
	})
}

// In pty-lite mode a program that block-buffers a pipe writes each line as
// it goes: the first line reaches corral while the program still runs.
func TestPTYLiteLineBuffered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode string
		// timeout ends the run on a pipe, whose program waits for good;
		// on pty-lite the program ends once its first line was seen.
		timeout time.Duration
	}{
		{"pty-lite", 10 * time.Second},
		{"pipe", time.Second},
	} {
		mode := tc.mode
		t.Run(mode, func(t *testing.T) {
			seen := t.TempDir() + "/seen"
			early := false
			out, err := Run(context.Background(), Options{Agent: "claude", Argv: []string{os.Args[0]}, Mode: mode, Timeout: tc.timeout,
				Env: []string{"FAKE_STREAM=blockbuffer", "SEEN_FILE=" + seen},
				OnEvent: func(e Event) {
					if e.Type == EventInit {
						// Seen while the program waits for us: it was not held in a buffer.
						early = true
						os.WriteFile(seen, nil, 0o600)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			switch mode {
			case "pty-lite":
				if !early || out.State != "done" || out.SessionID != "sess-42" {
					t.Fatalf("outcome %+v", out)
				}
			case "pipe":
				// The same program on a pipe holds its first line until it
				// ends: here it waits for us until the timeout kills it.
				if out.ExitCode != ExitTimeout {
					t.Fatalf("outcome %+v", out)
				}
			}
		})
	}
}

// A prompt on a pty-lite stream cannot be answered: the run fails at once.
func TestPTYLitePromptFailsFast(t *testing.T) {
	t.Parallel()
	set, errs := rules.Loader{Embedded: rulesdata.RulesView{Agents: os.DirFS("../../agents")}}.Load(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	m, _ := set.ByName("claude-code")
	start := time.Now()
	out, _ := run(t, "prompt-on-pty", Options{Mode: "pty-lite", PromptRules: m, Timeout: 30 * time.Second})
	if out.State != "error" || !strings.Contains(out.Reason, "asking for input (permission: Do you want to proceed?)") || time.Since(start) > 15*time.Second {
		t.Fatalf("outcome %+v after %v", out, time.Since(start))
	}
}

// BenchmarkFirstEvent measures the delay from start to the first event
// with a program that block-buffers its stdout when it is a pipe, in pipe
// and pty-lite modes (the program ends 300 ms after its first line).
func BenchmarkFirstEvent(b *testing.B) {
	for _, mode := range []string{"pipe", "pty-lite"} {
		b.Run(mode, func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				var first time.Duration
				_, err := Run(context.Background(), Options{Agent: "claude", Argv: []string{os.Args[0]}, Mode: mode,
					Env: []string{"FAKE_STREAM=blockbuffer", "SEEN_FILE=/nonexistent/never", "FAKE_WAIT=300ms"},
					OnEvent: func(e Event) {
						if first == 0 {
							first = time.Since(start)
						}
					}})
				if err != nil {
					b.Fatal(err)
				}
				total += first
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "first-event-ms")
		})
	}
}

// fakeACP is an agent speaking ACP v1 on stdin/stdout.
func fakeACP(w io.Writer) int {
	in := NewLines(os.Stdin)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintln(w, string(b))
	}
	var promptID json.RawMessage
	for {
		line, _, err := in.Next()
		if err != nil {
			return 0
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		json.Unmarshal(line, &m)
		switch {
		case m.Method == "initialize":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"protocolVersion": 1}})
		case m.Method == "session/new":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"sessionId": "acp-1"}})
		case m.Method == "session/prompt":
			promptID = m.ID
			send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "acp-1",
				"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "Working on it."}}}})
			send(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "fs/read_text_file", "params": map[string]any{"path": "/etc/passwd"}})
			send(map[string]any{"jsonrpc": "2.0", "id": 77, "method": "session/request_permission", "params": map[string]any{
				"sessionId": "acp-1", "toolCall": map[string]any{"toolCallId": "c1", "title": "Run rm -rf build", "rawInput": map[string]any{"command": "rm -rf build"}},
				"options": []any{map[string]any{"optionId": "ok", "name": "Allow", "kind": "allow_once"}, map[string]any{"optionId": "nope", "name": "Reject", "kind": "reject_once"}}}})
		case string(m.ID) == "5":
			if !strings.Contains(string(m.Error), "-32601") {
				fmt.Fprintf(os.Stderr, "fs request answered %s\n", line)
				return 8
			}
		case string(m.ID) == "77":
			text := "denied"
			if strings.Contains(string(m.Result), `"optionId":"ok"`) {
				text = "allowed"
			}
			send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "acp-1",
				"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text}}}})
			send(map[string]any{"jsonrpc": "2.0", "id": promptID, "result": map[string]any{"stopReason": "end_turn"}})
		}
	}
}

func TestACP(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		var texts []string
		var asked Event
		out, err := Run(context.Background(), Options{Agent: "acp", Argv: []string{os.Args[0]}, Env: []string{"FAKE_STREAM=acp"},
			Prompt: "clean up", Timeout: 20 * time.Second,
			OnEvent: func(e Event) {
				if e.Type == EventText {
					texts = append(texts, e.Text)
				}
			},
			OnPermission: func(req Event, answer func(bool, string)) {
				asked = req
				answer(allow, "test")
			}})
		if err != nil {
			t.Fatal(err)
		}
		want := "denied"
		if allow {
			want = "allowed"
		}
		if out.State != "done" || out.SessionID != "acp-1" || asked.Tool != "Run rm -rf build" || asked.Input != "rm -rf build" ||
			strings.Join(texts, "|") != "Working on it.|"+want {
			t.Fatalf("allow=%v: outcome %+v, asked %+v, texts %q", allow, out, asked, texts)
		}
	}
}
